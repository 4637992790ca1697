/*
 * libFuzzer target: sequences of engine calls decoded from bytes.
 *
 * Input: byte 0 picks a small synthetic topology (SMT2, two LLCs with Linux
 * numbering, SMT4, no SMT, a 72-CPU LLC), byte 1 the policy, byte 2 the
 * feature bits; then each operation is an opcode byte followed by its
 * argument bytes (reading past the end gives zeros). The operations are every
 * engine call: register, unregister, wakeup, idle_enter, run_begin, run_end,
 * claim_release, stats_read, task_set_cpus, task_set_cookie (cookies 0, 1,
 * 2), task_set_group (groups 0, 1, 2 and one above max_groups; byte 0 from
 * 0xf0 up picks a topology of two NUMA nodes), task_forget (opcode 11) and
 * set_topology (opcode 23; both were clock steps before they existed), plus
 * a clock step and calls
 * with a NULL instance. Arguments cover invalid values too: CPUs below 0, past
 * cpu_limit, INT_MIN/INT_MAX, NULL and never-initialised task records,
 * unknown flags, unknown run_end modes, empty and short cpu sets.
 *
 * Single-threaded, so an oracle can check exact facts after every call:
 *   - every return is 0/a CPU or one of the call's documented -errno values,
 *     and the errno is the one the arguments call for (wakeup: -EINVAL,
 *     -ENODEV, -ESRCH exactly when expected);
 *   - a failed call changes nothing (state words, running flags, task records);
 *   - a returned CPU is usable, registered and in the task's cpu set;
 *   - a claiming wakeup claims the CPU it returns exactly when that CPU was
 *     available (the single-thread form of "no two claims of one idle CPU");
 *     NOCLAIM changes no state word and no task record;
 *   - the state word of every CPU agrees with the task records: QUEUED counts
 *     exactly the tasks sent there that have not started (claims still held,
 *     stacked and preempted tasks), CLAIMED has exactly one owner whose
 *     generation matches (no lost claim, no orphan claim), IDLE excludes
 *     running;
 *   - no available CPU is missing from its LLC mask: SIS_CORE has a bit in its
 *     core, EXACT its own bit and, for a whole available core, the core bit
 *     (so a CPU whose claim ends while idle is findable again);
 *   - the spread's mark of every CPU (slot.sleeper) is the task that last
 *     slept there, until that task starts on another CPU, exits there or is
 *     forgotten; 0 when none (and a failed call changes no mark);
 *   - statistics: wakeups equals the successful wakeups, the hit_* levels add
 *     up to it, the LLCs add up to the total;
 *   - core scheduling (PLACE_FEAT_COOKIES): run_begin refuses with -EBUSY,
 *     changing nothing, exactly when a sibling runs another cookie; the CPUs
 *     running on one core always run one cookie, and the core's occupancy
 *     word {cookie, count} agrees with them.
 * The state words, masks and marks are checked for calls within place.h's
 * contract. Two calls outside it can be decoded (waking a task that is
 * running; starting a task that is already running); after one of them the
 * harness still checks memory safety, return values and "failure changes
 * nothing", but no longer the state agreement.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cookie.h"
#include "internal.h"
#include "place.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_api: %s:%d: check failed: %s (op #%d %s)\n", __FILE__, \
				__LINE__, #cond, op_index, op_name);                               \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define TRACE(...)                                                                                 \
	do {                                                                                       \
		if (trace)                                                                         \
			fprintf(stderr, __VA_ARGS__);                                              \
	} while (0)

static int op_index;
static const char *op_name = "create";

/*
 * Findings (RELIABILITY.md), fixed in src/select.c by 5d02ef2; their inputs
 * are in tests/fuzz/corpus/api/ as regression tests:
 *   F2  place_wakeup failing with -ESRCH had already dropped the task's
 *       stale claim/queue slot: a failed call changed something.
 *   F3  re-waking a task whose stale claim was on its prev CPU: prev's state
 *       was read before the stale claim was dropped, so prev was seen claimed
 *       (by the task itself) and not re-claimed.
 */
/*
 * F5 (RELIABILITY.md), fixed by 9c6600d; input in tests/fuzz/corpus/api/ as
 * a regression test: with COOKIES, the fallback for a task whose target core
 * runs another cookie could return an available idle CPU without claiming it.
 */
/* Printed at exit: how much of the work ran under the full oracle. */
static unsigned long n_inputs, n_calls, n_checked, n_swaps;

static void report(void)
{
	fprintf(stderr, "fuzz_api: %lu inputs, %lu calls, %lu of them checked with the state agreement, "
		"%lu topology swaps\n", n_inputs, n_calls, n_checked, n_swaps);
}

static int trace; /* PLACE_FUZZ_TRACE=1: print each call and the state words (replaying one input) */

static const char *const sources[] = {
	"synthetic:pack:1 l3:1 core:2 pu:2",                 /* 4 CPUs, SMT2, siblings 2k, 2k+1 */
	"synthetic:pack:2 l3:1 core:2 pu:2(indexes=core)",   /* 8 CPUs, 2 LLCs, siblings N, N+4 */
	"synthetic:pack:1 l3:1 core:2 pu:4",                 /* 8 CPUs, SMT4 */
	"synthetic:pack:1 l3:1 core:3 pu:1",                 /* 3 CPUs, no SMT */
	"synthetic:pack:1 l3:1 core:36 pu:2",                /* 72 CPUs: a two-word LLC mask */
};
#define NR_TOPOS (sizeof(sources) / sizeof(sources[0]))
static place_topo *topos[NR_TOPOS];
/* Byte 0 from 0xf0 up: two NUMA nodes of 2 SMT2 cores (NUMA groups matter). */
#define NUMA_SOURCE "synthetic:pack:2 [numa] l3:1 core:2 pu:2"
static place_topo *numa_topo;
/* place_set_topology's arguments: restrictions of some of the topologies
 * above (the first CPUs, grouped as there) and shapes that are not; the
 * instance's own topology is tried too. */
static const char *const swap_sources[] = {
	"synthetic:pack:1 l3:1 core:1 pu:2",        /* CPUs 0-1, one SMT2 core */
	"synthetic:pack:1 l3:1 core:1 pu:4",        /* CPUs 0-3, one SMT4 core */
	"synthetic:pack:1 l3:1 core:2 pu:1",        /* CPUs 0-1, one core each */
	"synthetic:pack:1 [numa] l3:1 core:2 pu:2", /* CPUs 0-3, node 0 */
	"synthetic:pack:1 l3:1 core:20 pu:2",       /* CPUs 0-39 */
};
#define NR_SWAPS (sizeof(swap_sources) / sizeof(swap_sources[0]))
static place_topo *swap_topos[NR_SWAPS];

#define NT 6            /* valid task records */
#define NR_TASK_ARGS 8  /* + NULL + a record never initialised */
#define NR_SETS 7

enum tstate { T_SLEEP, T_QUEUED, T_RUNNING };

struct run {
	const uint8_t *data;
	size_t size, off;
	place *p;
	const place_topo *topo;
	int nr_cpus, limit, nr_llcs;
	uint64_t now;
	place_task task[NR_TASK_ARGS];
	enum tstate ts[NT];
	int on[NT]; /* T_RUNNING: its OS CPU */
	int workers[128]; /* registrations per dense CPU (PLACE_WORKER_SHARED adds one) */
	bool contract;
	uint64_t wakeups;
	/* The spread's marks as the oracle expects them: per dense CPU the
	 * task whose mark it holds (-1 none), per task that CPU (-1 none). */
	int marker[128];
	int mark_of[NT];
	cpu_set_t *set[NR_SETS];
	size_t set_size[NR_SETS];
};

static uint64_t fuzz_clock(void *arg)
{
	return *(const uint64_t *)arg;
}

static uint8_t next(struct run *r)
{
	return r->off < r->size ? r->data[r->off++] : 0;
}

/* A CPU argument: mostly near the valid range, sometimes far outside. */
static int arg_cpu(struct run *r)
{
	uint8_t b = next(r);

	if (b == 255)
		return INT_MAX;
	if (b == 254)
		return INT_MIN;
	if (b == 253)
		return PLACE_CPU_NONE;
	return (int)(b % (unsigned)(r->limit + 3)) - 1;
}

static int arg_task(struct run *r)
{
	return next(r) % NR_TASK_ARGS;
}

static place_task *task_ptr(struct run *r, int i)
{
	return i == NT ? NULL : &r->task[i];
}

static int dense(const struct run *r, int os)
{
	return place__dense(r->p, os);
}

/* ---- snapshots: "a failed call changes nothing" ------------------------ */

struct snap {
	uint64_t state[128];
	uint32_t running[128];
	uint64_t sleeper[128];
	uint64_t priv[NR_TASK_ARGS][12];
	const cpu_set_t *cpus[NR_TASK_ARGS];
};

static void take_snap(const struct run *r, struct snap *s)
{
	for (int d = 0; d < r->nr_cpus; d++) {
		s->state[d] = r->p->cpu[d].state;
		s->running[d] = r->p->cpu[d].running;
		s->sleeper[d] = r->p->slot[d].sleeper;
	}
	for (int i = 0; i < NR_TASK_ARGS; i++) {
		memcpy(s->priv[i], r->task[i].priv, sizeof(s->priv[i]));
		s->cpus[i] = r->task[i].cpus;
	}
}

static bool same_states(const struct run *r, const struct snap *a, const struct snap *b)
{
	for (int d = 0; d < r->nr_cpus; d++)
		if (a->state[d] != b->state[d] || a->running[d] != b->running[d] || a->sleeper[d] != b->sleeper[d])
			return false;
	return true;
}

static bool same_tasks(const struct snap *a, const struct snap *b)
{
	return memcmp(a->priv, b->priv, sizeof(a->priv)) == 0 &&
	       memcmp(a->cpus, b->cpus, sizeof(a->cpus)) == 0;
}

/* One call under the oracle, the frame the ops share: the snapshots around
 * it, its trace line ("#N what = ret"), its errno against the oracle's
 * expect, and a failed call changed nothing. The op then checks what a
 * successful one changed (ret == 0). */
#define ORACLE_CALL(r, ret, expect, before, after, call, what, ...)                                    \
	do {                                                                                       \
		take_snap((r), (before));                                                          \
		(ret) = (call);                                                                    \
		TRACE("#%d " what " = %d\n", op_index, __VA_ARGS__, (ret));                        \
		take_snap((r), (after));                                                           \
		CHECK((ret) == (expect));                                                          \
		if (ret)                                                                           \
			CHECK(same_states((r), (before), (after)) && same_tasks((before), (after)));       \
	} while (0)

/* ---- the state agreement ----------------------------------------------- */

static void check_agreement(const struct run *r)
{
	const struct place *p = r->p;

	for (int d = 0; d < r->nr_cpus; d++) {
		uint64_t s = p->cpu[d].state;
		int os = p->map[d].os, queued = 0, owners = 0;

		for (int i = 0; i < NT; i++) {
			const struct place_task_rec *rec = place__rec((place_task *)&r->task[i]);

			if (rec->queued_cpu != os)
				continue;
			if (!rec->claim_gen)
				queued++;
			else if ((s & PLACE_ST_CLAIMED) && place__st_gen(s) == rec->claim_gen) {
				queued++;
				owners++;
			}
		}
		CHECK(place__st_queued(s) == (uint32_t)queued);
		CHECK(owners == ((s & PLACE_ST_CLAIMED) ? 1 : 0));
		if (s & PLACE_ST_IDLE)
			CHECK(p->cpu[d].running == 0);
		if (!(s & PLACE_ST_REGISTERED))
			CHECK(p->cpu[d].running == 0 && !(s & PLACE_ST_IDLE));
	}
	/* Each CPU's spread mark is the model's: the task that last slept
	 * there, until it starts elsewhere, exits there or is forgotten. */
	for (int d = 0; d < r->nr_cpus; d++)
		CHECK(p->slot[d].sleeper == (r->marker[d] < 0 ? 0 : (uint64_t)(uintptr_t)&r->task[r->marker[d]]));
	/* No available CPU is lost to the wakeup scans. */
	for (int d = 0; d < r->nr_cpus; d++) {
		const struct place_cpu_map *m = &p->map[d];
		const struct place_llc *llc = &p->llc[m->llc];

		if (!place__st_available(p->cpu[d].state))
			continue;
		if (p->policy == PLACE_POLICY_SIS_CORE)
			CHECK(place_mask_any_in(llc->icpus, m->core_lo, m->smt));
		if (p->policy == PLACE_POLICY_EXACT) {
			CHECK(place_mask_test(llc->icpus, m->pos));
			if (place__core_available(p, d))
				CHECK(place_mask_test(llc->icores, m->core_lo));
		}
	}
}

static void check_stats(const struct run *r)
{
	place_stats tot, l, sum;

	memset(&sum, 0, sizeof(sum));
	CHECK(place_stats_read(r->p, -1, &tot) == 0);
	CHECK(tot.wakeups == r->wakeups);
	CHECK(tot.hit_target + tot.hit_prev + tot.hit_recent + tot.hit_idle_core + tot.hit_idle_cpu +
		      tot.hit_sibling + tot.hit_fallback + tot.hit_prev_smt + tot.hit_widened ==
	      tot.wakeups);
	CHECK(tot.claims <= tot.wakeups);
	for (int i = 0; i < r->nr_llcs; i++) {
		CHECK(place_stats_read(r->p, i, &l) == 0);
		sum.wakeups += l.wakeups;
		sum.claims += l.claims;
		sum.idle_enters += l.idle_enters;
		sum.claims_released += l.claims_released;
	}
	CHECK(sum.wakeups == tot.wakeups && sum.claims == tot.claims);
	CHECK(sum.idle_enters == tot.idle_enters && sum.claims_released == tot.claims_released);
}

/* ---- the operations ---------------------------------------------------- */

static bool task_valid(int i)
{
	return i < NT;
}

/* Any usable CPU (registered, in the current topology) in t's set? */
static bool any_allowed(const struct run *r, const place_task *t)
{
	for (int d = 0; d < r->nr_cpus; d++)
		if (place__st_usable(r->p->cpu[d].state) && place__allowed(r->p, t, d))
			return true;
	return false;
}

/* NUMA: is t's group refused (-ENOSPC) by this instance? */
static bool group_refused(const struct run *r, place_task *t)
{
	return (r->p->feat & PLACE_FEAT_NUMA) && place__rec(t)->group > r->p->max_groups;
}

/* COOKIES: does a sibling of dense d run a task of another cookie? */
static bool sibling_conflict(const struct run *r, int d, uint64_t cookie)
{
	const struct place_cpu_map *m = &r->p->map[d];

	if (!(r->p->feat & PLACE_FEAT_COOKIES) || m->smt < 2)
		return false;
	for (int pos = m->core_lo; pos < m->core_lo + m->smt; pos++) {
		int sib = place__llc_cpu(r->p, m->llc, pos);

		if (sib != d && r->p->cpu[sib].running && r->p->cpu[sib].curr_cookie != cookie)
			return true;
	}
	return false;
}

/* COOKIES: does dense d's core drain for a cookie that waited its turn
 * (cookie.h: DRAIN set, or our cookie runs there, a refused sibling waits
 * and PLACE_COOKIE_TURN_NS passed since the first refusal)? */
static bool core_drains(const struct run *r, int d)
{
	const struct place_core *c = &r->p->core[r->p->map[d].core];
	uint64_t n = c->occ[PLACE_OCC_COUNT];

	if (!(r->p->feat & PLACE_FEAT_COOKIES) || r->p->map[d].smt < 2 || !place__occ_count(n))
		return false;
	return (n & PLACE_OCC_DRAIN) || ((n >> PLACE_OCC_FORCED_SHIFT) && c->turn_since &&
					 r->now > c->turn_since && r->now - c->turn_since >= PLACE_COOKIE_TURN_NS);
}

/* COOKIES: the CPUs running on each core run one cookie, and the core's
 * occupancy word counts them with it. */
static void check_cookies(const struct run *r)
{
	const struct place *p = r->p;

	if (!(p->feat & PLACE_FEAT_COOKIES))
		return;
	for (int d = 0; d < r->nr_cpus; d++) {
		const struct place_cpu_map *m = &p->map[d];
		uint64_t n = 0;

		if (m->smt < 2 || m->pos != m->core_lo)
			continue; /* each core once, from its first CPU */
		for (int pos = m->core_lo; pos < m->core_lo + m->smt; pos++) {
			int sib = place__llc_cpu(p, m->llc, pos);

			if (!p->cpu[sib].running)
				continue;
			n++;
			CHECK(p->cpu[sib].curr_cookie == p->core[m->core].occ[0]); /* isolation */
		}
		/* the running count; the drain and forced-idle bits above it only while n > 0 */
		CHECK(place__occ_count(p->core[m->core].occ[1]) == n);
		CHECK(n || !p->core[m->core].occ[1]);
	}
}

static void op_wakeup(struct run *r)
{
	int ti = arg_task(r), waker = arg_cpu(r);
	unsigned flags = next(r) & 0xbf; /* bit 7 is unknown (bit 6 is not drawn) */
	place_task *t = task_ptr(r, ti);
	int expect = 0, ret, d;
	struct snap before, after;
	bool claim = !(flags & PLACE_WAKE_NOCLAIM) && (r->p->feat & PLACE_FEAT_CLAIM);
	unsigned waker_flags = flags & (PLACE_WAKE_CURRENT | PLACE_WAKE_REMOTE);
	bool refuses[128]; /* as struct snap */

	if (!task_valid(ti) || (flags & ~0x3fu) || (waker_flags && waker == PLACE_CPU_NONE) ||
	    waker_flags == (PLACE_WAKE_CURRENT | PLACE_WAKE_REMOTE))
		expect = -EINVAL; /* a hand-off or a remote hint needs the waker's CPU */
	else if (waker != PLACE_CPU_NONE && dense(r, waker) < 0)
		expect = -ENODEV;
	else if (group_refused(r, t))
		expect = -ENOSPC;
	else if (r->ts[ti] == T_RUNNING)
		expect = -EALREADY; /* a run edge still to come: refused, nothing changes */
	else if (!any_allowed(r, t))
		expect = -ESRCH;
	/* COOKIES: the cores that do not admit t's cookie now (running or
	 * waiting work of another), where an idle CPU may be returned unclaimed */
	for (int k = 0; task_valid(ti) && k < r->nr_cpus; k++)
		refuses[k] = (r->p->feat & PLACE_FEAT_COOKIES) &&
			     !place__cookie_admits(r->p, k, place__rec(t)->cookie);
	take_snap(r, &before);
	ret = place_wakeup(r->p, t, waker, flags);
	take_snap(r, &after);
	TRACE("#%d wakeup(task %d, waker %d, flags %#x) = %d (expected %d)", op_index, ti, waker, flags,
	      ret, expect);
	if (task_valid(ti))
		TRACE(" task: prev %d queued %d gen %u -> prev %d queued %d gen %u",
		      ((const struct place_task_rec *)before.priv[ti])->prev_cpu,
		      ((const struct place_task_rec *)before.priv[ti])->queued_cpu,
		      ((const struct place_task_rec *)before.priv[ti])->claim_gen, place__rec(t)->prev_cpu,
		      place__rec(t)->queued_cpu, place__rec(t)->claim_gen);
	TRACE("\n");
	for (int k = 0; trace && k < r->nr_cpus; k++)
		TRACE("   after: cpu %d state %#llx\n", r->p->map[k].os, (unsigned long long)after.state[k]);
	if (!r->contract && (ret == -EALREADY) != (expect == -EALREADY))
		return; /* one task run on two CPUs: which run is on is the library's */
	if (ret < 0) {
		CHECK(ret == expect);
		CHECK(same_states(r, &before, &after) && same_tasks(&before, &after));
		return;
	}
	CHECK(expect == 0);
	r->wakeups++;
	d = dense(r, ret);
	CHECK(d >= 0);
	CHECK(place__st_usable(r->p->cpu[d].state)); /* registered, not OFFLINE */
	CHECK(place__allowed(r->p, t, d));
	if (flags & PLACE_WAKE_NOCLAIM) {
		CHECK(same_states(r, &before, &after));
		CHECK(memcmp(before.priv[ti], after.priv[ti], sizeof(before.priv[ti])) == 0);
		return;
	}
	{
		const struct place_task_rec *rec = place__rec(t);
		const struct place_task_rec *old = (const struct place_task_rec *)before.priv[ti];
		uint64_t s = before.state[d];
		bool was_avail;

		/* Waking a task that still holds a slot gives that up first
		 * (drop_stale_delivery): the CPU it returns may be that one. */
		if (old->queued_cpu == ret) {
			if (old->claim_gen && (s & PLACE_ST_CLAIMED) && place__st_gen(s) == old->claim_gen)
				s = (s & ~PLACE_ST_CLAIMED) - PLACE_ST_QUEUED_ONE;
			else if (!old->claim_gen && place__st_queued(s))
				s -= PLACE_ST_QUEUED_ONE;
		}
		was_avail = place__st_available(s);

		CHECK(rec->queued_cpu == ret);
		if (claim) {
			/* Claimed exactly when the CPU it returns was available,
			 * unless its core runs or queues another cookie (COOKIES:
			 * an idle CPU of a core that does not admit t, the
			 * fallback's target, is not claimed; t queues). */
			CHECK(!rec->claim_gen || was_avail);
			/* a hand-off queues on the waker's CPU, never claims it */
			if (was_avail && !rec->claim_gen)
				CHECK(((flags & PLACE_WAKE_CURRENT) && ret == waker) || refuses[d]); /* F5 */
			if ((flags & PLACE_WAKE_CURRENT) && ret == waker)
				CHECK(!rec->claim_gen);
			if (rec->claim_gen) {
				CHECK(after.state[d] & PLACE_ST_CLAIMED);
				CHECK(place__st_gen(after.state[d]) == rec->claim_gen);
			}
		} else {
			CHECK(rec->claim_gen == 0);
		}
	}
	if (r->ts[ti] != T_RUNNING)
		r->ts[ti] = T_QUEUED;
}

/* What a call on a CPU checks first: the CPU (dense d) is in the
 * topology, then its state holds bit (a worker, a claim). */
static int cpu_errno(const struct run *r, int d, uint64_t bit)
{
	if (d < 0)
		return -ENODEV;
	return r->p->cpu[d].state & bit ? 0 : -ENOENT;
}

/* What every call of a CPU's worker with task ti checks first, in order:
 * the CPU (dense d), its worker, the task record. */
static int worker_task_errno(const struct run *r, int d, int ti)
{
	return cpu_errno(r, d, PLACE_ST_REGISTERED) ?: (task_valid(ti) ? 0 : -EINVAL);
}

/* Task i gives its mark up (it starts elsewhere, exits, is forgotten). */
static void mark_drop(struct run *r, int i)
{
	if (r->mark_of[i] >= 0)
		r->marker[r->mark_of[i]] = -1;
	r->mark_of[i] = -1;
}

/* Task i ended a run asleep on dense d: d's mark is now i's. */
static void mark_set(struct run *r, int d, int i)
{
	if (r->marker[d] >= 0)
		r->mark_of[r->marker[d]] = -1;
	mark_drop(r, i);
	r->marker[d] = i;
	r->mark_of[i] = d;
}

static void op_run_begin(struct run *r)
{
	int cpu = arg_cpu(r), ti = arg_task(r), d = dense(r, cpu), ret, expect = worker_task_errno(r, d, ti);
	place_task *t = task_ptr(r, ti);
	struct snap before, after;

	if (!expect && r->p->cpu[d].running)
		expect = -EBUSY;
	else if (!expect && group_refused(r, t))
		expect = -ENOSPC;
	else if (!expect && (sibling_conflict(r, d, place__rec(t)->cookie) || core_drains(r, d)))
		expect = -EBUSY; /* core scheduling: refused, nothing changes */
	if (!expect && r->ts[ti] == T_RUNNING)
		r->contract = false; /* one task on two CPUs: outside the contract */
	ORACLE_CALL(r, ret, expect, &before, &after, place_run_begin(r->p, cpu, t), "run_begin(cpu %d)", cpu);
	if (ret)
		return;
	CHECK(r->p->cpu[d].running && !(after.state[d] & PLACE_ST_IDLE));
	CHECK(place__rec(t)->queued_cpu == -1 && place__rec(t)->claim_gen == 0);
	r->ts[ti] = T_RUNNING;
	r->on[ti] = cpu;
	if (r->mark_of[ti] != d)
		mark_drop(r, ti);
}

static void op_run_end(struct run *r)
{
	int cpu = arg_cpu(r), ti = arg_task(r), d = dense(r, cpu), ret, expect = worker_task_errno(r, d, ti);
	unsigned how = next(r) % 4;
	place_task *t = task_ptr(r, ti);
	struct snap before, after;

	if (!expect && (how > PLACE_RUN_PREEMPT || r->p->cpu[d].curr != t))
		expect = -EINVAL;
	ORACLE_CALL(r, ret, expect, &before, &after, place_run_end(r->p, cpu, t, how), "run_end(cpu %d)", cpu);
	if (ret)
		return;
	CHECK(!r->p->cpu[d].running);
	r->ts[ti] = how == PLACE_RUN_PREEMPT ? T_QUEUED : T_SLEEP;
	if (how == PLACE_RUN_SLEEP)
		mark_set(r, d, ti);
	else if (how == PLACE_RUN_EXIT && r->marker[d] == ti)
		mark_drop(r, ti);
}

static void op_register(struct run *r)
{
	int cpu = arg_cpu(r), d = dense(r, cpu), ret, expect = 0;
	uint8_t b = next(r) % 3;
	/* never BIND: it would pin the fuzzer */
	unsigned flags = b == 0 ? 0 : b == 1 ? PLACE_WORKER_SHARED : 0x80000000u;
	struct snap before, after;
	bool join = d >= 0 && r->workers[d] > 0;

	if (flags & ~PLACE_WORKER_SHARED)
		expect = -EINVAL;
	else if (d < 0 || (r->p->cpu[d].state & PLACE_ST_OFFLINE))
		expect = -ENODEV;
	else if (join && !(flags & PLACE_WORKER_SHARED))
		expect = -EEXIST;
	ORACLE_CALL(r, ret, expect, &before, &after, place_worker_register(r->p, cpu, flags), "register(cpu %d)",
		    cpu);
	if (ret)
		return;
	if (r->workers[d]++) /* one more thread of a served CPU: nothing changes */
		CHECK(same_states(r, &before, &after) && same_tasks(&before, &after));
	else
		CHECK((after.state[d] & (PLACE_ST_REGISTERED | PLACE_ST_IDLE)) ==
		      (PLACE_ST_REGISTERED | PLACE_ST_IDLE));
}

static void op_unregister(struct run *r)
{
	int cpu = arg_cpu(r), d = dense(r, cpu), ret, expect = cpu_errno(r, d, PLACE_ST_REGISTERED);
	struct snap before, after;

	ORACLE_CALL(r, ret, expect, &before, &after, place_worker_unregister(r->p, cpu), "unregister(cpu %d)", cpu);
	if (ret)
		return;
	if (--r->workers[d]) { /* other threads still serve it: nothing changes */
		CHECK(same_states(r, &before, &after) && same_tasks(&before, &after));
		return;
	}
	CHECK(!(after.state[d] & PLACE_ST_REGISTERED));
	/* The claim and queue survive (their tasks may still arrive). */
	CHECK((after.state[d] & (PLACE_ST_CLAIMED | PLACE_ST_QUEUED_MASK)) ==
	      (before.state[d] & (PLACE_ST_CLAIMED | PLACE_ST_QUEUED_MASK)));
	for (int i = 0; i < NT; i++)
		if (r->ts[i] == T_RUNNING && r->on[i] == cpu)
			r->ts[i] = T_SLEEP; /* the runtime takes it back */
}

static void op_idle_enter(struct run *r)
{
	int cpu = arg_cpu(r), d = dense(r, cpu), ret, expect = cpu_errno(r, d, PLACE_ST_REGISTERED);
	struct snap before, after;

	if (!expect && r->p->cpu[d].running)
		expect = -EBUSY;
	ORACLE_CALL(r, ret, expect, &before, &after, place_idle_enter(r->p, cpu), "idle_enter(cpu %d)", cpu);
	if (ret)
		return;
	/* Only the IDLE bit moves: an idle edge never ends a claim. */
	CHECK(after.state[d] == (before.state[d] | PLACE_ST_IDLE));
}

/* place_set_topology: to the instance's own topology (always accepted), to
 * one of the swap or base topologies (a restriction or -EXDEV), or NULL
 * (-EINVAL). Success: exactly the CPUs t lacks are OFFLINE, nothing else in
 * a state word moved; failure: nothing changed. The oracle reads usability
 * from the OFFLINE bit, so wakeups and registers are checked against it. */
static void op_set_topology(struct run *r)
{
	uint8_t b = next(r);
	unsigned n = NR_SWAPS + NR_TOPOS + 2, k = b % n;
	const place_topo *t = k < NR_SWAPS ? swap_topos[k] : k < NR_SWAPS + NR_TOPOS ? topos[k - NR_SWAPS]
			      : k == n - 2 ? r->topo : NULL;
	struct snap before, after;
	int ret;

	take_snap(r, &before);
	ret = place_set_topology(r->p, t);
	TRACE("#%d set_topology(%s) = %d\n", op_index, t ? place_topo_source(t) : "NULL", ret);
	take_snap(r, &after);
	CHECK(t ? (ret == 0 || ret == -EXDEV) : ret == -EINVAL);
	CHECK(t != r->topo || ret == 0);
	if (ret) {
		CHECK(same_states(r, &before, &after) && same_tasks(&before, &after));
		return;
	}
	for (int d = 0; d < r->nr_cpus; d++) {
		int os = r->p->map[d].os;
		bool in = os < place_topo_cpu_limit(t) && place_topo_cpu_info(t, os, &(place_cpu_info){ 0 }) == 0;

		CHECK(!(after.state[d] & PLACE_ST_OFFLINE) == in);
		CHECK((after.state[d] & ~PLACE_ST_OFFLINE) == (before.state[d] & ~PLACE_ST_OFFLINE));
	}
	n_swaps++;
}

/* place_task_forget: outside the contract while t runs (not decoded then). */
static void op_forget(struct run *r)
{
	int ti = arg_task(r), ret, expect = task_valid(ti) ? 0 : -EINVAL;
	place_task *t = task_ptr(r, ti);
	struct snap before, after;

	if (task_valid(ti) && r->ts[ti] == T_RUNNING)
		return;
	ORACLE_CALL(r, ret, expect, &before, &after, place_task_forget(r->p, t), "task_forget(task %d)", ti);
	if (ret)
		return;
	CHECK(place__rec(t)->queued_cpu == -1 && place__rec(t)->claim_gen == 0);
	CHECK(place__rec(t)->numa_pending == 0);
	r->ts[ti] = T_SLEEP; /* holds nothing: the agreement check sees its CPU's QUEUED go */
	mark_drop(r, ti);
}

static void op_claim_release(struct run *r)
{
	int cpu = arg_cpu(r), d = dense(r, cpu), ret, expect = cpu_errno(r, d, PLACE_ST_CLAIMED);
	struct snap before, after;

	ORACLE_CALL(r, ret, expect, &before, &after, place_claim_release(r->p, cpu), "claim_release(cpu %d)", cpu);
	if (ret)
		return;
	CHECK(!(after.state[d] & PLACE_ST_CLAIMED));
	CHECK(place__st_queued(after.state[d]) + 1 == place__st_queued(before.state[d]));
}

/* COOKIES: does a CPU of dense d's core, d included, run a task of another
 * cookie, or does the core drain (place_steal_check's -EBUSY)? */
static bool core_refuses(const struct run *r, int d, uint64_t cookie)
{
	const struct place_cpu_map *m = &r->p->map[d];

	if (!(r->p->feat & PLACE_FEAT_COOKIES) || m->smt < 2)
		return false;
	return (r->p->cpu[d].running && r->p->cpu[d].curr_cookie != cookie) || sibling_conflict(r, d, cookie) ||
	       (r->p->core[m->core].occ[PLACE_OCC_COUNT] & PLACE_OCC_DRAIN);
}

/* place_steal_check reads and changes nothing. */
static void op_steal_check(struct run *r)
{
	int cpu = arg_cpu(r), ti = arg_task(r), d = dense(r, cpu), ret, expect = worker_task_errno(r, d, ti);
	place_task *t = task_ptr(r, ti);
	struct snap before, after;

	if (!expect && (r->p->cpu[d].state & PLACE_ST_OFFLINE))
		expect = -ENODEV;
	else if (!expect && !place__allowed(r->p, t, d))
		expect = -EPERM;
	else if (!expect && core_refuses(r, d, place__rec(t)->cookie))
		expect = -EBUSY;
	ORACLE_CALL(r, ret, expect, &before, &after, place_steal_check(r->p, cpu, t), "steal_check(cpu %d)", cpu);
	CHECK(same_states(r, &before, &after) && same_tasks(&before, &after)); /* and on success */
}

static void op_stats(struct run *r)
{
	uint8_t b = next(r);
	int llc = (int)(b % (unsigned)(r->nr_llcs + 3)) - 2, ret, expect = 0;
	place_stats st;
	bool null_out = b >= 240;

	if (null_out)
		expect = -EINVAL;
	else if (llc < -1 || llc >= r->nr_llcs)
		expect = -ERANGE;
	ret = place_stats_read(r->p, llc, null_out ? NULL : &st);
	CHECK(ret == expect);
}

static void op_set_cpus(struct run *r)
{
	int ti = arg_task(r), si = next(r) % (NR_SETS + 1), ret, expect = 0;
	bool zero_size = (next(r) & 7) == 0;
	place_task *t = task_ptr(r, ti);
	const cpu_set_t *set = si < NR_SETS ? r->set[si] : NULL;
	size_t size = si < NR_SETS ? (zero_size ? 0 : r->set_size[si]) : 0;
	struct snap before, after;

	if (!task_valid(ti) || (set && !size))
		expect = -EINVAL;
	ORACLE_CALL(r, ret, expect, &before, &after, place_task_set_cpus(t, set, size),
		    "task_set_cpus(task %d, set %d, %zu bytes)", ti, si, size);
}

static void op_set_cookie(struct run *r)
{
	int ti = arg_task(r), ret;
	uint64_t cookie = next(r) % 3;
	place_task *t = task_ptr(r, ti);
	struct snap before, after;

	ORACLE_CALL(r, ret, task_valid(ti) ? 0 : -EINVAL, &before, &after, place_task_set_cookie(t, cookie),
		    "task_set_cookie(task %d, %d)", ti, (int)cookie);
	CHECK(same_states(r, &before, &after) && (ret || place__rec(t)->cookie == cookie));
}

/* NUMA groups: 0 (none), 1, 2, or 65, above the default max_groups (64). */
static void op_set_group(struct run *r)
{
	static const uint32_t groups[] = { 0, 1, 2, 65 };
	int ti = arg_task(r), ret;
	uint32_t group = groups[next(r) % 4];
	place_task *t = task_ptr(r, ti);
	struct snap before, after;

	ORACLE_CALL(r, ret, task_valid(ti) ? 0 : -EINVAL, &before, &after, place_task_set_group(t, group),
		    "task_set_group(task %d, %u)", ti, group);
	CHECK(same_states(r, &before, &after) && (ret || place__rec(t)->group == group));
}

/* Every call with a NULL instance is -EINVAL (or a no-op). */
static void op_null(struct run *r)
{
	place_stats st;

	CHECK(place_wakeup(NULL, &r->task[0], PLACE_CPU_NONE, 0) == -EINVAL);
	CHECK(place_idle_enter(NULL, 0) == -EINVAL);
	CHECK(place_run_begin(NULL, 0, &r->task[0]) == -EINVAL);
	CHECK(place_run_end(NULL, 0, &r->task[0], 0) == -EINVAL);
	CHECK(place_claim_release(NULL, 0) == -EINVAL);
	CHECK(place_worker_register(NULL, 0, 0) == -EINVAL);
	CHECK(place_worker_unregister(NULL, 0) == -EINVAL);
	CHECK(place_stats_read(NULL, -1, &st) == -EINVAL);
	CHECK(place_get_topo(NULL) == NULL);
}

static void make_sets(struct run *r)
{
	int lim = r->limit;
	size_t big = CPU_ALLOC_SIZE((size_t)lim + 64);

	for (int i = 0; i < NR_SETS; i++) {
		r->set[i] = CPU_ALLOC((size_t)lim + 64);
		CHECK(r->set[i]);
		r->set_size[i] = big;
		CPU_ZERO_S(big, r->set[i]);
	}
	CPU_SET_S(0, big, r->set[0]);                                /* CPU 0 */
	CPU_SET_S(0, big, r->set[1]);                                /* CPU 0 and its siblings */
	for (int k = 0; k < place_topo_siblings(r->topo, 0, NULL, 0); k++) {
		int sib[8];

		place_topo_siblings(r->topo, 0, sib, 8);
		if (k < 8)
			CPU_SET_S((size_t)sib[k], big, r->set[1]);
	}
	for (int c = lim / 2; c < lim; c++)                          /* the upper half */
		CPU_SET_S((size_t)c, big, r->set[2]);
	/* set[3]: empty */
	for (int c = 0; c < lim; c += 2)                             /* even CPUs */
		CPU_SET_S((size_t)c, big, r->set[4]);
	CPU_SET_S((size_t)lim + 10, big, r->set[5]);                 /* only a CPU that does not exist */
	for (int c = 0; c < lim; c++)                                /* all, in a short set: */
		CPU_SET_S((size_t)c, big, r->set[6]);
	r->set_size[6] = 1; /* 1 byte: only CPUs 0-7 are in it */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	trace = getenv("PLACE_FUZZ_TRACE") && *getenv("PLACE_FUZZ_TRACE") == '1';
	atexit(report);
	for (size_t i = 0; i < NR_TOPOS; i++)
		if (place_topo_load(&topos[i], sources[i]) != 0) {
			fprintf(stderr, "fuzz_api: cannot load %s: %s\n", sources[i], place_last_error());
			abort();
		}
	if (place_topo_load(&numa_topo, NUMA_SOURCE) != 0) {
		fprintf(stderr, "fuzz_api: cannot load %s: %s\n", NUMA_SOURCE, place_last_error());
		abort();
	}
	for (size_t i = 0; i < NR_SWAPS; i++)
		if (place_topo_load(&swap_topos[i], swap_sources[i]) != 0) {
			fprintf(stderr, "fuzz_api: cannot load %s: %s\n", swap_sources[i], place_last_error());
			abort();
		}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r;
	place_config cfg;

	memset(&r, 0, sizeof(r));
	memset(r.marker, 0xff, sizeof(r.marker)); /* -1: no mark */
	memset(r.mark_of, 0xff, sizeof(r.mark_of));
	r.data = data;
	r.size = size;
	r.contract = true;
	{
		uint8_t b = next(&r);

		r.topo = b >= 0xf0 ? numa_topo : topos[b % NR_TOPOS];
	}
	place_config_init(&cfg);
	cfg.policy = next(&r) % 3;
	cfg.features = next(&r) & PLACE_FEAT_ALL;
	cfg.clock = fuzz_clock;
	cfg.clock_arg = &r.now;
	cfg.util_period_ns = 1000;
	r.now = 1;
	op_index = 0;
	op_name = "create";
	CHECK(place_create(&r.p, r.topo, &cfg) == 0);
	r.nr_cpus = place_topo_nr_cpus(r.topo);
	r.limit = place_topo_cpu_limit(r.topo);
	r.nr_llcs = place_topo_nr_llcs(r.topo);
	CHECK(r.nr_cpus <= 128);
	make_sets(&r);
	for (int i = 0; i < NT; i++)
		place_task_init(&r.task[i], (uint64_t)(i % 3 == 2), 0); /* tasks 2 and 5 start with cookie 1 */
	memset(&r.task[NT + 1], 0xa5, sizeof(r.task[NT + 1])); /* never initialised */

	while (r.off < r.size && op_index < 4096) {
		uint8_t op = next(&r);

		op_index++;
		switch (op % 12) {
		case 0: case 1: op_name = "wakeup"; op_wakeup(&r); break;
		case 2: op_name = "register"; op_register(&r); break;
		case 3: op_name = "unregister"; op_unregister(&r); break;
		case 4: op_name = "idle_enter"; op_idle_enter(&r); break;
		case 5: case 6: op_name = "run_begin"; op_run_begin(&r); break;
		case 7: op_name = "run_end"; op_run_end(&r); break;
		case 8: op_name = "claim_release"; op_claim_release(&r); break;
		case 9:
			if (op & 0x80) {
				op_name = "steal_check";
				op_steal_check(&r);
			} else {
				op_name = "stats_read";
				op_stats(&r);
			}
			break;
		case 10: op_name = "task_set_cpus"; op_set_cpus(&r); break;
		case 11:
			if (op & 0x80) {
				op_name = "null instance";
				op_null(&r);
			} else if (op & 0x40) {
				op_name = "task_set_cookie";
				op_set_cookie(&r);
			} else if (op & 0x20) {
				op_name = "task_set_group";
				op_set_group(&r);
			} else if (op == 23) {
				op_name = "set_topology";
				op_set_topology(&r);
			} else if (op == 11) {
				op_name = "task_forget";
				op_forget(&r);
			} else {
				op_name = "clock";
				r.now += (uint64_t)next(&r) * 100000;
			}
			break;
		}
		if (trace)
			for (int d = 0; d < r.nr_cpus; d++)
				TRACE("   cpu %d state %#llx running %u\n", r.p->map[d].os,
				      (unsigned long long)r.p->cpu[d].state, r.p->cpu[d].running);
		n_calls++;
		check_cookies(&r);
		if (r.contract) {
			check_agreement(&r);
			n_checked++;
		}
	}
	op_name = "end";
	n_inputs++;
	check_stats(&r);
	place_destroy(r.p);
	for (int i = 0; i < NR_SETS; i++)
		CPU_FREE(r.set[i]);
	return 0;
}
