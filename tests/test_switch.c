/*
 * place_run_switch (issue 16 item 1): a direct switch leaves exactly what
 * place_run_end(prev, how) then place_run_begin(next) leave. Two instances
 * on one topology, one driven with the two calls and one with the switch,
 * take the same random sequence of wakeups, switches, parks and starts
 * (every how, hand-offs onto the waker, thieves, NUMA groups, timed and
 * sampled runs): after every step (every tenth under valgrind) their
 * per-CPU words, masks, scan bounds, statistics, NUMA counts and task
 * records are compared. Then the cases:
 * the cookie refusal (prev ended, next refused, CPU between tasks), the
 * core's occupancy kept for one cookie, the CPU never seen between tasks,
 * a switch to itself, and the errors that change nothing.
 * Deterministic: an injected clock, synthetic topologies, no threads.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdlib.h>

#include "cookie.h"
#include "numa.h"
#include "test_engine.h"
#include "testlib.h"

/* 2 nodes, 2 LLCs each, cores of 2 threads (16 CPUs). */
#define TOPO_2N "synthetic:pack:2 [numa] l3:2 core:2 pu:2"
#define NT 24 /* tasks of the random sequence */

static const char *const topos[] = { TOPO_4C8T, TOPO_2LLC, TOPO_2N };
static const int policies[] = { PLACE_POLICY_SIS_CORE, PLACE_POLICY_LINEAR, PLACE_POLICY_EXACT };

static uint64_t rnd(uint64_t *s) /* xorshift64* */
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/* ---- comparing two instances ------------------------------------------- */

static int task_index(struct env *e, const void *t)
{
	return t ? (int)((const place_task *)t - e->task) : -1;
}

#define SAME(what, x, y)                                                                   \
	ck_assert_msg((x) == (y), "step %d: %s differs: %llu (two calls) vs %llu (switch)", step, \
		      what, (unsigned long long)(x), (unsigned long long)(y))

/* The same field f of x (two calls) and y (switch). */
#define SAME_F(f) SAME(#f, x->f, y->f)

static void same_rec(int step, struct env *a, struct env *b, int i)
{
	const struct place_task_rec *x = place__rec(&a->task[i]), *y = place__rec(&b->task[i]);

	SAME_F(prev_cpu);
	SAME_F(queued_cpu);
	SAME_F(claim_gen);
	SAME_F(recent_used_cpu);
	SAME_F(wakee_flips);
	SAME_F(flip_decay_ns);
	SAME("last_wakee", task_index(a, x->last_wakee), task_index(b, y->last_wakee));
	SAME_F(avg_run_ns);
	SAME_F(run_accum_ns);
	SAME_F(numa_pending);
	SAME_F(numa_moved_ns);
	SAME_F(run_weight);
	SAME_F(run_interval);
	SAME("owner is p", x->owner == a->p->id, y->owner == b->p->id);
}

static void same_state(int step, struct env *a, struct env *b)
{
	place *p = a->p, *q = b->p;
	int nodes = place_topo_nr_nodes(a->topo), llcs = place_topo_nr_llcs(a->topo);
	place_stats sa, sb;

	for (int c = 0; c < a->nr_cpus; c++) {
		const struct place_cpu *x = &p->cpu[c], *y = &q->cpu[c];

		SAME_F(state);
		SAME_F(running);
		SAME("curr", task_index(a, x->curr), task_index(b, y->curr));
		SAME_F(curr_avg_ns);
		SAME_F(curr_cookie);
		SAME_F(stamp);
		SAME_F(busy_ns);
		SAME("util_seen", p->util_seen[c], q->util_seen[c]);
		SAME("curr_group", p->slot[c].curr_group, q->slot[c].curr_group);
		SAME("run_seq", p->slot[c].run_seq, q->slot[c].run_seq);
		SAME("forced_since", p->slot[c].forced_since, q->slot[c].forced_since);
		SAME("core pend", p->core[p->map[c].core].pend, q->core[q->map[c].core].pend);
		SAME("occ cookie", place__occ(p, c)[PLACE_OCC_COOKIE], place__occ(q, c)[PLACE_OCC_COOKIE]);
		SAME("occ count", place__occ_count(place__occ(p, c)[PLACE_OCC_COUNT]),
		     place__occ_count(place__occ(q, c)[PLACE_OCC_COUNT]));
	}
	for (int l = 0; l < llcs; l++) {
		const struct place_llc *x = &p->llc[l], *y = &q->llc[l];

		for (int w = 0; w < x->nr_words; w++) {
			SAME("icpus", x->icpus[w], y->icpus[w]);
			SAME("icores", x->icores[w], y->icores[w]);
		}
		SAME_F(has_idle_cores);
		SAME_F(nr_idle_scan);
		SAME_F(util_avg);
		SAME_F(util_stamp);
	}
	for (int w = 0; w < p->llc_words; w++)
		SAME("llc_idle", p->llc_idle[w], q->llc_idle[w]);
	for (size_t k = 0; p->numa_count && k < (size_t)nodes * p->numa_stride; k++)
		SAME("numa_running", p->numa_running[k], q->numa_running[k]);
	for (int l = -1; l < llcs; l++) {
		ck_assert_int_eq(place_stats_read(p, l, &sa), 0);
		ck_assert_int_eq(place_stats_read(q, l, &sb), 0);
		ck_assert_msg(memcmp(&sa, &sb, sizeof(sa)) == 0, "step %d: stats of LLC %d differ", step, l);
	}
	for (int i = 0; i < NT; i++)
		same_rec(step, a, b, i);
}

/* ---- the random sequence ----------------------------------------------- */

enum { SLEEPING, QUEUED, RUNNING };

struct model {
	int st[NT];     /* SLEEPING, QUEUED or RUNNING */
	int curr[64];   /* task running on each CPU, -1 */
	bool handoff;   /* b hands off with place_run_handoff (else a fifth kind of step is left out) */
	int handed, refused; /* hand-offs done, refused (-EPERM) */
};

/* A queued task, or -1 (any CPU may take it: a thief's start). */
static int pick_queued(const struct model *m, uint64_t r)
{
	for (int k = 0; k < NT; k++) {
		int i = (int)((r + (uint64_t)k) % NT);

		if (m->st[i] == QUEUED)
			return i;
	}
	return -1;
}

/* cpu's task (running there) hands cpu to sleeping task i: on a,
 * place_wakeup(PLACE_WAKE_CURRENT), then the switch when it answers cpu;
 * on b, place_run_handoff, and where that refuses, what a runtime does
 * then: the same wakeup and switch as on a. */
static void handoff_step(struct env *a, struct env *b, struct model *m, int cpu, int i, uint64_t r)
{
	unsigned how = (unsigned)((r >> 20) % 3), fl = PLACE_WAKE_CURRENT | (r & 0x4000 ? PLACE_WAKE_SYNC : 0);
	int cur = m->curr[cpu], ca, cb;

	ca = place_wakeup(a->p, &a->task[i], cpu, fl);
	ck_assert_int_ge(ca, 0);
	if (ca == cpu)
		ck_assert_int_eq(place_run_switch(a->p, cpu, &a->task[cur], how, &a->task[i]), 0);
	cb = place_run_handoff(b->p, cpu, &b->task[cur], how, &b->task[i]);
	if (ca == cpu) {
		ck_assert_int_eq(cb, 0);
		m->handed++;
	} else {
		m->refused++;
		ck_assert_int_eq(cb, -EPERM); /* a cpu_set_t: the only refusal here */
		ck_assert_int_eq(place_wakeup(b->p, &b->task[i], cpu, fl), ca);
	}
	if (ca != cpu) {
		m->st[i] = QUEUED;
		return;
	}
	m->st[cur] = how == PLACE_RUN_PREEMPT ? QUEUED : SLEEPING;
	m->st[i] = RUNNING;
	m->curr[cpu] = i;
}

/* One step on both instances: the same call on a, and on b the same call
 * or, for "end then begin", the switch. */
static void one_step(struct env *a, struct env *b, struct model *m, uint64_t r)
{
	int cpu = (int)(r % (uint64_t)a->nr_cpus), i, ca, cb;
	int cur = m->curr[cpu];

	a->now += 1000 + (r >> 40) % 400000; /* runs of 1 us .. 0.4 ms: timed, then sampled */
	b->now = a->now;
	switch ((r >> 8) % (m->handoff ? 5 : 4)) {
	case 4: /* cpu's task wakes a sleeping one for its CPU and stops */
		i = (int)((r >> 16) % NT);
		if (cur < 0 || m->st[i] != SLEEPING)
			return;
		handoff_step(a, b, m, cpu, i, r);
		return;
	case 0: /* wake a sleeping task, from the worker of cpu or from no worker */
		i = (int)((r >> 16) % NT);
		if (m->st[i] != SLEEPING)
			return;
		{
			int waker = cur >= 0 && (r & 0x1000) ? cpu : PLACE_CPU_NONE;
			unsigned fl = waker == PLACE_CPU_NONE ? 0 : (unsigned[]){ 0, PLACE_WAKE_SYNC, PLACE_WAKE_CURRENT }[(r >> 24) % 3];

			ca = place_wakeup(a->p, &a->task[i], waker, fl);
			cb = place_wakeup(b->p, &b->task[i], waker, fl);
		}
		ck_assert_int_ge(ca, 0);
		ck_assert_int_eq(ca, cb);
		m->st[i] = QUEUED;
		return;
	case 1: /* cpu runs a task: it switches to a queued one (or to itself) */
		if (cur < 0)
			return;
		{
			unsigned how = (unsigned)((r >> 20) % 3);
			int next = pick_queued(m, r >> 32);

			if (next < 0 || (r & 0x2000)) {
				if (how != PLACE_RUN_PREEMPT)
					return; /* only a preempted task may run on at once */
				next = cur;
			}
			ck_assert_int_eq(place_run_end(a->p, cpu, &a->task[cur], how), 0);
			ck_assert_int_eq(place_run_begin(a->p, cpu, &a->task[next]), 0);
			ck_assert_int_eq(place_run_switch(b->p, cpu, &b->task[cur], how, &b->task[next]), 0);
			m->st[cur] = how == PLACE_RUN_PREEMPT ? QUEUED : SLEEPING;
			m->st[next] = RUNNING;
			m->curr[cpu] = next;
		}
		return;
	case 2: /* cpu's task sleeps and cpu parks */
		if (cur < 0)
			return;
		for (struct env *e = a; e; e = e == a ? b : NULL) {
			ck_assert_int_eq(place_run_end(e->p, cpu, &e->task[cur], PLACE_RUN_SLEEP), 0);
			ck_assert_int_eq(place_idle_enter(e->p, cpu), 0);
		}
		m->st[cur] = SLEEPING;
		m->curr[cpu] = -1;
		return;
	default: /* an idle cpu starts a queued task (its own or a stolen one) */
		i = pick_queued(m, r >> 32);
		if (cur >= 0 || i < 0)
			return;
		ck_assert_int_eq(place_run_begin(a->p, cpu, &a->task[i]), 0);
		ck_assert_int_eq(place_run_begin(b->p, cpu, &b->task[i]), 0);
		m->st[i] = RUNNING;
		m->curr[cpu] = i;
		return;
	}
}

/* Two instances of combination k (3 topologies x 3 policies) take the
 * same random sequence from seed: 4000 steps, compared after each (after
 * every tenth under valgrind, where a comparison of the whole state costs a
 * thousandfold; the steps stay, so the hand-off counts asserted below are
 * the same there). handoff: with hand-offs among the steps, and one task in six
 * limited by a cpu_set_t to every fourth CPU (refused elsewhere). */
static void run_pair(int k, uint64_t seed, bool handoff)
{
	struct env a, b;
	struct model m;
	cpu_set_t set[4];

	env_open(&a, topos[k / 3], policies[k % 3], PLACE_FEAT_DEFAULT, true);
	env_open(&b, topos[k / 3], policies[k % 3], PLACE_FEAT_DEFAULT, true);
	memset(&m, 0, sizeof(m));
	m.handoff = handoff;
	for (int c = 0; c < 64; c++)
		m.curr[c] = -1;
	for (int j = 0; j < 4; j++) { /* CPUs j, j + 4, j + 8, ... */
		CPU_ZERO(&set[j]);
		for (int c = j; c < a.nr_cpus; c += 4)
			CPU_SET(c, &set[j]);
	}
	for (int i = 0; i < NT; i++) {
		uint32_t g = i % 3; /* groups 0 (none), 1 and 2 */

		ck_assert_int_eq(place_task_set_group(&a.task[i], g), 0);
		ck_assert_int_eq(place_task_set_group(&b.task[i], g), 0);
		if (handoff && i % 6 == 5) {
			ck_assert_int_eq(place_task_set_cpus(&a.task[i], &set[i % 4], sizeof(set[0])), 0);
			ck_assert_int_eq(place_task_set_cpus(&b.task[i], &set[i % 4], sizeof(set[0])), 0);
		}
	}
	for (int c = 0; c < a.nr_cpus; c++) {
		ck_assert_int_eq(place_idle_enter(a.p, c), 0);
		ck_assert_int_eq(place_idle_enter(b.p, c), 0);
	}
	int every = getenv("PLACE_UNDER_VALGRIND") ? 10 : 1;

	for (int step = 0; step < 4000; step++) {
		one_step(&a, &b, &m, rnd(&seed));
		if (step % every == every - 1)
			same_state(step, &a, &b);
	}
	if (handoff) {
		ck_assert_int_gt(m.handed, 10);
		ck_assert_int_gt(m.refused, 0);
	}
	env_close(&a);
	env_close(&b);
}

START_TEST(t_switch_equals_two_calls)
{
	run_pair(_i, 0x9e3779b97f4a7c15ull + (uint64_t)_i, false);
}
END_TEST

/*
 * place_run_handoff leaves what place_wakeup(PLACE_WAKE_CURRENT) then
 * place_run_switch leave: the same random sequences as above with
 * hand-offs among them (every how, SYNC or not, tasks whose cpu_set_t
 * leaves out some CPUs: refused there, and woken elsewhere as before),
 * compared after each step: states, masks, statistics slot by slot per
 * LLC, NUMA counts, task records (wakee flips included), cookie hints.
 */
START_TEST(t_handoff_equals_wakeup_switch)
{
	run_pair(_i, 0x51ed27a3c0ffee11ull + (uint64_t)_i, true);
}
END_TEST

/* ---- the cases ---------------------------------------------------------- */

/* The occupancy of cpu's core: {cookie, count} and its forced-idle bits. */
static void occ_of(struct env *e, int cpu, uint64_t *cookie, uint64_t *count, uint64_t *forced)
{
	const uint64_t *w = place__occ(e->p, cpu);

	*cookie = w[PLACE_OCC_COOKIE];
	*count = place__occ_count(w[PLACE_OCC_COUNT]);
	*forced = w[PLACE_OCC_COUNT] >> PLACE_OCC_FORCED_SHIFT;
}

/*
 * The cookie refusal. A (cookie 5) runs on CPU 0, C (cookie 5) on its
 * sibling CPU 1; B (cookie 7) was handed off onto CPU 0. The switch from A
 * (PREEMPT) to B would refuse B after ending A: it changes nothing
 * (-EAGAIN, compared with a second instance), and the two calls then
 * leave A queued on CPU 0, B in its queue slot, CPU 0 between tasks and
 * forced idle. Once C has left, the switch to B goes through.
 */
START_TEST(t_cookie_refusal)
{
	struct env a, b;
	uint64_t ck, n, f;

	for (struct env *e = &a; e; e = e == &a ? &b : NULL) {
		env_open(e, TOPO_4C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
		ck_assert_int_eq(place_task_set_cookie(&e->task[0], 5), 0);
		ck_assert_int_eq(place_task_set_cookie(&e->task[1], 5), 0);
		ck_assert_int_eq(place_task_set_cookie(&e->task[2], 5), 0);
		env_run(e, 0, &e->task[0]);
		env_run(e, 1, &e->task[2]);
		ck_assert_int_eq(env_wake(e, &e->task[1], 0, PLACE_WAKE_CURRENT), 0);
		ck_assert_int_eq(place_task_set_cookie(&e->task[1], 7), 0); /* queued: counts at its start */
	}
	/* A (5) to B (7) while C (5) runs on the sibling: B would be refused
	 * after A ended; the switch changes nothing, the two calls decide */
	ck_assert_int_eq(place_run_switch(b.p, 0, &b.task[0], PLACE_RUN_PREEMPT, &b.task[1]), -EAGAIN);
	same_state(0, &a, &b);
	for (struct env *e = &a; e; e = e == &a ? &b : NULL) {
		ck_assert_int_eq(place_run_end(e->p, 0, &e->task[0], PLACE_RUN_PREEMPT), 0);
		ck_assert_int_eq(place_run_begin(e->p, 0, &e->task[1]), -EBUSY);
	}
	same_state(1, &a, &b);
	ck_assert_uint_eq(b.p->cpu[0].running, 0);             /* between tasks */
	ck_assert_int_eq(place__rec(&b.task[0])->queued_cpu, 0); /* A: preempted, queued here */
	ck_assert_int_eq(place__rec(&b.task[1])->queued_cpu, 0); /* B: still queued */
	occ_of(&b, 0, &ck, &n, &f);
	ck_assert_uint_eq(ck, 5);
	ck_assert_uint_eq(n, 1); /* C alone */
	ck_assert_uint_eq(f, 1); /* CPU 0 refused: named by C's run end */
	/* the worker goes on: A again (fits), then to B once C has left (CPU
	 * 0's own forced bit is no sibling that waits) */
	ck_assert_int_eq(place_run_begin(b.p, 0, &b.task[0]), 0);
	ck_assert_int_eq(place_run_end(b.p, 1, &b.task[2], PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_run_switch(b.p, 0, &b.task[0], PLACE_RUN_SLEEP, &b.task[1]), 0);
	occ_of(&b, 0, &ck, &n, &f);
	ck_assert_uint_eq(ck, 7);
	ck_assert_uint_eq(n, 1);
	env_close(&a);
	env_close(&b);
}
END_TEST

/*
 * One cookie: the core's occupancy is not touched. A sibling refused
 * earlier keeps its forced-idle bit (no run end emptied the core: the
 * cookie that refused it still runs), where the two calls would have let
 * it go for a moment. And between the two calls a sibling's run_begin of
 * another cookie gets in; the switch leaves no such moment.
 */
START_TEST(t_cookie_kept)
{
	struct env e;
	uint64_t ck, n, f;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	ck_assert_int_eq(place_task_set_cookie(&e.task[0], 5), 0);
	ck_assert_int_eq(place_task_set_cookie(&e.task[1], 5), 0);
	ck_assert_int_eq(place_task_set_cookie(&e.task[2], 7), 0);
	env_run(&e, 0, &e.task[0]);
	ck_assert_int_eq(place_run_begin(e.p, 1, &e.task[2]), -EBUSY);
	ck_assert_int_eq(env_wake(&e, &e.task[1], 0, PLACE_WAKE_CURRENT), 0);
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[0], PLACE_RUN_SLEEP, &e.task[1]), 0);
	occ_of(&e, 0, &ck, &n, &f);
	ck_assert_uint_eq(ck, 5);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(f, 2); /* CPU 1's bit, still set */
	ck_assert_int_eq(place_run_begin(e.p, 1, &e.task[2]), -EBUSY); /* still excluded */
	/* cookie 7's turn comes: the switch leaves it to the two calls */
	e.now += PLACE_COOKIE_TURN_NS;
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[1], PLACE_RUN_PREEMPT, &e.task[1]), -EAGAIN);
	ck_assert_ptr_eq(e.p->cpu[0].curr, &e.task[1]); /* nothing changed */
	/* the last run end of cookie 5 names CPU 1 */
	{
		int retry[4];

		ck_assert_int_eq(place_run_end_retry(e.p, 0, &e.task[1], PLACE_RUN_SLEEP, retry, 4), 1);
		ck_assert_int_eq(retry[0], 1);
	}
	/* the two calls: between them, CPU 1 takes the core for cookie 7 */
	env_run(&e, 0, &e.task[0]);
	ck_assert_int_eq(place_run_end(e.p, 0, &e.task[0], PLACE_RUN_PREEMPT), 0);
	env_run(&e, 1, &e.task[2]);
	ck_assert_int_eq(place_run_begin(e.p, 0, &e.task[0]), -EBUSY);
	env_close(&e);
}
END_TEST

/*
 * The CPU is never between tasks: the switch keeps running at 1 and never
 * lets the CPU into the idle masks, and its time goes to the right task: a
 * timed run of 3 us charged to prev, the next one's clock starts at the
 * switch (one clock read for both).
 */
START_TEST(t_run_time_charged)
{
	struct env e;
	struct place_task_rec *ra, *rb;

	env_open(&e, TOPO_4C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
	ra = place__rec(&e.task[0]);
	rb = place__rec(&e.task[1]);
	env_run(&e, 0, &e.task[0]);
	ck_assert_int_eq(env_wake(&e, &e.task[1], 0, PLACE_WAKE_CURRENT), 0);
	e.now += 3000;
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[0], PLACE_RUN_PREEMPT, &e.task[1]), 0);
	ck_assert_uint_eq(ra->run_accum_ns, 3000);
	ck_assert_uint_eq(e.p->cpu[0].busy_ns, 3000);
	ck_assert_uint_eq(e.p->cpu[0].stamp, e.now);
	ck_assert_uint_eq(e.p->cpu[0].running, 1);
	ck_assert_ptr_eq(e.p->cpu[0].curr, &e.task[1]);
	ck_assert_int_eq(ra->queued_cpu, 0);
	ck_assert_int_eq(rb->queued_cpu, -1);
	ck_assert_uint_eq(place__st_queued(e.p->cpu[0].state), 1); /* A */
	ck_assert(!place__st_available(e.p->cpu[0].state));
	e.now += 2000;
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[1], PLACE_RUN_SLEEP, &e.task[0]), 0);
	ck_assert_uint_eq(rb->avg_run_ns, 2000);
	ck_assert_uint_eq(e.p->cpu[0].busy_ns, 5000);
	ck_assert_uint_eq(place__st_queued(e.p->cpu[0].state), 0);
	/* a switch to itself: a yield that runs on, its run time kept going */
	e.now += 1000;
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[0], PLACE_RUN_PREEMPT, &e.task[0]), 0);
	ck_assert_uint_eq(ra->run_accum_ns, 4000);
	ck_assert_uint_eq(place__st_queued(e.p->cpu[0].state), 0);
	ck_assert_ptr_eq(e.p->cpu[0].curr, &e.task[0]);
	env_park(&e, 0, &e.task[0]);
	ck_assert_uint_eq(ra->avg_run_ns, 4000);
	env_close(&e);
}
END_TEST

/* Errors before anything changes: the state is as it was. */
START_TEST(t_errors_change_nothing)
{
	struct env e;
	place_task junk;
	struct place_cpu before;

	env_open(&e, TOPO_2N, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	memset(&junk, 0xa5, sizeof(junk));
	env_run(&e, 0, &e.task[0]);
	ck_assert_int_eq(env_wake(&e, &e.task[1], 0, PLACE_WAKE_CURRENT), 0);
	before = e.p->cpu[0];
	ck_assert_int_eq(place_run_switch(NULL, 0, &e.task[0], 0, &e.task[1]), -EINVAL);
	ck_assert_int_eq(place_run_switch(e.p, 0, NULL, 0, &e.task[1]), -EINVAL);
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[0], 0, NULL), -EINVAL);
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[0], 0, &junk), -EINVAL);
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[2], 0, &e.task[1]), -EINVAL); /* not running */
	ck_assert_int_eq(place_run_switch(e.p, 1, &e.task[0], 0, &e.task[1]), -EINVAL); /* runs on 0 */
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[0], 3, &e.task[1]), -EINVAL); /* how */
	ck_assert_int_eq(place_run_switch(e.p, 4096, &e.task[0], 0, &e.task[1]), -ENODEV);
	ck_assert_int_eq(place_task_set_group(&e.task[1], 1u << 30), 0);
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[0], 0, &e.task[1]), -ENOSPC);
	ck_assert_msg(memcmp(&before, &e.p->cpu[0], sizeof(before)) == 0, "a failed switch changed CPU 0");
	ck_assert_int_eq(place_task_set_group(&e.task[1], 0), 0);
	ck_assert_int_eq(place_worker_unregister(e.p, 2), 0);
	ck_assert_int_eq(place_run_switch(e.p, 2, &e.task[0], 0, &e.task[1]), -ENOENT);
	ck_assert_int_eq(place_run_switch(e.p, 0, &e.task[0], PLACE_RUN_EXIT, &e.task[1]), 0);
	env_close(&e);
}
END_TEST

/* ---- place_run_handoff ---------------------------------------------------- */

/*
 * What a hand-off records, named: A (group 1, cookie 5) runs on CPU 0 and
 * hands it to B (the same group and cookie), which last ran on CPU 9 (the
 * other node). On a, place_wakeup(CURRENT) and place_run_switch; on b,
 * place_run_handoff: the same everything (same_state), and on b one
 * wakeup counted in CPU 0's LLC (hit_target, affine, unclaimed, 2 probes:
 * CPU 0 and B's prev), A's flips, B's start on CPU 0 (prev_cpu, run time
 * from the switch), the group moved to node 0, the cookie hint, and CPU 0
 * never queued anything.
 */
START_TEST(t_handoff_records)
{
	struct env a, b;
	place_stats before, after;
	struct place_task_rec *ra = place__rec(&b.task[0]), *rb = place__rec(&b.task[1]);

	for (struct env *e = &a; e; e = e == &a ? &b : NULL) {
		env_open(e, TOPO_2N, policies[_i], PLACE_FEAT_DEFAULT, true);
		for (int k = 0; k < 2; k++) {
			ck_assert_int_eq(place_task_set_group(&e->task[k], 1), 0);
			ck_assert_int_eq(place_task_set_cookie(&e->task[k], 5), 0);
		}
		env_run(e, 9, &e->task[1]);
		e->now += 2000;
		env_park(e, 9, &e->task[1]);
		env_run(e, 0, &e->task[0]);
		e->now += 3000;
	}
	ck_assert_int_eq(place_stats_read(b.p, 0, &before), 0);
	ck_assert_int_eq(env_wake(&a, &a.task[1], 0, PLACE_WAKE_CURRENT), 0);
	ck_assert_int_eq(place_run_switch(a.p, 0, &a.task[0], PLACE_RUN_SLEEP, &a.task[1]), 0);
	ck_assert_int_eq(place_run_handoff(b.p, 0, &b.task[0], PLACE_RUN_SLEEP, &b.task[1]), 0);
	same_state(0, &a, &b);
	ck_assert_int_eq(place_stats_read(b.p, 0, &after), 0);
	ck_assert_uint_eq(after.wakeups - before.wakeups, 1);
	ck_assert_uint_eq(after.hit_target - before.hit_target, 1);
	ck_assert_uint_eq(after.affine_wakeups - before.affine_wakeups, 1);
	ck_assert_uint_eq(after.cpus_probed - before.cpus_probed, 2);
	ck_assert_uint_eq(after.claims, before.claims);
	ck_assert_uint_eq(ra->wakee_flips, 1);
	ck_assert_ptr_eq(ra->last_wakee, &b.task[1]);
	ck_assert_uint_eq(ra->avg_run_ns, 3000); /* A's run, timed: its estimate */
	ck_assert_int_eq(rb->prev_cpu, 0);
	ck_assert_int_eq(rb->queued_cpu, -1);
	ck_assert_uint_eq(rb->owner, b.p->id);
	ck_assert_ptr_eq(b.p->cpu[0].curr, &b.task[1]);
	ck_assert_uint_eq(b.p->cpu[0].stamp, b.now);
	ck_assert_uint_eq(place__st_queued(b.p->cpu[0].state), 0);
	ck_assert_uint_eq(b.p->core[b.p->map[0].core].pend, 5);
	ck_assert_uint_eq(*place__numa_slot(b.p, 0, 1), 1);  /* B runs on node 0 */
	ck_assert_uint_eq(*place__numa_slot(b.p, 1, 1), 0);
	env_close(&a);
	env_close(&b);
}
END_TEST

/* The whole of an instance that a call may change: every CPU line (up to
 * 16, zeros past the machine's last), the statistics of every LLC, the task
 * records. */
struct snap {
	struct place_cpu cpu[16];
	place_stats st;
	place_task task[8];
};

static void snap_take(struct env *e, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	ck_assert_int_le(e->nr_cpus, 16);
	memcpy(s->cpu, e->p->cpu, e->nr_cpus * sizeof(s->cpu[0]));
	ck_assert_int_eq(place_stats_read(e->p, -1, &s->st), 0);
	memcpy(s->task, e->task, sizeof(s->task));
}

static void snap_same(struct env *e, const struct snap *s, const char *what)
{
	struct snap now;

	snap_take(e, &now);
	ck_assert_msg(memcmp(&now, s, sizeof(now)) == 0, "%s changed the instance", what);
}

/* Every error, each leaving everything as it was; then the hand-off goes
 * through. Tasks: 0 runs on CPU 0 (prev), 1 sleeps (next), 2 sleeps, 3
 * holds a claim on another instance, 4 runs on CPU 8, 5 holds a claim
 * here. */
START_TEST(t_handoff_errors)
{
	struct env e, other;
	struct snap s;
	place_task junk;
	cpu_set_t only5;
	place_task *t = e.task;

	env_open(&e, TOPO_2N, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	env_open(&other, TOPO_2N, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	memset(&junk, 0xa5, sizeof(junk));
	env_run(&e, 0, &t[0]);
	env_run(&e, 8, &t[4]);
	env_wake(&other, &t[3], PLACE_CPU_NONE, PLACE_WAKE_NEW);
	env_wake(&e, &t[5], PLACE_CPU_NONE, PLACE_WAKE_NEW);
	snap_take(&e, &s);
	ck_assert_int_eq(place_run_handoff(NULL, 0, &t[0], 0, &t[1]), -EINVAL);
	ck_assert_int_eq(place_run_handoff(e.p, 0, NULL, 0, &t[1]), -EINVAL);
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], 0, NULL), -EINVAL);
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], 0, &junk), -EINVAL);
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[2], 0, &t[1]), -EINVAL); /* not running */
	ck_assert_int_eq(place_run_handoff(e.p, 1, &t[0], 0, &t[1]), -EINVAL); /* runs on 0 */
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], 3, &t[1]), -EINVAL); /* how */
	ck_assert_int_eq(place_run_handoff(e.p, 4096, &t[0], 0, &t[1]), -ENODEV);
	ck_assert_int_eq(place_run_handoff(e.p, -1, &t[0], 0, &t[1]), -ENODEV);
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], 0, &t[3]), -EXDEV); /* another instance's */
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], 0, &t[0]), -EALREADY); /* itself */
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], 0, &t[4]), -EALREADY); /* runs on 8 */
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], 0, &t[5]), -EBUSY);   /* woken already */
	ck_assert_str_ne(place_last_error(), "");
	ck_assert_int_eq(place_task_set_group(&t[1], 1u << 30), 0);
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], 0, &t[1]), -ENOSPC);
	ck_assert_int_eq(place_task_set_group(&t[1], 0), 0);
	CPU_ZERO(&only5);
	CPU_SET(5, &only5);
	ck_assert_int_eq(place_task_set_cpus(&t[1], &only5, sizeof(only5)), 0);
	snap_take(&e, &s); /* t[1]'s cpu_set_t is in the record */
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], PLACE_RUN_SLEEP, &t[1]), -EPERM);
	ck_assert_str_ne(place_last_error(), "");
	snap_same(&e, &s, "the errors");
	ck_assert_int_eq(place_task_set_cpus(&t[1], NULL, 0), 0);
	/* CPU 8 leaves the current topology while 4 runs there: the switch
	 * drains it, the hand-off (a wakeup onto it) is refused */
	{
		place_topo *pack0;

		ck_assert_int_eq(place_topo_load(&pack0, "synthetic:pack:1 [numa] l3:2 core:2 pu:2"), 0);
		ck_assert_int_eq(place_set_topology(e.p, pack0), 0);
		place_topo_free(pack0);
	}
	snap_take(&e, &s);
	ck_assert_int_eq(place_run_handoff(e.p, 8, &t[4], PLACE_RUN_SLEEP, &t[2]), -ENODEV);
	snap_same(&e, &s, "a hand-off onto an offline CPU");
	ck_assert_int_eq(place_run_switch(e.p, 8, &t[4], PLACE_RUN_SLEEP, &t[2]), 0);
	ck_assert_int_eq(place_worker_unregister(e.p, 2), 0);
	ck_assert_int_eq(place_run_handoff(e.p, 2, &t[0], 0, &t[1]), -ENOENT);
	ck_assert_int_eq(place_run_handoff(e.p, 0, &t[0], PLACE_RUN_EXIT, &t[1]), 0);
	ck_assert_ptr_eq(e.p->cpu[0].curr, &t[1]);
	env_close(&e);
	env_close(&other);
}
END_TEST

/*
 * COOKIES: A (5) runs on CPU 0, C (5) on its sibling CPU 1. A hand-off to
 * B (7) would put 7 beside 5: -EAGAIN, nothing changed (place_wakeup then
 * sends B elsewhere: no idle CPU of the core fits). Once C has left, the
 * core holds only A: the hand-off goes through and the core's cookie is
 * 7, as after the wakeup and switch.
 */
START_TEST(t_handoff_cookies)
{
	struct env e;
	struct snap s;
	uint64_t ck, n, f;

	env_open(&e, TOPO_4C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
	ck_assert_int_eq(place_task_set_cookie(&e.task[0], 5), 0);
	ck_assert_int_eq(place_task_set_cookie(&e.task[1], 7), 0);
	ck_assert_int_eq(place_task_set_cookie(&e.task[2], 5), 0);
	env_run(&e, 0, &e.task[0]);
	env_run(&e, 1, &e.task[2]);
	snap_take(&e, &s);
	ck_assert_int_eq(place_run_handoff(e.p, 0, &e.task[0], PLACE_RUN_SLEEP, &e.task[1]), -EAGAIN);
	snap_same(&e, &s, "a refused cookie");
	ck_assert_int_ne(env_wake(&e, &e.task[1], 0, PLACE_WAKE_NOCLAIM | PLACE_WAKE_CURRENT), 0);
	ck_assert_int_eq(place_run_end(e.p, 1, &e.task[2], PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_run_handoff(e.p, 0, &e.task[0], PLACE_RUN_SLEEP, &e.task[1]), 0);
	occ_of(&e, 0, &ck, &n, &f);
	ck_assert_uint_eq(ck, 7);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(e.p->core[e.p->map[0].core].pend, 7);
	env_close(&e);
}
END_TEST

static Suite *switch_suite(void)
{
	Suite *s = suite_create("switch");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, t_switch_equals_two_calls, 0, 9);
	tcase_add_loop_test(tc, t_handoff_equals_wakeup_switch, 0, 9);
	tcase_add_loop_test(tc, t_cookie_refusal, 0, 3);
	tcase_add_test(tc, t_cookie_kept);
	tcase_add_loop_test(tc, t_run_time_charged, 0, 3);
	tcase_add_test(tc, t_errors_change_nothing);
	tcase_add_loop_test(tc, t_handoff_records, 0, 3);
	tcase_add_test(tc, t_handoff_errors);
	tcase_add_loop_test(tc, t_handoff_cookies, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(switch_suite());
}
