/*
 * Core-scheduling cookies (seed 002, DESIGN.md mechanism 9), the inline
 * parts of the hot path: the wakeup's compatibility hint, run_begin's exact
 * enter and run_end's leave. The slow parts (refusal accounting, the
 * compatible fallback) are in cookie.c.
 *
 * The rule, symmetric as in the kernel: with PLACE_FEAT_COOKIES on, two
 * tasks with different cookies never run at the same time on SMT siblings
 * of one core. Cookie 0 ("trusted, untagged") is a cookie like the others.
 * A core with one CPU cannot break the rule and is never looked at.
 *
 * The occupancy of a core (struct place_core, internal.h) is one 128-bit
 * word {cookie, count of running tasks}, changed only by a double-word CAS.
 * Both halves are compared whole, so two different 64-bit cookies never
 * look alike (no hash, no truncation). Isolation is the invariant
 *   count > 0  =>  every task between run_begin and run_end on a CPU of
 *                  the core carries cookie
 * kept because run_begin adds itself only by a CAS from {c, n} to {c, n+1}
 * or from {any, 0} to {cookie, 1}, and run_end removes exactly what its
 * run_begin added (the cookie captured in place_cpu.curr_cookie), whatever
 * place_task_set_cookie did meanwhile.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_COOKIE_H
#define PLACE_COOKIE_H

#include "internal.h"

/* cookie.c */
bool place__cookie_turn_due(const struct place *p, int cpu);
int place__cookie_refused(struct place *p, int cpu, uint64_t cookie);
int place__cookie_retry(const struct place *p, int cpu, uint32_t forced, int *retry, int max);
int place__cookie_idle(struct place *p, int cpu); /* returns 0 */
void place__cookie_unregister(struct place *p, int cpu);
/* How far a fallback may look: the target's LLC (the waker's CPU, which
 * wake_affine chose on purpose), its node (a task of a NUMA group), the
 * machine. */
enum place_fit_scope { PLACE_FIT_LLC, PLACE_FIT_NODE, PLACE_FIT_MACHINE };
int place__cookie_fallback(struct place *p, const place_task *t, int target, enum place_fit_scope scope,
			   uint64_t *probes);

#define PLACE_OCC_COOKIE 0
#define PLACE_OCC_COUNT 1

/*
 * The count half also names the core's CPUs left forced idle:
 * bits 0..31 count the running tasks, bit 32 + i is set by the refused
 * run_begin of the core's i-th CPU (i from 0, the CPUs past the 31st share
 * bit 63), and taken away by the run_end that empties the core: that
 * run_end names them (they may retry now). Set and taken by the same CAS that decides, so that no
 * refusal's bit is lost between a refusal and the last leave. Bits are set
 * only while tasks run there: forced bits => count > 0, and "count == 0"
 * stays "the word's half is 0" for the wakeup hints.
 */
#define PLACE_OCC_FORCED_SHIFT 32
#define PLACE_OCC_COUNT_MASK UINT64_C(0x7fffffff)

/*
 * Bit 31 of the count half: the core drains. A waiting cookie's turn came
 * (a sibling was refused PLACE_COOKIE_TURN_NS ago and still waits): set by
 * the enter of the running cookie that found it so, which is refused like
 * any enter while it is set; the run_end that empties the core clears it
 * with the rest, and names the refused siblings. Only while tasks run, as
 * the forced bits.
 */
#define PLACE_OCC_DRAIN (UINT64_C(1) << 31)


static inline uint64_t place__occ_count(uint64_t half)
{
	return half & PLACE_OCC_COUNT_MASK;
}

/* cpu's forced-idle bit in its core's count half. */
static inline uint64_t place__occ_forced_bit(const struct place *p, int cpu)
{
	int i = p->map[cpu].pos - p->map[cpu].core_lo;

	return UINT64_C(1) << (PLACE_OCC_FORCED_SHIFT + (i < 31 ? i : 31));
}

/* Does the COOKIES rule apply to dense cpu: the feature is on and its core
 * has a sibling. Constant per instance and CPU. */
static inline bool place__cookie_on(const struct place *p, int cpu)
{
	return p->cookie_cores && p->map[cpu].smt > 1;
}

static inline uint64_t *place__occ(const struct place *p, int cpu)
{
	return p->core[p->map[cpu].core].occ;
}

/* Is work waiting on dense cpu: a claim or a queued task. */
static inline bool place__cookie_waiting(const struct place *p, int cpu)
{
	return place_load_64(&p->cpu[cpu].state) & (PLACE_ST_CLAIMED | PLACE_ST_QUEUED_MASK);
}

/* Does what runs on cpu's core fit cookie: nothing, or that cookie (the
 * hand-off's test: the waker's CPU is its own to hand). A hint, as
 * place__cookie_admits() below. */
static inline bool place__cookie_runs_fit(const struct place *p, int cpu, uint64_t cookie)
{
	uint64_t occ[2];

	place_load_64_2(place__occ(p, cpu), occ);
	return !occ[PLACE_OCC_COUNT] || occ[PLACE_OCC_COOKIE] == cookie;
}

/* May a thief on cpu start a task with cookie now: nothing runs on its
 * core, or that cookie runs there and the core does not drain for another
 * (run_begin's test without its turn, as a hint: run_begin decides). */
static inline bool place__cookie_steal_fits(const struct place *p, int cpu, uint64_t cookie)
{
	uint64_t occ[2];

	place_load_64_2(place__occ(p, cpu), occ);
	return !occ[PLACE_OCC_COUNT] ||
	       (occ[PLACE_OCC_COOKIE] == cookie && !(occ[PLACE_OCC_COUNT] & PLACE_OCC_DRAIN));
}

/*
 * Wakeup hint, COOKIES on: may a task with this cookie go to cpu's core
 * now? Yes when what runs there and what waits there fit: nothing runs or
 * its running tasks carry the same cookie, and nothing waits on the core's
 * CPUs (claims, queued tasks, a refused task) or the work last sent there
 * carried the same cookie (the core's pend hint). So a wakeup never hands a
 * core a cookie that the work already queued there will keep out, and a
 * core where a refused cookie waits receives no more of the running one
 * (it drains). A whole idle core always fits. Relaxed and possibly torn
 * (production reads the halves apart): a wrong answer costs one refusal at
 * run_begin or one skipped candidate, never a co-run, because run_begin
 * decides exactly. A core of one CPU admits every cookie: nothing can run
 * beside what runs or waits there, so a cookie never needs to keep away
 * from it (without this, work queued on a no-SMT CPU would turn other
 * cookies away from it for nothing and count fallbacks).
 */
static inline bool place__cookie_admits(const struct place *p, int cpu, uint64_t cookie)
{
	const struct place_core *core = &p->core[p->map[cpu].core];
	int sib = cpu;

	if (!place__cookie_on(p, cpu)) /* a core of one CPU: see above */
		return true;
	if (!place__cookie_runs_fit(p, cpu, cookie))
		return false;
	if (place_load_64(&core->pend) == cookie)
		return true;
	do
		if (place__cookie_waiting(p, sib))
			return false;
	while ((sib = p->sib_next[sib]) != cpu);
	return true;
}

/* More than one cookie shares the instance's cores (see cookie_mixed). */
static inline void place__cookie_mix(struct place *p)
{
	if (!place_load_32(&p->cookie_mixed))
		place_store_32(&p->cookie_mixed, 1);
}

/* cookie is about to reach a core (its pend hint or its occupancy): a
 * cookie other than 0 makes the wakeups look at cookies from now on
 * (cookie_seen, internal.h). */
static inline void place__cookie_seen(struct place *p, uint64_t cookie)
{
	if (cookie && !place_load_32(&p->cookie_seen))
		place_store_32(&p->cookie_seen, 1);
}

/* Must a wakeup of a task with cookie look at cookies: COOKIES on, and
 * the cookie is not 0 or another was seen (cookie_seen). Otherwise every
 * core holds cookie 0: place__cookie_admits() would say yes everywhere
 * and place__cookie_pend() would change nothing. */
static inline bool place__cookies_matter(const struct place *p, uint64_t cookie)
{
	return place__feat(p, PLACE_FEAT_COOKIES) && (cookie || place_load_32(&p->cookie_seen));
}

/* A wakeup sends work with cookie to cpu (COOKIES on): the core's pend
 * hint (a load first: the line stays shared while it holds the cookie). */
static inline void place__cookie_pend(struct place *p, int cpu, uint64_t cookie)
{
	uint64_t *pend = &p->core[p->map[cpu].core].pend, old;

	if (p->map[cpu].smt < 2 || (old = place_load_64(pend)) == cookie)
		return;
	place__cookie_seen(p, cookie);
	place_store_64(pend, cookie);
	if (old)
		place__cookie_mix(p); /* one cookie followed another there */
}

/* The same whether COOKIES is on or not. */
static inline bool place__cookie_fits(const struct place *p, int cpu, uint64_t cookie)
{
	return !place__feat(p, PLACE_FEAT_COOKIES) || place__cookie_admits(p, cpu, cookie);
}

/*
 * run_begin's check: count one more task with cookie on cpu's core, or
 * return -EBUSY when other tasks of another cookie run there, or the core
 * drains (PLACE_OCC_DRAIN: this enter sets it when a sibling refused
 * PLACE_COOKIE_TURN_NS ago still waits, place__cookie_turn_due(), read
 * only when forced bits are set), having changed only cpu's forced-idle
 * bit (set: the run_end that empties the core names cpu) and the drain
 * bit. A refusal is decided only on a value a CAS confirmed
 * (the CAS that sets the bits): a torn relaxed read must not refuse a task
 * that fits. A start leaves the bits alone (the common path computes none):
 * a CPU refused, then started on a fitting task, is named all the same, a
 * hint the runtime may find nothing to retry on. The count half is 0 exactly
 * when nothing runs (bits only while tasks run), so the tests below need
 * no mask. Sequentially consistent CAS; partners: place__cookie_leave() and
 * the enters of the siblings (one word, so all RMWs on it are totally
 * ordered: of two enters with different cookies on an empty core, exactly
 * one wins). Only the worker of cpu.
 */
static inline int place__cookie_enter(struct place *p, int cpu, uint64_t cookie)
{
	uint64_t *occ = place__occ(p, cpu);
	uint64_t old[2], want[2];

	place__cookie_seen(p, cookie);
	place_load_64_2(occ, old);
	for (;;) {
		uint64_t n = old[PLACE_OCC_COUNT], drain = 0;
		bool other = n && old[PLACE_OCC_COOKIE] != cookie;

		/* our cookie runs, a sibling waits (forced bits), its turn came */
		if (!other && n >> PLACE_OCC_FORCED_SHIFT && !(n & PLACE_OCC_DRAIN) && place__cookie_turn_due(p, cpu))
			drain = PLACE_OCC_DRAIN;
		if (other || drain || (n & PLACE_OCC_DRAIN)) {
			want[PLACE_OCC_COOKIE] = old[PLACE_OCC_COOKIE];
			want[PLACE_OCC_COUNT] = n | place__occ_forced_bit(p, cpu) | drain;
			if (!place_cas_64_2(occ, old, want))
				continue; /* old now holds the exact value: decide again */
			if (drain)
				place_count_64(&p->slot[cpu].v[PLACE_STAT_cookie_turns], 1);
			return -EBUSY; /* exact: another cookie runs, or the core drains */
		}
		want[PLACE_OCC_COOKIE] = cookie;
		want[PLACE_OCC_COUNT] = old[PLACE_OCC_COUNT] + 1;
		if (place_cas_64_2(occ, old, want))
			return 0;
	}
}

/*
 * place_run_switch's check: cpu's task of cookie from gives way to one of
 * cookie to, and the core's word follows in one CAS (only its cookie
 * changes: cpu counts one task either way). -EAGAIN, nothing changed, when
 * the switch would pass over a sibling, so that the two calls decide: the
 * core drains; a sibling waits (its forced bit) and its turn is due, or the
 * cookie changes (the run end that empties the core must name it); other
 * CPUs run from (to would be refused). cpu's own forced bit is no sibling.
 * One cookie needs no CAS: the count half, read atomically, is exact for
 * the forced and drain bits, and a sibling's refusal that comes after the
 * read is one that came after the switch. Partners as place__cookie_enter().
 */
static inline int place__cookie_switch(struct place *p, int cpu, uint64_t from, uint64_t to)
{
	uint64_t *occ = place__occ(p, cpu);
	uint64_t old[2], want[2];

	place__cookie_seen(p, to);
	place_load_64_2(occ, old);
	for (;;) {
		uint64_t n = old[PLACE_OCC_COUNT];
		bool waits = (n & ~place__occ_forced_bit(p, cpu)) >> PLACE_OCC_FORCED_SHIFT;

		if (n & PLACE_OCC_DRAIN)
			return -EAGAIN;
		if (from == to)
			return waits && place__cookie_turn_due(p, cpu) ? -EAGAIN : 0;
		if (waits || place__occ_count(n) > 1)
			return -EAGAIN;
		want[PLACE_OCC_COOKIE] = to;
		want[PLACE_OCC_COUNT] = n;
		if (place_cas_64_2(occ, old, want))
			return 0;
	}
}

/*
 * run_end (and unregister while running): remove the task that
 * place__cookie_enter() counted with cookie. The last one leaves {0, 0}
 * and returns the forced-idle bits it took (>> PLACE_OCC_FORCED_SHIFT):
 * the core's CPUs refused since, which may retry now; else 0. A CAS from a
 * torn read fails and retries with the exact value, so the word only ever
 * moves from an exact {cookie, n >= 1}. Sequentially consistent (partner:
 * the siblings' place__cookie_enter()): everything the task did on this CPU
 * is ordered before a sibling's enter that sees the core free. Only the
 * worker of cpu.
 */
static inline uint32_t place__cookie_leave(struct place *p, int cpu, uint64_t cookie)
{
	uint64_t *occ = place__occ(p, cpu);
	uint64_t old[2], want[2];

	place_load_64_2(occ, old);
	do {
		uint64_t n = place__occ_count(old[PLACE_OCC_COUNT]);

		want[PLACE_OCC_COUNT] = n > 1 ? old[PLACE_OCC_COUNT] - 1 : 0;
		want[PLACE_OCC_COOKIE] = n > 1 ? cookie : 0;
	} while (!place_cas_64_2(occ, old, want));
	if (want[PLACE_OCC_COUNT] || !(old[PLACE_OCC_COUNT] >> PLACE_OCC_FORCED_SHIFT))
		return 0;
	place_store_64(&p->core[p->map[cpu].core].turn_since, 0); /* the waiters' turn starts */
	return (uint32_t)(old[PLACE_OCC_COUNT] >> PLACE_OCC_FORCED_SHIFT);
}

/* The CPU's forced-idle period (started by a refusal) ends: it starts a
 * task or parks. Worker only; its slot is its own line. */
static inline void place__cookie_forced_end(struct place *p, int cpu, uint64_t now)
{
	struct place_stat_slot *s = &p->slot[cpu];

	if (!s->forced_since)
		return;
	place_count_64(&s->v[PLACE_STAT_forced_idle_ns], now > s->forced_since ? now - s->forced_since : 0);
	s->forced_since = 0;
}


#endif /* PLACE_COOKIE_H */
