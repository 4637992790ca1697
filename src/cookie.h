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
#define PLACE_OCC_COUNT_MASK UINT64_C(0xffffffff)

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
	return place__feat(p, PLACE_FEAT_COOKIES) && p->map[cpu].smt > 1;
}

static inline uint64_t *place__occ(const struct place *p, int cpu)
{
	return p->core[p->map[cpu].core].occ;
}

/*
 * Wakeup hint, COOKIES on: may a task with this cookie start on cpu's core
 * now? Yes when nothing runs there or its running tasks carry the same
 * cookie. Relaxed and possibly torn (production reads the halves apart): a
 * wrong answer costs one refusal at run_begin or one skipped candidate,
 * never a co-run, because run_begin decides exactly. A core of one CPU never
 * counts anything (every update tests place__cookie_on), so its {0, 0}
 * admits every cookie without a test of its own.
 */
static inline bool place__cookie_admits(const struct place *p, int cpu, uint64_t cookie)
{
	uint64_t occ[2];

	place_load_64_2(place__occ(p, cpu), occ);
	return !occ[PLACE_OCC_COUNT] || occ[PLACE_OCC_COOKIE] == cookie;
}

/* The same whether COOKIES is on or not. */
static inline bool place__cookie_fits(const struct place *p, int cpu, uint64_t cookie)
{
	return !place__feat(p, PLACE_FEAT_COOKIES) || place__cookie_admits(p, cpu, cookie);
}

/*
 * run_begin's check: count one more task with cookie on cpu's core, or
 * return -EBUSY when other tasks of another cookie run there, having
 * changed only cpu's forced-idle bit (set: the run_end that empties the
 * core names cpu). A refusal is decided only on a value a CAS confirmed
 * (the CAS that sets the bit): a torn relaxed read must not refuse a task
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

	place_load_64_2(occ, old);
	for (;;) {
		if (old[PLACE_OCC_COUNT] && old[PLACE_OCC_COOKIE] != cookie) {
			want[PLACE_OCC_COOKIE] = old[PLACE_OCC_COOKIE];
			want[PLACE_OCC_COUNT] = old[PLACE_OCC_COUNT] | place__occ_forced_bit(p, cpu);
			if (place_cas_64_2(occ, old, want))
				return -EBUSY; /* exact: the core runs another cookie */
			continue; /* old now holds the exact value: decide again */
		}
		want[PLACE_OCC_COOKIE] = cookie;
		want[PLACE_OCC_COUNT] = old[PLACE_OCC_COUNT] + 1;
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
	return want[PLACE_OCC_COUNT] ? 0 : (uint32_t)(old[PLACE_OCC_COUNT] >> PLACE_OCC_FORCED_SHIFT);
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

/* cookie.c */
int place__cookie_refused(struct place *p, int cpu);
int place__cookie_retry(const struct place *p, int cpu, uint32_t forced, int *retry, int max);
int place__cookie_idle(struct place *p, int cpu); /* returns 0 */
void place__cookie_unregister(struct place *p, int cpu);
int place__cookie_fallback(struct place *p, const place_task *t, int target, uint64_t *probes);

#endif /* PLACE_COOKIE_H */
