/*
 * The worker's edges (idle enter, run begin, run end) and what they keep up
 * to date: the per-CPU state, the LLC idle masks per policy, has_idle_cores,
 * and the SIS_UTIL scan bound.
 *
 * Each edge is called by the CPU's own worker, so the per-CPU line is
 * written by one thread except for the state word (see idle.h). Shared LLC
 * lines are written only when a value changes.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>

#include "cookie.h"
#include "handoff.h"
#include "idle.h"
#include "internal.h"
#include "numa.h"
#include "widen.h"

#define UTIL_ONE 1024      /* fixed point: 1024 = every registered CPU busy */
#define SIS_UTIL_PCT 117   /* the kernel's imbalance_pct at the LLC: scanning stops near 85% */

/* Are cpu's SMT siblings (m is cpu's map) all available? cpu itself is not
 * looked at. A pointer walk over the core's slice of llc_cpus (what
 * place__sibling() indexes): the idle edge's cheapest form, measured (the
 * sib_next ring cost the common edge a stack frame here). */
PLACE_INLINE bool siblings_available(const struct place *p, const struct place_cpu_map *m, int cpu)
{
	for (const int *sib = &p->llc_cpus[m->core_at], *end = sib + m->smt; sib < end; sib++)
		if (*sib != cpu && !place__st_available(place__state(p, *sib)))
			return false;
	return true;
}

bool place__core_available(const struct place *p, int cpu)
{
	return place__st_available(place__state(p, cpu)) && siblings_available(p, &p->map[cpu], cpu);
}

/* EXACT's part of idle_publish(), out of line. */
PLACE_NOINLINE void publish_exact(struct place *p, int cpu)
{
	const struct place_cpu_map *m = &p->map[cpu];
	struct place_llc *llc = &p->llc[m->llc];

	if (place_mask_set(llc->icpus, m->pos))
		place__llc_idle_note(llc); /* WIDEN's summary (widen.h) */
	if (place__core_available(p, cpu) && place_mask_set(llc->icores, m->core_lo))
		place__llc_cores_note(p, llc); /* WIDEN's idle-core summary (widen.h) */
}

/*
 * cpu has just become available (it entered idle with nothing pending, or
 * its claim ended while it was idle): tell the LLC.
 * SIS_CORE (seed 001 patch 3): set its bit only if no SMT sibling's bit is
 * set: one bit per core is enough to reach the core, and the scans spread
 * wakeups over cores. The caller's RMW on the state word came first; the
 * fence orders it before the mask loads (partner: repair() in select.c).
 * SIS_CORE and LINEAR: has_idle_cores when the whole core is available.
 * EXACT: the CPU's bit, and the core's bit when the whole core is.
 */
PLACE_INLINE void idle_publish(struct place *p, int cpu, struct place_llc *llc)
{
	const struct place_cpu_map *m = &p->map[cpu];

	place_fence_rmw_load(); /* our IDLE/claim RMW before the mask loads; pairs with repair() */
	/* SIS_CORE: own bit first, a claim or a run never clears it */
	if (p->policy == PLACE_POLICY_SIS_CORE) {
		if (!place_mask_test(llc->icpus, m->pos) && !place_mask_any_in(llc->icpus, m->core_lo, m->smt) &&
		    place_mask_set(llc->icpus, m->pos))
			place__llc_idle_note(llc); /* WIDEN's summary (widen.h) */
	} else if (p->policy == PLACE_POLICY_EXACT) {
		publish_exact(p, cpu);
		return;
	}
	if (!place_load_32(&llc->has_idle_cores) && siblings_available(p, m, cpu) &&
	    place_cas_32(&llc->has_idle_cores, 0, 1))
		place__llc_cores_note(p, llc); /* WIDEN's idle-core summary (widen.h) */
	/* SIS_UTIL said "overloaded, do not scan": an idle CPU may make it stale */
	if (!place_load_32(&llc->nr_idle_scan))
		place_cas_32(&llc->nr_idle_scan, 0, PLACE_SCAN_RECHECK);
}

void place__idle_publish(struct place *p, int cpu)
{
	idle_publish(p, cpu, p->cpu[cpu].llc);
}

/* EXACT: cpu is no longer available (busy, claimed, unregistered). */
void place__exact_unpublish(struct place *p, int cpu)
{
	const struct place_cpu_map *m = &p->map[cpu];
	struct place_llc *llc = &p->llc[m->llc];

	place_mask_clear(llc->icpus, m->pos);
	place_mask_clear(llc->icores, m->core_lo);
}

/*
 * cpu stopped being available for good (its worker left, or the topology
 * lost it): its bit leaves the mask. Under SIS_CORE that bit may have stood
 * for an idle sibling (the core granule): the available siblings publish
 * themselves again. The caller's RMW on cpu's state came first.
 */
void place__idle_withdraw(struct place *p, int cpu)
{
	const struct place_cpu_map *m = &p->map[cpu];

	if (p->policy == PLACE_POLICY_EXACT) {
		place__exact_unpublish(p, cpu);
		return;
	}
	if (p->policy != PLACE_POLICY_SIS_CORE || !place_mask_clear(p->llc[m->llc].icpus, m->pos))
		return;
	for (int i = 0; i < m->smt; i++) {
		int sib = place__sibling(p, m, i);

		if (sib != cpu && place__st_available(place__state(p, sib)))
			place__idle_publish(p, sib);
	}
}

/* A delivery or release changed cpu's state from before to after: if that
 * made it available again, it goes back into the mask (user space has no
 * idle balancer to find a CPU that fell out). */
void place__after_delivery(struct place *p, int cpu, uint64_t before, uint64_t after)
{
	if (!place__st_available(before) && place__st_available(after))
		place__idle_publish(p, cpu);
}

/* ---- SIS_UTIL ---------------------------------------------------------- */

/* nr_idle_scan = weight * (1 - min(1, (util * 117/100)^2)), util in
 * UTIL_ONE units: the full LLC when idle, 0 from about 85% busy. */
uint32_t place__scan_bound(uint64_t weight, uint64_t util)
{
	uint64_t x = util * SIS_UTIL_PCT / 100;

	if (x >= UTIL_ONE)
		return 0;
	return (uint32_t)(weight * (UTIL_ONE * UTIL_ONE - x * x) / (UTIL_ONE * UTIL_ONE));
}

/* Is the run of a task with average avg (0: none yet) timed at weight 1
 * whatever else (run_weight())? The recompute reads it from curr_avg_ns. */
static inline bool always_timed(const struct place *p, uint64_t avg)
{
	return !avg || avg >= p->timed_run_ns;
}

/* cpu's run time until now: its finished runs, and the current run's part
 * when that run is timed at weight 1 (a sampled or untimed one counts at
 * its end). */
static uint64_t busy_until(const struct place *p, const struct place_cpu *c, uint64_t now)
{
	uint64_t start = place_load_64(&c->stamp);
	bool timed = place_load_32(&c->running) && always_timed(p, place_load_64(&c->curr_avg_ns));

	return place_load_64(&c->busy_ns) + (timed && now > start ? now - start : 0);
}

/*
 * The scan bound is recomputed at most once per util_period_ns: from
 * run_end (the edge every busy CPU passes often), and from a wakeup that
 * the bound stops or cuts short (place__util_fresh, place__util_refresh),
 * so that a quiet LLC, where no run_end comes, does not keep a bound older
 * than its period. The common case is one relaxed load and a compare
 * (place__util_due); then the CPU whose CAS moves util_stamp forward does
 * the recompute and everyone else goes on.
 */
static inline void util_tick(struct place *p, int l, uint64_t now)
{
	uint64_t stamp;

	if (place__util_due(p, l, now, &stamp))
		place__util_recompute(p, l, now, stamp);
}

/* A wakeup's scan in LLC l stopped at the bound: recompute it now if its
 * period has passed, for the next wakeups (a clock read, on these only). */
void place__util_refresh(struct place *p, int l)
{
	util_tick(p, l, place__now(p));
}

/*
 * util_avg is a decayed average: each period that passed halves the old
 * value, the sample (the busy fraction since the last recompute) fills the
 * rest. A quiet LLC so catches up at once. The sample is each online CPU's
 * run time since the last recompute (util_seen), over the online workers
 * (nr_registered): an offline CPU's time is left out, and one that comes
 * back (place_set_topology) brings none of its past. nr_idle_scan is
 * stored only when it changes, RECHECK with a 0 when a CPU is idle.
 * Returns the bound.
 */
uint32_t place__util_recompute(struct place *p, int l, uint64_t now, uint64_t stamp)
{
	struct place_llc *llc = &p->llc[l];
	uint64_t busy = 0, nreg, sample, avg, periods;
	uint32_t nr;
	bool idle = false;

	if (!place_cas_64(&llc->util_stamp, &stamp, now))
		return place_load_32(&llc->nr_idle_scan) & PLACE_SCAN_NR; /* another CPU does this period */
	for (int pos = 0; pos < llc->weight; pos++) {
		int cpu = place__llc_cpu(p, l, pos);
		uint64_t b = busy_until(p, &p->cpu[cpu], now), seen = place_load_64(&p->util_seen[cpu]);
		uint64_t s = place__state(p, cpu);

		/* b < seen: a torn busy_ns/running/stamp read, this CPU skipped */
		if (b > seen && !(s & PLACE_ST_OFFLINE))
			busy += b - seen;
		place_store_64(&p->util_seen[cpu], b);
		idle |= place__st_available(s);
	}
	nreg = place_load_64(&llc->nr_registered);
	if (!nreg)
		return place_load_32(&llc->nr_idle_scan) & PLACE_SCAN_NR;
	sample = busy * UTIL_ONE / ((now - stamp) * nreg);
	if (sample > UTIL_ONE)
		sample = UTIL_ONE;
	periods = p->util_period_ns ? (now - stamp) / p->util_period_ns : 1;
	if (periods >= 64)
		avg = sample;
	else
		avg = (place_load_64(&llc->util_avg) >> periods) + sample - (sample >> periods);
	place_store_64(&llc->util_avg, avg);
	nr = place__scan_bound(nreg, avg);
	if ((nr | (!nr && idle ? PLACE_SCAN_RECHECK : 0)) != place_load_32(&llc->nr_idle_scan))
		place_store_32(&llc->nr_idle_scan, nr | (!nr && idle ? PLACE_SCAN_RECHECK : 0));
	return nr;
}

/* ---- the worker's edges ------------------------------------------------ */

/* d (a dense CPU or an error) unless its worker still runs a task. */
PLACE_INLINE int between_tasks(const place *p, int d)
{
	return d >= 0 && place_load_32(&p->cpu[d].running) ? place__why(-EBUSY, PLACE_WHY_RUNNING, p->map[d].os, 0)
							     : d;
}

PLACE_EXTERN int place_idle_enter(place *p, int cpu)
{
	struct place_stat_slot *slot;
	struct place_cpu *c;
	int d = place__worker_line(p, cpu, &c);

	if (d < 0)
		return d;
	slot = &p->slot[d];
	if (place_load_32(&c->running))
		return place__why(-EBUSY, PLACE_WHY_RUNNING, cpu, 0);
	place_count_64(&slot->v[PLACE_STAT_idle_enters], 1);
	/* One atomic OR, then the word as it is after it. Partners: a claim
	 * ending in start_delivery() or place_claim_release(), an RMW on the
	 * same word (whichever comes second sees the other: it publishes, or
	 * our load sees no claim and we do; twice is harmless), and repair()
	 * through the fence in place__idle_publish(). */
	place_or_64(&c->state, PLACE_ST_IDLE);
	/* Not while a wakeup is pending here (seed 001 patch 1): the claimed or
	 * stacked task is on its way, and this CPU is about to be busy. */
	if (place__st_available(place_load_64(&c->state)))
		idle_publish(p, d, c->llc);
	/* only a cookie refusal sets it: a forced-idle period ends (a tail
	 * call, so that the common path needs no stack frame) */
	return slot->forced_since ? place__cookie_idle(p, d) : 0;
}

/* t's mark on OS cpu os, if t still has it, goes (a CAS: that CPU's
 * worker may have stored another task since). */
PLACE_INLINE void sleeper_drop(struct place *p, const place_task *t, int os)
{
	uint64_t self = (uint64_t)(uintptr_t)t;
	int from = place__dense(p, os);

	if (from >= 0 && place_load_64(&p->slot[from].sleeper) == self)
		place_cas_64(&p->slot[from].sleeper, &self, 0);
}

void place__sleeper_drop(struct place *p, const place_task *t, int os)
{
	sleeper_drop(p, t, os);
}

/* t starts on OS cpu: the CPU it last slept on, if another, is no longer
 * its for the spread (slot.sleeper). */
PLACE_INLINE void sleeper_moves(struct place *p, int cpu, const place_task *t, const struct place_task_rec *r)
{
	if (r->prev_cpu != cpu)
		sleeper_drop(p, t, r->prev_cpu);
}

/* t's run on dense d ended with how: asleep, t keeps d for the spread
 * (slot.sleeper); exiting, it gives d back if it had it. */
PLACE_INLINE void sleeper_mark(struct place *p, int d, const place_task *t, unsigned how)
{
	uint64_t *mark = &p->slot[d].sleeper, self = (uint64_t)(uintptr_t)t;

	if (how == PLACE_RUN_SLEEP)
		place_store_64(mark, self);
	else if (how == PLACE_RUN_EXIT && place_load_64(mark) == self)
		place_store_64(mark, 0);
}

/*
 * t leaves the queue it was counted in (wherever it was woken to) and cpu
 * leaves idle. Delivered where it was sent: one CAS does both. Stolen by
 * cpu from another CPU: our idle bit, then its queue; that CPU goes back
 * into the mask if it is idle with nothing else pending.
 */
PLACE_INLINE void start_delivery(struct place *p, int cpu, struct place_task_rec *r)
{
	int from = place__dense(p, r->queued_cpu);
	uint64_t before, after, fb, fa;

	before = place__st_deliver(&p->cpu[cpu].state, true, from == cpu, r->claim_gen, &after);
	if (from >= 0 && from != cpu) {
		/* RMW on the other CPU's word; partner: its idle_enter (one of
		 * the two sees the other, so an idle CPU is republished once) */
		fb = place__st_deliver(&p->cpu[from].state, false, true, r->claim_gen, &fa);
		if (r->claim_gen && (fb & PLACE_ST_CLAIMED) && !(fa & PLACE_ST_CLAIMED))
			place_count_64(&p->slot[cpu].v[PLACE_STAT_claims_stolen], 1);
		place__after_delivery(p, from, fb, fa);
	}
	if ((before & PLACE_ST_IDLE) && p->policy == PLACE_POLICY_EXACT)
		place__exact_unpublish(p, cpu);
	r->queued_cpu = -1;
	r->claim_gen = 0;
}

/* What every task edge checks first: cpu has a worker, t is a record.
 * Returns the dense CPU or a negative errno. */
PLACE_INLINE int task_edge(place *p, int cpu, place_task *t, struct place_task_rec **r)
{
	int d = place__worker_cpu(p, cpu);

	if (d >= 0 && !(*r = place__task_rec(t)))
		return -EINVAL;
	return d;
}

/*
 * No clock read on the common run edge. A run is timed (its
 * run_begin and run_end read the clock) when its task has no estimate yet
 * or a long one (always_timed(): every run, weight 1), or belongs to a
 * timed run interval, or is the one run in PLACE_RUN_SAMPLE of short tasks
 * that the CPU's count picks (per CPU, not per task: a task that runs
 * rarely is sampled all the same). Utilization takes a timed run's length
 * times its weight: 1, or PLACE_RUN_SAMPLE for a picked one, which stands
 * for the untimed runs around it (an estimate of run time, as perf's
 * sampling is; exact for long runs, whose clock reads cost nothing in
 * comparison).
 * The short-task estimate takes only intervals timed from their start: a
 * short task's interval is timed when its first run is picked, so its
 * average moves on one interval in PLACE_RUN_SAMPLE.
 * Returns the run's weight and PLACE_RUN_TIMED; sets t's interval state.
 */
PLACE_INLINE uint8_t run_weight(const struct place *p, struct place_stat_slot *s, struct place_task_rec *r)
{
	uint8_t w;

	if (always_timed(p, r->avg_run_ns))
		w = 1;
	else
		w = ++s->run_seq % PLACE_RUN_SAMPLE ? 0 : PLACE_RUN_SAMPLE;
	if (r->run_interval == PLACE_IVL_NONE)
		r->run_interval = w ? PLACE_IVL_TIMED : PLACE_IVL_UNTIMED;
	return w || r->run_interval == PLACE_IVL_TIMED ? w | PLACE_RUN_TIMED : 0;
}

/* What run_begin checks of t's record before anything changes: a record
 * that holds something of another instance (it means nothing here; a
 * re-initialised one drops that instead), a NUMA group beyond the
 * instance's arrays. *group and *cookie get t's values, each read once
 * (set_group and set_cookie may race). */
PLACE_INLINE int begin_check(const place *p, struct place_task_rec *r, uint32_t *group, uint64_t *cookie)
{
	if (r->owner != p->id && place__task_check(p, r))
		return -EXDEV;
	*group = place_load_32(&r->group);
	if (place__numa_check(p, *group))
		return -ENOSPC;
	*cookie = place_load_64(&r->cookie);
	return 0;
}

/* t, admitted by its core, starts on dense d (OS cpu): a forced-idle
 * period of d ends, t's claim or queue slot ends, its node counts its
 * group (unless d's node counts that group for prev, a switch's). stamped:
 * the caller has just stored the clock in c->stamp. handed: a hand-off
 * (place_run_handoff), so t holds nothing and d runs (not IDLE): no
 * delivery to end. */
PLACE_INLINE void begin_commit(place *p, int d, int cpu, place_task *t, struct place_task_rec *r,
			       uint32_t group, uint64_t cookie, bool stamped, bool handed)
{
	/* both lines once, in registers: every atomic below is a compiler
	 * barrier that would make p->cpu and p->slot be loaded again */
	struct place_cpu *c = &p->cpu[d];
	struct place_stat_slot *s = &p->slot[d];

	/* a forced-idle period ends (only a cookie refusal starts one: no
	 * place__cookie_on() test for the CPUs that never have one) */
	if (s->forced_since)
		place__cookie_forced_end(p, d, place__now(p));
	if (!handed)
		start_delivery(p, d, r);
	if (s->curr_group != group || r->numa_pending) {
		place__numa_end(p, d);
		place__numa_begin(p, d, r, group);
	}
	r->run_weight = run_weight(p, s, r);
	/* stamp and curr_avg_ns before running: the recompute reads all three */
	if ((r->run_weight & PLACE_RUN_TIMED) && !stamped)
		place_store_64(&c->stamp, place__now(p));
	place_store_64(&c->curr_avg_ns, r->avg_run_ns);
	place_store_32(&c->running, 1);
	c->curr_cookie = cookie; /* what run_end gives back to the core */
	sleeper_moves(p, cpu, t, r);
	r->prev_cpu = cpu;
	/* last: a wakeup that sees t here refuses it (place__task_running) */
	place_store_ptr_rel((void **)&c->curr, t);
}

PLACE_EXTERN int place_run_begin(place *p, int cpu, place_task *t)
{
	struct place_task_rec *r;
	int d = between_tasks(p, task_edge(p, cpu, t, &r)), err;
	uint64_t cookie;
	uint32_t group;

	if (d < 0)
		return d;
	if ((err = begin_check(p, r, &group, &cookie)))
		return err;
	/* COOKIES: the core admits t's cookie before anything changes, so
	 * that a refusal changes nothing. */
	if (place__cookie_on(p, d) && place__cookie_enter(p, d, cookie))
		return place__why(place__cookie_refused(p, d, cookie), PLACE_WHY_COOKIE, cpu, 0);
	begin_commit(p, d, cpu, t, r, group, cookie, false, false);
	return 0;
}

/* The kernel's update_avg(): an eighth of the way to each new sample. */
static uint64_t update_avg(uint64_t avg, uint64_t sample)
{
	if (!avg)
		return sample;
	return sample >= avg ? avg + (sample - avg) / 8 : avg - (avg - sample) / 8;
}

/* A timed run ends on cpu: its length goes to t's interval and, weighted,
 * to the CPU's run time; the scan bound's period may have passed. */
PLACE_INLINE void run_timed_end(struct place *p, int cpu, struct place_task_rec *r)
{
	struct place_cpu *c = &p->cpu[cpu];
	uint64_t now = place__now(p), ran = now > c->stamp ? now - c->stamp : 0;

	r->run_accum_ns += ran;
	place_store_64(&c->busy_ns, c->busy_ns + ran * (r->run_weight & ~PLACE_RUN_TIMED));
	place_store_64(&c->stamp, now);
	util_tick(p, p->map[cpu].llc, now);
}

/* run_end refused t on cpu (dense d): say why (place_last_error). */
PLACE_NOINLINE int run_end_refused(const struct place *p, int d, const place_task *t, unsigned how)
{
	const place_task *curr = p->cpu[d].curr;
	int os = p->map[d].os, at = place__task_running(p, t);

	if (how > PLACE_RUN_PREEMPT)
		return place__why(-EINVAL, PLACE_WHY_END_HOW, os, (int)how);
	if (!curr)
		return place__why(-EINVAL, PLACE_WHY_END_NONE, os, 0);
	if (at >= 0)
		return place__why(-EINVAL, PLACE_WHY_END_ELSEWHERE, os, p->map[at].os);
	return place__why(-EINVAL, PLACE_WHY_END_OTHER, os, 0);
}

/* What every run end checks: t is the task running on cpu, how is known.
 * Returns the dense CPU or a negative errno. */
PLACE_INLINE int end_check(place *p, int cpu, place_task *t, unsigned how, struct place_task_rec **r)
{
	int d = task_edge(p, cpu, t, r);

	if (d >= 0 && (how > PLACE_RUN_PREEMPT || p->cpu[d].curr != t))
		return run_end_refused(p, d, t, how);
	return d;
}

/* t (checked) stops running on dense d (OS cpu) with how: its queue slot
 * (PREEMPT) and its run time. Its core and node are the caller's. */
PLACE_INLINE void end_run(place *p, int d, int cpu, struct place_task_rec *r, unsigned how)
{
	if (how == PLACE_RUN_PREEMPT) {
		/* Still runnable here: it counts in this CPU's queue again. */
		place__st_enqueue(&p->cpu[d].state);
		r->queued_cpu = cpu;
		r->claim_gen = 0;
		r->owner = p->id;
	}
	if (r->run_weight & PLACE_RUN_TIMED)
		run_timed_end(p, d, r);
}

/* Nothing runs on dense d any more. Called after every write to the task
 * record that stopped: curr goes last, with release, so that a wakeup that
 * no longer sees that task here (place__task_running) sees its whole run
 * end; the record is the waker's from then on. */
PLACE_INLINE void cpu_stop(place *p, int d)
{
	struct place_cpu *c = &p->cpu[d];

	place_store_32(&c->running, 0); /* before curr_avg_ns: see busy_until() */
	place_store_64(&c->curr_avg_ns, 0);
	place_store_ptr_rel((void **)&c->curr, NULL);
}

/* t's run interval ends with how (SLEEP: the short-task estimate). */
PLACE_INLINE void end_interval(struct place_task_rec *r, unsigned how)
{
	if (how == PLACE_RUN_SLEEP) {
		/* the estimate: timed intervals only; never 0 once there is one
		 * (0 means none, always timed: a 0 ns interval reads as 1 ns) */
		if (r->run_interval == PLACE_IVL_TIMED)
			r->avg_run_ns = update_avg(r->avg_run_ns, r->run_accum_ns | !r->run_accum_ns);
		r->run_accum_ns = 0;
		r->run_interval = PLACE_IVL_NONE;
	}
}

/* place_run_end's body: the dense CPU, or a negative errno. *forced gets
 * the forced-idle bits its leave took (COOKIES: the core's CPUs that a
 * cookie refused and that may retry now), else 0. */
PLACE_INLINE int run_end(place *p, int cpu, place_task *t, unsigned how, uint32_t *forced)
{
	struct place_task_rec *r;
	int d = end_check(p, cpu, t, how, &r);

	if (d < 0)
		return d;
	*forced = 0;
	if (place__cookie_on(p, d)) /* t no longer runs on the core */
		*forced = place__cookie_leave(p, d, p->cpu[d].curr_cookie);
	place__numa_end(p, d); /* nor on the node, for its group */
	end_run(p, d, cpu, r, how);
	end_interval(r, how);
	sleeper_mark(p, d, t, how);
	cpu_stop(p, d);
	return d;
}

PLACE_EXTERN int place_run_end(place *p, int cpu, place_task *t, unsigned how)
{
	uint32_t forced;
	int d = run_end(p, cpu, t, how, &forced);

	return d < 0 ? d : 0;
}

PLACE_EXTERN int place_run_end_retry(place *p, int cpu, place_task *t, unsigned how, int *retry, int max)
{
	uint32_t forced;
	int d;

	if (max < 0 || (!retry && max > 0))
		return -EINVAL;
	d = run_end(p, cpu, t, how, &forced);
	if (d < 0 || !forced)
		return d < 0 ? d : 0;
	return place__cookie_retry(p, d, forced, retry, max);
}

/* handoff_check() refused next (record r) for dense d: say why
 * (place_last_error), in its order. */
PLACE_NOINLINE int handoff_refused(const struct place *p, int d, const place_task *t,
				   const struct place_task_rec *r)
{
	int at = place__task_running(p, t), os = p->map[d].os;

	if (at >= 0)
		return place__why(-EALREADY, PLACE_WHY_WOKEN_RUNNING, p->map[at].os, 0);
	if (place__rec_holds(r))
		return place__fail(-EBUSY, "place_run_handoff: the task holds a %s from an earlier wakeup "
				   "(place_run_switch to it)", r->queued_cpu >= 0 ? "claim or queue slot" : "NUMA move");
	if (!place__allowed(p, t, d))
		return place__fail(-EPERM, "place_run_handoff: cpu %d is not in the task's cpu_set_t", os);
	return place__fail(-ENODEV, "place_run_handoff: cpu %d is not in the current topology", os);
}

/*
 * place_run_handoff's checks of next, which prev woke for dense d, beyond
 * place_run_switch's: what place_wakeup(next, d's CPU, PLACE_WAKE_CURRENT)
 * refuses (next still running), what makes that wakeup go elsewhere (next
 * may not run on d, d left the current topology) and a next that a wakeup
 * already placed (its slot ends at a run_begin, not here). *probes gets
 * that wakeup's probes: d's, and next's previous CPU's.
 */
PLACE_INLINE int handoff_check(const struct place *p, int d, const place_task *t, const struct place_task_rec *r,
			       uint64_t *probes)
{
	int prev = place__dense(p, r->prev_cpu);

	if ((prev >= 0 && place_load_ptr_acq((void *const *)&p->cpu[prev].curr) == t) || place__rec_holds(r) ||
	    !place__allowed(p, t, d) || !place__st_usable(place__state(p, d)))
		return handoff_refused(p, d, t, r);
	*probes = 1 + (prev >= 0 && place__allowed(p, t, prev)); /* as the wakeup's (wake_init) */
	return 0;
}

/*
 * run_end(prev, how) then run_begin(next) as one step: the CPU stays
 * running (its worker's thread never is between tasks for a waker or the
 * scan bound), one clock read serves both when prev's run was timed, the
 * node's count (NUMA) is left as it is when next carries prev's group, and
 * the core's word (COOKIES) changes at most its cookie, in one CAS. Where
 * that would pass over a sibling (place__cookie_switch) nothing changes:
 * the two calls decide, and name the siblings. handoff (a constant at each
 * caller): place_run_handoff, prev's wakeup of next for this CPU too,
 * checked before anything changes and recorded before prev's run ends
 * (the flips read the run's stamp as "now", as that wakeup did).
 */
PLACE_INLINE int run_switch(place *p, int cpu, place_task *prev, unsigned how, place_task *next, bool handoff)
{
	struct place_task_rec *pr, *r = NULL;
	int d = end_check(p, cpu, prev, how, &pr), err;
	uint64_t cookie, probes = 0;
	uint32_t group;
	bool stamped;

	if (d >= 0 && !(r = place__task_rec(next)))
		return -EINVAL;
	if (d < 0 || (err = begin_check(p, r, &group, &cookie)))
		return d < 0 ? d : err;
	if (handoff && (err = handoff_check(p, d, next, r, &probes)))
		return err;
	if (place__cookie_on(p, d) && place__cookie_switch(p, d, p->cpu[d].curr_cookie, cookie))
		return place__why(-EAGAIN, PLACE_WHY_SWITCH, cpu, 0);
	if (handoff) {
		place__handoff_note(p, d, pr, next, cookie, probes);
		r->owner = p->id; /* as that wakeup's commit */
	}
	stamped = pr->run_weight & PLACE_RUN_TIMED; /* end_run reads the clock into c->stamp */
	end_run(p, d, cpu, pr, how);
	end_interval(pr, how);
	sleeper_mark(p, d, prev, how);
	begin_commit(p, d, cpu, next, r, group, cookie, stamped, handoff);
	return 0;
}

PLACE_EXTERN int place_run_switch(place *p, int cpu, place_task *prev, unsigned how, place_task *next)
{
	return run_switch(p, cpu, prev, how, next, false);
}

PLACE_EXTERN int place_run_handoff(place *p, int cpu, place_task *prev, unsigned how, place_task *next)
{
	return run_switch(p, cpu, prev, how, next, true);
}
