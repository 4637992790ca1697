/*
 * The event loop: CPUs, run queues, SMT speed, wakeups, metrics.
 *
 * Work is counted in milli-ns: a CPU at full speed does 1000 units per
 * virtual ns, a CPU whose SMT sibling also runs does smt_permille. When a
 * core's number of running CPUs changes, every running CPU of that core has
 * its progress accounted at the old rate and its burst end rescheduled at
 * the new one (the stale event is recognised by its generation).
 *
 * Core scheduling: place_run_begin may refuse a task (-EBUSY: an SMT
 * sibling runs another cookie). The worker then tries the next task of its
 * queue, and when none is admitted it sits forced idle with its queue kept;
 * it retries when libplace names it (place_run_end_retry: the last task of
 * the other cookie left its core; before the CPU that ended picks its own
 * next task, so that a core does not stay with one cookie while the other
 * waits) or at its next event (a task queued there). Independently of
 * libplace, the engine counts co-runs of different cookies on one core.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

#define FULL_SPEED 1000u

static uint64_t host_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(struct sim *s, int err)
{
	if (!s->error)
		s->error = err < 0 ? err : -EIO;
}

/* ---- idle accounting ---------------------------------------------------- */

static void set_idle(struct sim *s, int c, bool idle)
{
	struct sim_cpu *cpu = &s->cpu[c];
	int core = s->m->core[c], llc = s->m->llc[c];
	int delta = idle ? 1 : -1;

	if (cpu->idle == idle)
		return;
	cpu->idle = idle;
	s->idle_cpus += delta;
	s->llc_idle_cpus[llc] += delta;
	/* A core is idle when none of its CPUs is busy. */
	if (idle && --s->core_busy[core] == 0)
		s->llc_idle_cores[llc]++;
	else if (!idle && s->core_busy[core]++ == 0)
		s->llc_idle_cores[llc]--;
}

/* Idle: nothing running and nothing queued. A worker still waking up whose
 * queued task was stolen meanwhile is idle: a task sent there waits behind
 * nobody (it starts when the wakeup completes). */
static void update_idle(struct sim *s, int c)
{
	const struct sim_cpu *cpu = &s->cpu[c];

	set_idle(s, c, cpu->cur < 0 && cpu->qlen == 0 && !cpu->kicked);
}

/* ---- progress and SMT speed --------------------------------------------- */

static void account(struct sim *s, int c)
{
	struct sim_cpu *cpu = &s->cpu[c];
	struct sim_task *t;
	uint64_t dt = s->now - cpu->since, done;

	cpu->since = s->now;
	if (cpu->cur < 0)
		return;
	t = &s->task[cpu->cur];
	done = dt * cpu->rate;
	t->work = done >= t->work ? 0 : t->work - done;
	t->run_ns += dt;
	if (cpu->rate < FULL_SPEED)
		t->smt_ns += dt;
	s->busy_ns += dt;
	s->node_busy_ns[s->m->node[c]] += dt;
}

static void schedule_end(struct sim *s, int c)
{
	struct sim_cpu *cpu = &s->cpu[c];
	const struct sim_task *t = &s->task[cpu->cur];
	uint64_t dt = (t->work + cpu->rate - 1) / cpu->rate;
	int err;

	cpu->gen++;
	cpu->burst_end = s->now + dt;
	err = sim_heap_push(&s->heap, cpu->burst_end, SIM_EV_BURST_END, c, cpu->gen);
	if (err < 0)
		fail(s, err);
}

/* Recompute the speed of the running CPUs of core, after a change. */
static void rerate_core(struct sim *s, int core)
{
	const struct sim_machine *m = s->m;
	unsigned rate = s->core_running[core] > 1 ? s->prm->smt_permille : FULL_SPEED;

	for (int i = m->core_start[core]; i < m->core_start[core + 1]; i++) {
		int c = m->core_cpus[i];
		struct sim_cpu *cpu = &s->cpu[c];

		if (cpu->cur < 0 || cpu->rate == rate)
			continue;
		account(s, c);
		cpu->rate = rate;
		schedule_end(s, c);
	}
}

/* ---- the cookie oracle ---------------------------------------------------- */

/* Whether the running CPUs of core carry more than one cookie, from the
 * engine's own record of what it started (not libplace's state). */
static bool core_mixed(const struct sim *s, int core)
{
	const struct sim_machine *m = s->m;
	bool seen = false;
	uint64_t first = 0;

	for (int i = m->core_start[core]; i < m->core_start[core + 1]; i++) {
		const struct sim_cpu *cpu = &s->cpu[m->core_cpus[i]];

		if (cpu->cur < 0)
			continue;
		if (seen && cpu->cookie != first)
			return true;
		seen = true;
		first = cpu->cookie;
	}
	return false;
}

/* After a start or an end on core: the co-run time of different cookies
 * accumulates while the core is mixed, whatever the policy did. */
static void check_core(struct sim *s, int core)
{
	bool mixed = core_mixed(s, core);
	uint64_t *since = &s->mixed_since[core];

	if (mixed && *since == UINT64_MAX) {
		*since = s->now;
	} else if (!mixed && *since != UINT64_MAX) {
		s->res.violation_ns += s->now - *since;
		*since = UINT64_MAX;
	}
}

/* ---- run queues ----------------------------------------------------------- */

static void rq_push(struct sim *s, int c, struct sim_task *t)
{
	struct sim_cpu *cpu = &s->cpu[c];

	t->next = -1;
	t->cpu = c;
	t->state = SIM_QUEUED;
	if (cpu->qtail >= 0)
		s->task[cpu->qtail].next = t->id;
	else
		cpu->qhead = t->id;
	cpu->qtail = t->id;
	cpu->qlen++;
}

/* Take t, which follows prev (-1: t is the head), out of c's queue. */
static void rq_unlink(struct sim *s, int c, int prev, struct sim_task *t)
{
	struct sim_cpu *cpu = &s->cpu[c];

	if (prev < 0)
		cpu->qhead = t->next;
	else
		s->task[prev].next = t->next;
	if (cpu->qtail == t->id)
		cpu->qtail = prev;
	cpu->qlen--;
	t->next = -1;
}

static struct sim_task *rq_pop(struct sim *s, int c)
{
	struct sim_task *t;

	if (s->cpu[c].qhead < 0)
		return NULL;
	t = &s->task[s->cpu[c].qhead];
	rq_unlink(s, c, -1, t);
	return t;
}

/* ---- starting a task -------------------------------------------------------- */

static void record_latency(struct sim *s, uint64_t lat)
{
	if (s->nlat == s->lat_cap) {
		size_t cap = s->lat_cap ? s->lat_cap * 2 : 4096;
		uint64_t *p = realloc(s->lat, cap * sizeof(*p));

		if (!p) {
			fail(s, -ENOMEM);
			return;
		}
		s->lat = p;
		s->lat_cap = cap;
	}
	s->lat[s->nlat++] = lat;
}

/* A wakee that starts on another node than its waker's CPU: counted; a
 * grouped one also refills the group's shared data from there. */
static void note_xnode(struct sim *s, int c, struct sim_task *t)
{
	if (t->waker_node < 0 || t->waker_node == s->m->node[c])
		return;
	s->res.xnode_wakeups++;
	if (t->group)
		t->debt += s->prm->gr_xnode_ns;
}

/* Metrics at run start: an idle-core miss, a cookie co-run, a migration and
 * its penalty. */
static void note_start(struct sim *s, int c, struct sim_task *t)
{
	const struct sim_machine *m = s->m;
	int core = m->core[c];

	for (int i = m->core_start[core]; i < m->core_start[core + 1]; i++) {
		const struct sim_cpu *sib = &s->cpu[m->core_cpus[i]];

		if (sib->cur >= 0 && sib->cookie != t->cookie) {
			s->res.violations++;
			break;
		}
	}
	if (t->woken)
		note_xnode(s, c, t);
	t->waker_node = -1;

	s->res.run_starts++;
	if (t->woken) {
		record_latency(s, s->now - t->wake_time);
		t->woken = false;
	}
	/* core_running does not count c yet: another sibling runs. */
	if (s->core_running[core] > 0 && s->llc_idle_cores[m->llc[c]] > 0)
		s->res.idle_core_misses++;
	if (t->last_cpu >= 0 && m->node[t->last_cpu] != m->node[c]) {
		s->res.cross_node++;
		s->res.cross_llc++;
		t->debt += s->prm->node_penalty_ns *
			   (uint64_t)m->node_cost[m->node[t->last_cpu] * m->nr_nodes + m->node[c]] / 1000;
	} else if (t->last_cpu >= 0 && m->llc[t->last_cpu] != m->llc[c]) {
		s->res.cross_llc++;
		t->debt += s->prm->llc_penalty_ns;
	}
}

static void start_next(struct sim *s, int c);

/* The worker of c has nothing queued: steal nearest-first when enabled, else park. */
static bool try_steal(struct sim *s, int c);

static void park(struct sim *s, int c)
{
	int err;

	update_idle(s, c);
	s->cpu[c].parked_at = s->now;
	err = sim_pol_idle_enter(&s->pol, c);
	if (err < 0)
		fail(s, err);
}

static void go_idle(struct sim *s, int c)
{
	if (!(s->prm->steal && try_steal(s, c)))
		park(s, c);
}

/* The wakeup latency of a parked worker: longer once it has been parked
 * long enough to reach a deep idle state (what makes runtimes prefer the
 * most recently parked worker). */
static uint64_t wake_latency(const struct sim *s, int c)
{
	const struct sim_params *p = s->prm;

	if (p->deep_idle_ns && s->now - s->cpu[c].parked_at >= p->deep_idle_ns)
		return p->wake_ns + p->deep_wake_ns;
	return p->wake_ns;
}

static void deliver(struct sim *s, int c, struct sim_task *t);

/* A cookie refused t (after prev in c's queue) on c: the policy places it
 * again (place_run_refused); true when t moved to another CPU's queue. */
static bool replace(struct sim *s, int c, int prev, struct sim_task *t)
{
	int dst = sim_pol_run_refused(&s->pol, c, t);

	if (dst < 0 || dst >= s->m->nr_cpus) {
		fail(s, dst < 0 ? dst : -ERANGE);
		return false;
	}
	if (dst == c)
		return false;
	s->res.replaced++;
	rq_unlink(s, c, prev, t);
	deliver(s, dst, t);
	return true;
}

/* The first task of c's queue that the policy admits, taken out of the
 * queue; NULL when every one was refused (each was placed again: those
 * that nothing fits better stay queued, in order). */
static struct sim_task *admit_next(struct sim *s, int c)
{
	int prev = -1, id = s->cpu[c].qhead;

	while (id >= 0) {
		struct sim_task *t = &s->task[id];
		int next = t->next, err = sim_pol_run_begin(&s->pol, c, t);

		if (err == -EBUSY) {
			s->res.refusals++;
			if (!replace(s, c, prev, t))
				prev = id;
			id = next;
			continue;
		}
		if (err < 0)
			fail(s, err);
		rq_unlink(s, c, prev, t);
		return t;
	}
	return NULL;
}

static void end_forced(struct sim *s, int c)
{
	struct sim_cpu *cpu = &s->cpu[c];

	if (!cpu->forced)
		return;
	cpu->forced = false;
	s->res.forced_ns += s->now - cpu->forced_since;
}

static void start_next(struct sim *s, int c)
{
	struct sim_cpu *cpu = &s->cpu[c];
	struct sim_task *t;

	if (!cpu->qlen) {
		end_forced(s, c);
		go_idle(s, c);
		return;
	}
	t = admit_next(s, c);
	if (!t && !cpu->qlen) {
		/* every refused task was placed elsewhere: park, not steal
		 * again (a stolen task refused here goes back to its victim,
		 * which would be robbed again, forever at this instant) */
		end_forced(s, c);
		park(s, c);
		return;
	}
	if (!t) {
		if (!cpu->forced) {
			cpu->forced = true;
			cpu->forced_since = s->now;
		}
		update_idle(s, c);
		return;
	}
	end_forced(s, c);
	note_start(s, c, t);
	cpu->cur = t->id;
	cpu->cookie = t->cookie;
	cpu->since = s->now;
	cpu->rate = 0; /* forces rerate_core to schedule the end */
	t->state = SIM_RUNNING;
	t->cpu = c;
	t->last_cpu = c;
	t->slice_start = s->now;
	t->work += t->debt * FULL_SPEED;
	t->debt = 0;
	s->core_running[s->m->core[c]]++;
	rerate_core(s, s->m->core[c]);
	check_core(s, s->m->core[c]);
	update_idle(s, c);
}

/* Before parking, take the head of the queue of the first victim in
 * libplace's stealing order (nearest first) that runs a task and has others
 * waiting: only tasks queued behind a running one, as the kernel's idle
 * balance pulls from busy runqueues (a task on its way to a waking worker
 * starts within the wakeup latency anyway). */
static bool try_steal(struct sim *s, int c)
{
	const int *row = &s->m->steal[(size_t)c * (size_t)s->m->nr_cpus];

	for (int k = 0; k < s->m->nsteal[c]; k++) {
		int v = row[k];
		struct sim_task *t;

		/* A forced-idle victim's queue is fair game too: its tasks
		 * wait for a cookie to leave that core. */
		if (s->cpu[v].qlen == 0 || (s->cpu[v].cur < 0 && !s->cpu[v].forced))
			continue;
		/* the head only, as a deque's thief: a head that c's core would
		 * refuse stays for another thief (place_steal_check) */
		if (sim_pol_steal_check(&s->pol, c, &s->task[s->cpu[v].qhead]))
			continue;
		t = rq_pop(s, v);
		update_idle(s, v);
		rq_push(s, c, t);
		s->res.steals++;
		start_next(s, c);
		return true;
	}
	return false;
}

/* ---- wakeups ------------------------------------------------------------- */

/* The waker pays for the decision, as select_idle_sibling runs in the
 * waker's context: a base cost plus a cost per CPU probed (remote cache
 * lines of busy CPUs, what SIS_CORE exists to avoid touching). */
static void charge_decision(struct sim *s, int waker)
{
	const struct sim_params *p = s->prm;
	uint64_t cost = p->decision_ns;

	if (p->probe_ns && s->pol.spec.kind == SIM_POL_PLACE) {
		place_stats st;

		sim_pol_stats(&s->pol, &st);
		cost += (st.cpus_probed - s->probed) * p->probe_ns;
		s->probed = st.cpus_probed;
	}
	if (waker >= 0 && s->cpu[waker].cur >= 0)
		s->task[s->cpu[waker].cur].debt += cost;
}

static void kick_thief(struct sim *s, int c, int waker);

int sim_wake(struct sim *s, struct sim_task *t, int waker, unsigned flags)
{
	struct sim_cpu *cpu;
	uint64_t t0 = 0;
	bool stacked;
	int c;

	if (t->state != SIM_SLEEPING)
		return 0;
	if (t->last_cpu < 0) /* the workloads' tasks are long-lived threads: the kernel's fork spread */
		flags |= PLACE_WAKE_NEW | PLACE_WAKE_SPREAD;
	if (s->host_time)
		t0 = host_ns();
	c = sim_pol_select(&s->pol, t, waker, flags);
	if (s->host_time)
		s->res.host_ns += host_ns() - t0;
	s->res.decisions++;
	if (c < 0 || c >= s->m->nr_cpus) {
		fail(s, c < 0 ? c : -ERANGE);
		return c < 0 ? c : -ERANGE;
	}
	charge_decision(s, waker);
	s->res.wakeups++;
	cpu = &s->cpu[c];
	/* A sync wakeup onto the waker's own CPU queues behind nobody: the
	 * waker is about to sleep (unless others wait there too). */
	stacked = !cpu->idle && !((flags & PLACE_WAKE_SYNC) && c == waker && cpu->qlen == 0);
	if (stacked && s->llc_idle_cpus[s->m->llc[c]] > 0)
		s->res.stack_llc++;
	if (stacked && s->idle_cpus > 0)
		s->res.stack_any++;
	t->woken = true;
	t->wake_time = s->now;
	t->waker_node = waker >= 0 ? s->m->node[waker] : -1;
	deliver(s, c, t);
	if (s->prm->kick && s->prm->steal && stacked && cpu->cur >= 0 && s->idle_cpus > 0)
		kick_thief(s, c, waker);
	return 0;
}

/* --kick: a task waits on c behind a running one while workers are parked
 * (the runtime's count of them, here the simulator's): wake one near c to
 * steal, as a runtime with thieves notifies a parked worker when it queues
 * work. Another decision, the waker's to pay. */
static void kick_thief(struct sim *s, int c, int waker)
{
	int d = sim_pol_kick(&s->pol, c);

	if (d == -EAGAIN)
		return;
	if (d < 0 || d >= s->m->nr_cpus || s->cpu[d].cur >= 0 || s->cpu[d].waking) {
		fail(s, d < 0 ? d : -ERANGE);
		return;
	}
	charge_decision(s, waker);
	s->res.kicks++;
	s->cpu[d].kicked = true;
	s->cpu[d].waking = true;
	update_idle(s, d);
	if (sim_heap_push(&s->heap, s->now + wake_latency(s, d), SIM_EV_WAKE_DONE, d, 0) < 0)
		fail(s, -ENOMEM);
}

/* Queue t on c, and wake c's worker if it is parked or forced idle. */
static void deliver(struct sim *s, int c, struct sim_task *t)
{
	struct sim_cpu *cpu = &s->cpu[c];

	rq_push(s, c, t);
	if (cpu->cur < 0 && !cpu->waking) {
		/* A parked worker: it runs the task after the wakeup latency. */
		cpu->waking = true;
		if (sim_heap_push(&s->heap, s->now + wake_latency(s, c), SIM_EV_WAKE_DONE, c, 0) < 0)
			fail(s, -ENOMEM);
	}
	update_idle(s, c);
}

uint64_t sim_burst(struct sim *s, uint64_t base_ns)
{
	uint64_t w = base_ns * FULL_SPEED;
	unsigned j = s->prm->jitter_pct;

	if (j && base_ns) {
		/* Uniform in [base*(1-j), base*(1+j)]. */
		uint64_t span = w / 100 * j;

		w = w - span + sim_rand(&s->rng) % (2 * span + 1);
	}
	return w ? w : 1;
}

int sim_sleep_for(struct sim *s, struct sim_task *t, uint64_t base_ns)
{
	uint64_t dt = (sim_burst(s, base_ns) + FULL_SPEED - 1) / FULL_SPEED;

	return sim_heap_push(&s->heap, s->now + dt, SIM_EV_TIMER, t->id, 0);
}

/* ---- events -------------------------------------------------------------- */

static void on_wake_done(struct sim *s, int c)
{
	s->cpu[c].waking = false;
	if (s->cpu[c].kicked) { /* a thief: give back the claim, then steal or park */
		int err = sim_pol_kicked(&s->pol, c);

		s->cpu[c].kicked = false;
		if (err < 0)
			fail(s, err);
	}
	if (s->cpu[c].cur < 0)
		start_next(s, c);
}

/* The running task left c (slept, exited or was preempted): the forced-idle
 * CPUs that its run_end named (retry, n of them) retry first. */
static void vacate(struct sim *s, int c, const int *retry, int n)
{
	int core = s->m->core[c];

	s->cpu[c].cur = -1;
	s->core_running[core]--;
	rerate_core(s, core);
	check_core(s, core);
	for (int i = 0; i < n; i++) {
		const struct sim_cpu *cpu = &s->cpu[retry[i]];

		if (retry[i] != c && cpu->forced && cpu->cur < 0 && !cpu->waking)
			start_next(s, retry[i]);
	}
}

static void end_run(struct sim *s, int c, struct sim_task *t, int action)
{
	static const unsigned how[] = { [SIM_CONTINUE] = PLACE_RUN_PREEMPT, [SIM_SLEEP] = PLACE_RUN_SLEEP,
					[SIM_EXIT] = PLACE_RUN_EXIT };
	int retry[64];
	int n = sim_pol_run_end(&s->pol, c, t, how[action], retry, 64);

	if (n < 0)
		fail(s, n);
	vacate(s, c, retry, n < 0 ? 0 : n);
	if (action == SIM_CONTINUE) {
		rq_push(s, c, t);
	} else if (action == SIM_SLEEP) {
		if (t->role == 0 || t->role == 1)
			s->res.sleeps[t->role]++;
		t->state = SIM_SLEEPING;
		t->cpu = -1;
	} else {
		t->state = SIM_EXITED;
		t->cpu = -1;
		t->exit_ns = s->now;
		s->live--;
		s->res.exited++;
		if (!s->live)
			s->res.makespan_ns = s->now;
	}
	start_next(s, c);
}

static void on_burst_end(struct sim *s, int c, unsigned gen)
{
	struct sim_cpu *cpu = &s->cpu[c];
	struct sim_task *t;
	struct sim_wl *w;
	int action;

	if (cpu->cur < 0 || cpu->gen != gen)
		return; /* stale: the burst was rescheduled */
	account(s, c);
	t = &s->task[cpu->cur];
	w = s->wl[t->wl];
	t->work = 0;
	action = w->ops->burst_end(s, w, t, c);
	if (action < 0) {
		fail(s, action);
		return;
	}
	if (t->debt) {
		t->work += t->debt * FULL_SPEED;
		t->debt = 0;
	}
	/* Preempt only when the slice is used up and someone waits. */
	if (action == SIM_CONTINUE && (cpu->qlen == 0 || s->now - t->slice_start < s->prm->slice_ns)) {
		schedule_end(s, c);
		return;
	}
	end_run(s, c, t, action);
}

/* ---- the run --------------------------------------------------------------- */

static const struct sim_wl_ops *const wl_ops[SIM_WL_NR] = {
	[SIM_WL_HACKBENCH] = &sim_wl_hackbench,
	[SIM_WL_SCHBENCH] = &sim_wl_schbench,
	[SIM_WL_PINGPONG] = &sim_wl_pingpong,
	[SIM_WL_STREAM] = &sim_wl_stream,
	[SIM_WL_TENANTS] = &sim_wl_tenants,
	[SIM_WL_GROUPS] = &sim_wl_groups,
};

static int *zalloc_int(size_t n)
{
	return calloc(n ? n : 1, sizeof(int));
}

static int setup_cpus(struct sim *s)
{
	const struct sim_machine *m = s->m;

	s->cpu = calloc((size_t)m->nr_cpus, sizeof(*s->cpu));
	s->core_busy = zalloc_int((size_t)m->nr_cores);
	s->core_running = zalloc_int((size_t)m->nr_cores);
	s->llc_idle_cpus = zalloc_int((size_t)m->nr_llcs);
	s->llc_idle_cores = zalloc_int((size_t)m->nr_llcs);
	s->node_busy_ns = calloc((size_t)m->nr_nodes + 1, sizeof(uint64_t));
	s->mixed_since = calloc((size_t)m->nr_cores + 1, sizeof(uint64_t));
	if (!s->cpu || !s->core_busy || !s->core_running || !s->llc_idle_cpus || !s->llc_idle_cores ||
	    !s->node_busy_ns || !s->mixed_since)
		return -ENOMEM;
	for (int k = 0; k < m->nr_cores; k++)
		s->mixed_since[k] = UINT64_MAX;
	for (int c = 0; c < m->nr_cpus; c++) {
		s->cpu[c] = (struct sim_cpu){ .cur = -1, .qhead = -1, .qtail = -1, .idle = true };
		s->llc_idle_cpus[m->llc[c]]++;
	}
	for (int l = 0; l < m->nr_llcs; l++)
		s->llc_idle_cores[l] = m->llc_cores[l];
	s->idle_cpus = m->nr_cpus;
	return 0;
}

static int setup_tasks(struct sim *s)
{
	int n = 0;

	for (int k = 0; k < SIM_WL_NR; k++)
		if (s->prm->enabled[k])
			n += wl_ops[k]->nr_tasks(s->prm);
	if (n <= 0)
		return -EINVAL;
	s->task = calloc((size_t)n, sizeof(*s->task));
	if (!s->task)
		return -ENOMEM;
	s->nr_tasks = s->live = n;
	for (int i = 0; i < n; i++) {
		struct sim_task *t = &s->task[i];

		place_task_init(&t->pt, 0, 0);
		t->id = i;
		t->cpu = t->last_cpu = t->next = t->peer = t->wait_next = t->waker_node = -1;
		t->state = SIM_SLEEPING;
	}
	s->res.tasks = (uint64_t)n;
	return 0;
}

static int start_workloads(struct sim *s)
{
	int first = 0;

	for (int k = 0; k < SIM_WL_NR; k++) {
		struct sim_wl *w;
		int err;

		if (!s->prm->enabled[k])
			continue;
		w = calloc(1, sizeof(*w));
		if (!w)
			return -ENOMEM;
		s->wl[s->nr_wl] = w;
		w->ops = wl_ops[k];
		w->first = first;
		w->n = w->ops->nr_tasks(s->prm);
		for (int i = first; i < first + w->n; i++)
			s->task[i].wl = s->nr_wl;
		s->nr_wl++;
		first += w->n;
		err = w->ops->start(s, w);
		if (err < 0)
			return err;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t percentile(const uint64_t *v, size_t n, unsigned permille)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(((uint64_t)n * permille + 999) / 1000);
	return v[i ? i - 1 : 0];
}

/* The busiest node's CPU time against the mean of the nodes'. */
static double node_imbalance(const struct sim *s)
{
	uint64_t max = 0, sum = 0;

	for (int n = 0; s->node_busy_ns && n < s->m->nr_nodes; n++) {
		sum += s->node_busy_ns[n];
		if (s->node_busy_ns[n] > max)
			max = s->node_busy_ns[n];
	}
	return sum ? (double)max * s->m->nr_nodes / (double)sum - 1.0 : 0.0;
}

/* The exit times of role's tasks, sorted in buf, as r->exits[role], and
 * their run times. */
static void exit_times(struct sim *s, int role, uint64_t *buf)
{
	struct sim_result *r = &s->res;
	uint64_t *q = r->exits[role];
	size_t n = 0;

	for (int i = 0; i < s->nr_tasks; i++) {
		const struct sim_task *t = &s->task[i];

		if (t->role != role || !t->exit_ns)
			continue;
		buf[n++] = t->exit_ns;
		r->run_ns[role] += t->run_ns;
		r->smt_ns[role] += t->smt_ns;
		r->paired[role] += 2 * t->smt_ns > t->run_ns;
	}
	qsort(buf, n, sizeof(*buf), cmp_u64);
	q[EXIT_TASKS] = n;
	q[EXIT_FIRST] = n ? buf[0] : 0;
	q[EXIT_P10] = percentile(buf, n, 100);
	q[EXIT_P50] = percentile(buf, n, 500);
	q[EXIT_P90] = percentile(buf, n, 900);
	q[EXIT_LAST] = n ? buf[n - 1] : 0;
}

/* r->role_spread: each role's last exit, the latest over the earliest. */
static void role_spread(struct sim *s)
{
	uint64_t *last, lo = UINT64_MAX, hi = 0;
	int roles = 0, n = 0;

	for (int i = 0; i < s->nr_tasks; i++)
		if (s->task[i].role >= roles)
			roles = s->task[i].role + 1;
	if (!(last = calloc((size_t)roles + 1, sizeof(*last))))
		return;
	for (int i = 0; i < s->nr_tasks; i++)
		if (s->task[i].exit_ns > last[s->task[i].role])
			last[s->task[i].role] = s->task[i].exit_ns;
	for (int role = 0; role < roles; role++) {
		if (!last[role])
			continue;
		n++;
		lo = last[role] < lo ? last[role] : lo;
		hi = last[role] > hi ? last[role] : hi;
	}
	s->res.role_spread = n > 1 ? (double)hi / (double)lo : 0.0;
	free(last);
}

static void finish(struct sim *s)
{
	uint64_t *buf = calloc((size_t)s->nr_tasks + 1, sizeof(*buf)); /* NULL: no exit times */
	struct sim_result *r = &s->res;

	for (int c = 0; c < s->m->nr_cpus; c++) {
		account(s, c);
		end_forced(s, c);
	}
	/* A run stopped early may end with a core still mixed. */
	for (int k = 0; s->mixed_since && k < s->m->nr_cores; k++)
		if (s->mixed_since[k] != UINT64_MAX)
			r->violation_ns += s->now - s->mixed_since[k];
	r->node_imbalance = node_imbalance(s);
	r->nr_cpus = s->m->nr_cpus;
	if (!r->makespan_ns)
		r->makespan_ns = s->now;
	qsort(s->lat, s->nlat, sizeof(*s->lat), cmp_u64);
	r->lat_p50 = percentile(s->lat, s->nlat, 500);
	r->lat_p99 = percentile(s->lat, s->nlat, 990);
	r->lat_p999 = percentile(s->lat, s->nlat, 999);
	r->lat_max = s->nlat ? s->lat[s->nlat - 1] : 0;
	r->util = r->makespan_ns ? (double)s->busy_ns / ((double)s->m->nr_cpus * (double)r->makespan_ns) : 0;
	for (int role = 0; buf && role < 2; role++)
		exit_times(s, role, buf);
	free(buf);
	role_spread(s);
	r->ok = s->live == 0 && !s->error;
	sim_pol_stats(&s->pol, &r->st);
}

static void loop(struct sim *s)
{
	struct sim_event ev;
	uint64_t next_progress = 1u << 16;

	while (s->live && !s->error && sim_heap_pop(&s->heap, &ev)) {
		if (s->prm->max_time_ns && ev.time > s->prm->max_time_ns)
			break;
		s->now = ev.time;
		s->res.events++;
		if (ev.type == SIM_EV_WAKE_DONE)
			on_wake_done(s, ev.a);
		else if (ev.type == SIM_EV_TIMER)
			sim_wake(s, &s->task[ev.a], -1, 0);
		else
			on_burst_end(s, ev.a, ev.b);
		if (s->progress && s->res.events >= next_progress) {
			next_progress += 1u << 16;
			s->progress(s->progress_arg, s);
		}
	}
}

static void teardown(struct sim *s)
{
	for (int k = 0; k < s->nr_wl; k++) {
		if (s->wl[k]->ops->fini)
			s->wl[k]->ops->fini(s->wl[k]);
		free(s->wl[k]);
	}
	sim_pol_fini(&s->pol);
	sim_heap_fini(&s->heap);
	free(s->cpu);
	free(s->task);
	free(s->core_busy);
	free(s->core_running);
	free(s->llc_idle_cpus);
	free(s->llc_idle_cores);
	free(s->node_busy_ns);
	free(s->mixed_since);
	free(s->lat);
}

int sim_run(const place_topo *topo, const struct sim_machine *m, const struct sim_params *prm,
	    const struct sim_policy_spec *spec, bool host_time, struct sim_result *res,
	    void (*progress)(void *, const struct sim *), void *progress_arg)
{
	struct sim s = { .topo = topo, .m = m, .prm = prm, .rng = prm->seed, .pol_rng = ~prm->seed, .host_time = host_time,
			 .progress = progress, .progress_arg = progress_arg };
	int err;

	snprintf(s.res.policy, sizeof(s.res.policy), "%s", spec->name);
	err = setup_cpus(&s);
	if (!err)
		err = setup_tasks(&s);
	if (!err)
		err = sim_pol_init(&s.pol, &s, spec);
	if (!err)
		err = start_workloads(&s);
	if (!err)
		loop(&s);
	if (!err)
		err = s.error;
	finish(&s);
	*res = s.res;
	teardown(&s);
	return err;
}
