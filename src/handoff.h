/*
 * What a hand-off onto the waker's CPU records, and the wakee flips every
 * worker waker keeps: shared by place_wakeup (select.c: wake_wide, and its
 * PLACE_WAKE_CURRENT paths) and place_run_handoff (idle.c), so that a
 * hand-off in one call leaves what a PLACE_WAKE_CURRENT wakeup leaves.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_HANDOFF_H
#define PLACE_HANDOFF_H

#include "cookie.h"
#include "internal.h"

#define PLACE_FLIP_DECAY_NS UINT64_C(1000000000) /* wakee flips halve every second, as the kernel's HZ */

/* The waker is the task running on the waker's CPU; its flips count how often
 * it switches wakee. Only that worker's thread gets here with that CPU. */
PLACE_INLINE struct place_task_rec *place__waker_rec(const struct place *p, int waker)
{
	place_task *curr = p->cpu[waker].curr;

	return curr ? place__task_rec(curr) : NULL;
}

/* Idempotent: recording the same wakee again at once changes nothing (a
 * short path that hands a wakeup to the whole path relies on it). */
PLACE_INLINE void place__record_wakee(const struct place *p, int waker, struct place_task_rec *wr,
				      const place_task *t)
{
	/* The start of the waker's current run stands in for "now": off by at
	 * most one run, against a one-second decay, and no clock read. */
	uint64_t now = p->cpu[waker].stamp;

	if (now - wr->flip_decay_ns > PLACE_FLIP_DECAY_NS) {
		wr->wakee_flips >>= 1;
		wr->flip_decay_ns = now;
	}
	if (wr->last_wakee != t) {
		wr->last_wakee = t;
		wr->wakee_flips++;
	}
}

/* t (cookie read once by the caller) is handed to the waker's CPU d by
 * the task running there, whose record is wr (NULL: none): t is that
 * task's wakee (WAKE_WIDE's flips), its cookie what waits on d's core,
 * and the wakeup counts in d's slot as a hit on its target (the waker's
 * CPU: affine), unclaimed, after probes probes. Only d's worker. */
PLACE_INLINE void place__handoff_note(struct place *p, int d, struct place_task_rec *wr, const place_task *t,
				      uint64_t cookie, uint64_t probes)
{
	uint64_t *v = p->slot[d].v;

	if (wr && place__feat(p, PLACE_FEAT_WAKE_WIDE))
		place__record_wakee(p, d, wr, t);
	if (place__cookies_matter(p, cookie))
		place__cookie_pend(p, d, cookie);
	place_count_64(&v[PLACE_STAT_affine_wakeups], 1);
	place_count_64(&v[PLACE_STAT_hit_target], 1);
	place_count_64(&v[PLACE_STAT_cpus_probed], probes);
	place_count_64(&v[PLACE_STAT_unclaimed], 1);
}

#endif /* PLACE_HANDOFF_H */
