/*
 * The per-CPU state word's transitions, inline for the hot paths (wakeup,
 * idle enter, run begin). See internal.h for the word's layout.
 *
 * Every transition is one compare-and-swap loop on the word. A loop retries
 * only while its precondition still holds (for a claim: the CPU is still
 * available), so a claim that loses to another claim fails at once: that is
 * the "one CAS, a lost claim continues the scan" of the design.
 *
 * Two RMWs on the same word are totally ordered, which is what makes the
 * claim-end / idle-enter handshake work without more fences: either the
 * task's run_begin (ending the claim) sees IDLE and puts the CPU back into
 * the mask, or the worker's idle_enter sees no claim and does it itself.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_IDLE_H
#define PLACE_IDLE_H

#include "internal.h"

static inline uint64_t place__state(const struct place *p, int cpu)
{
	return place_load_64(&p->cpu[cpu].state);
}

/*
 * May a CPU of the core that m maps (in llc) be available, by llc's idle
 * mask? A CPU that becomes available leaves a bit of its core set
 * (idle_publish; repair, withdraw and a claim's unpublish clear a core's
 * bits only with none of its CPUs available), so a core without one has
 * none but for a publication in flight, a moment a probe could miss as
 * well. One load of the LLC's mask line, which stays shared while nothing
 * goes idle, in place of the CPUs' own lines, which every run edge writes:
 * the wakeup probes only hinted CPUs. LINEAR keeps no mask: every core.
 */
static inline bool place__core_hinted(const struct place *p, const struct place_llc *llc,
				      const struct place_cpu_map *m)
{
	return p->policy == PLACE_POLICY_LINEAR || place_mask_any_in(llc->icpus, m->core_lo, m->smt);
}

/* word with one QUEUED task fewer, unless QUEUED is 0 or saturated
 * (PLACE_ST_QUEUED_SAT: a lost count never comes back down) */
static inline uint64_t place__st_dequeue(uint64_t word)
{
	/* q - 1 wraps for 0: one unsigned compare for both ends */
	return place__st_queued(word) - 1 < PLACE_ST_QUEUED_SAT - 1 ? word - PLACE_ST_QUEUED_ONE : word;
}

/* Claim an available CPU: CLAIMED, one QUEUED task, a new generation.
 * seen is the value the caller probed. False when it is (or becomes) not
 * available. Any thread. */
PLACE_INLINE bool place__st_claim(uint64_t *state, uint64_t seen, uint32_t *gen)
{
	uint64_t old = seen, want;
	uint32_t g;

	do {
		if (!place__st_available(old))
			return false;
		g = place__st_gen(old) + 1;
		if (g == 0) /* 0 means "no claim" in task records */
			g = 1;
		want = (old & ~(~UINT64_C(0) << PLACE_ST_GEN_SHIFT)) | PLACE_ST_CLAIMED |
		       PLACE_ST_QUEUED_ONE | ((uint64_t)g << PLACE_ST_GEN_SHIFT);
	} while (!place_cas_64(state, &old, want));
	*gen = g;
	return true;
}

/*
 * A task that was sent to this CPU starts running (here or on a thief), or a
 * CPU changes its idle bit. In one CAS:
 *   leave_idle   clear IDLE (the worker of this CPU starts a task)
 *   deliver      the task counted in QUEUED here is leaving the queue:
 *                gen != 0: its claim, if still held, ends (CLAIMED and its
 *                QUEUED go); a claim already released dropped its QUEUED then
 *                gen == 0: one unclaimed QUEUED task goes
 * Returns the word before; *after gets the word after. Any thread.
 */
static inline uint64_t place__st_deliver(uint64_t *state, bool leave_idle, bool deliver,
					 uint32_t gen, uint64_t *after)
{
	uint64_t old = place_load_64(state), want;

	do {
		want = old;
		if (leave_idle)
			want &= ~PLACE_ST_IDLE;
		if (deliver && gen) {
			if ((old & PLACE_ST_CLAIMED) && place__st_gen(old) == gen && place__st_queued(old))
				want = place__st_dequeue(want & ~PLACE_ST_CLAIMED);
		} else if (deliver) {
			want = place__st_dequeue(want);
		}
		if (want == old)
			break;
	} while (!place_cas_64(state, &old, want));
	*after = want;
	return old;
}

/* Set or clear bits (IDLE, REGISTERED) under the word's other users. Returns
 * the word before. */
static inline uint64_t place__st_change(uint64_t *state, uint64_t set, uint64_t clear)
{
	uint64_t old = place_load_64(state), want;

	do {
		want = (old | set) & ~clear;
		if (want == old)
			break;
	} while (!place_cas_64(state, &old, want));
	return old;
}

/* One more task queued here without a claim (stacked, preempted); a
 * saturated count stays saturated (PLACE_ST_QUEUED_SAT). */
PLACE_INLINE void place__st_enqueue(uint64_t *state)
{
	uint64_t old = place_load_64(state);

	while (place__st_queued(old) < PLACE_ST_QUEUED_SAT &&
	       !place_cas_64(state, &old, old + PLACE_ST_QUEUED_ONE))
		;
}

/* Release whatever claim is held on this CPU (place_claim_release). False
 * when none is. *after gets the word after. */
static inline bool place__st_release(uint64_t *state, uint64_t *after)
{
	uint64_t old = place_load_64(state), want;

	do {
		if (!(old & PLACE_ST_CLAIMED))
			return false;
		want = place__st_dequeue(old & ~PLACE_ST_CLAIMED);
	} while (!place_cas_64(state, &old, want));
	*after = want;
	return true;
}

#endif /* PLACE_IDLE_H */
