/*
 * Beyond the target's LLC (WIDEN) and inside it, cluster first (CLUSTER):
 * the two searches the kernel leaves to its idle balancer and to
 * SD_CLUSTER, and the task-less thief query place_idle_near().
 *
 * The LLC summary. One bit per LLC in p->llc_idle: "this LLC's idle mask
 * may have a bit set". It is what keeps a search beyond the LLC bounded: it
 * visits only LLCs whose bit is set, so a saturated machine (every mask
 * empty, every summary bit clear) costs one word per 64 LLCs. Protocol, a
 * Dekker pair like idle_enter against repair():
 *   - whoever sets a mask bit that was clear (idle_publish, repair's
 *     re-set) then sets the LLC's summary bit (place__llc_idle_note: RMW on
 *     the mask, fence, load the summary, set it if clear);
 *   - a search that finds an LLC's mask empty clears its summary bit, then
 *     reads the mask again and sets the bit back if the mask is no longer
 *     empty (RMW on the summary, fence, load the mask).
 * One of the two sees the other: a non-empty mask never hides behind a
 * clear summary bit. Set bits over empty masks are repaired by the next
 * search that visits them. LINEAR keeps no masks: its bits stay set, and
 * WIDEN is off for it (place_create).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_WIDEN_H
#define PLACE_WIDEN_H

#include "internal.h"

/* A cluster's CPUs in its LLC: positions [lo, lo + n); n 0 = no cluster
 * step for this CPU. Read-only after create. */
struct place_span {
	int lo, n;
};

/* One search for an idle CPU outside the usual LLC scan (widen.c): for a
 * wakeup (t set) or a thief (t NULL: any CPU, no cookie). */
struct place_hunt {
	struct place *p;
	const place_task *t;
	bool claim;        /* claim what is found */
	bool cookies;      /* COOKIES: the CPU's core must admit cookie */
	uint64_t cookie;
	int budget;        /* mask bits it may still visit */
	int cpu;           /* the CPU found */
	uint32_t gen;      /* its claim */
	uint64_t probes, lost, false_pos;
};

/* Mask bits a search beyond the target's LLC visits at most (each costs
 * the probes of one core), looking for a whole idle core, then again for
 * an idle CPU: the bound when the summary's hints are stale. The idle-CPU
 * pass has it only where the runtime has thieves (p->widen_budget), which
 * take a task stacked while a CPU is idle. Without thieves that task waits
 * out a whole run, so the pass visits every bit: a stale one costs a core's
 * probes once and is cleared (hunt_core's repair), so the extra probes over
 * a run are bounded by the idle entries that set bits. On the Zen3 model at
 * 2x without stealing, 169 bits were set for 2 idle CPUs beyond the target's
 * LLC; the budget ran out first and the wakee stacked. The whole-core pass
 * keeps the bound: a core it passes over may hold an idle CPU, not cleared. */
#define PLACE_WIDEN_BUDGET 8
/* LLCs a search beyond the target's visits at most (nearest first). */
#define PLACE_WIDEN_LLCS 64

/* A bit of llc's mask went from clear to set: see the protocol above. */
static inline void place__llc_idle_note(struct place_llc *llc)
{
	place_fence_rmw_load(); /* the mask RMW before the summary load */
	if (!(place_load_64(llc->summary) & llc->summary_bit))
		place_or_64(llc->summary, llc->summary_bit);
}

/* LLC llc's word in p->llc_cores (its bit is summary_bit). */
static inline uint64_t *place__llc_cores_word(const struct place *p, const struct place_llc *llc)
{
	return &p->llc_cores[llc->summary - p->llc_idle];
}

/* llc's has_idle_cores just went 0 -> 1 (a CAS): its bit in the idle-core
 * summary (the protocol of llc_cores, internal.h). */
static inline void place__llc_cores_note(struct place *p, struct place_llc *llc)
{
	uint64_t *w = place__llc_cores_word(p, llc);

	place_fence_rmw_load(); /* the CAS before the summary load */
	if (!(place_load_64(w) & llc->summary_bit))
		place_or_64(w, llc->summary_bit);
}

/* A scan of llc found no idle core: has_idle_cores 0, then its summary
 * bit clear, unless has_idle_cores is seen 1 again after the clear. */
static inline void place__llc_cores_none(struct place *p, struct place_llc *llc)
{
	uint64_t *w = place__llc_cores_word(p, llc);

	place_store_32(&llc->has_idle_cores, 0);
	if (!(place_load_64(w) & llc->summary_bit))
		return;
	place_and_64(w, ~llc->summary_bit);
	place_fence_rmw_load(); /* the clear before the flag load; pairs with the note */
	if (place_load_32(&llc->has_idle_cores))
		place_or_64(w, llc->summary_bit);
}

/*
 * SIS_CORE: cpu was just claimed, so it is not idle any more; its mask bit,
 * left set, is a false positive. A scan for idle cores (has_idle_cores)
 * repairs one the first time it meets it; a scan for idle CPUs does not
 * (only a fail-prone one does), so every later scan probes it again: a
 * waker waking N tasks in a row probed up to N-1 CPUs it had itself
 * claimed, per wakeup. So the bit goes at the claim: at once without SMT;
 * with SMT it stands for the whole core (one bit per core), so only while
 * the LLC has no idle core (the next scan is for idle CPUs) and no sibling
 * is available (widen.c, out of line). Returns the CPUs it probed.
 */
uint64_t place__claimed_unpublish(struct place *p, int cpu);

/* cpu was just claimed: claimed is not idle, in the policy's mask. The
 * common case inline: no bit (or, with SMT, an idle core hinted) costs a
 * few loads. Returns the CPUs probed. */
static inline bool place__claim_unpublish_due(const struct place *p, int cpu)
{
	const struct place_llc *llc = p->cpu[cpu].llc; /* on the line the claim just wrote */

	if (p->policy != PLACE_POLICY_SIS_CORE)
		return p->policy == PLACE_POLICY_EXACT;
	return !(llc->smt && place_load_32(&llc->has_idle_cores)) && place_mask_test(llc->icpus, p->map[cpu].pos);
}

/* The work itself, when place__claim_unpublish_due(): a call. */
static inline uint64_t place__claim_unpublish_slow(struct place *p, int cpu)
{
	if (p->policy == PLACE_POLICY_EXACT) {
		place__exact_unpublish(p, cpu);
		return 0;
	}
	return place__claimed_unpublish(p, cpu);
}

static inline uint64_t place__claim_unpublish(struct place *p, int cpu)
{
	return place__claim_unpublish_due(p, cpu) ? place__claim_unpublish_slow(p, cpu) : 0;
}

/* May an LLC other than l have an idle CPU (WIDEN's hint; one load for up
 * to 64 LLCs)? No call: place_wakeup stays a leaf function. */
static inline bool place__widen_elsewhere(const struct place *p, int l)
{
	unsigned own = (unsigned)l / 64;

	if (place_load_64(&p->llc_idle[own]) & ~(UINT64_C(1) << ((unsigned)l % 64)))
		return true;
	for (unsigned i = 0; p->llc_words > 1 && i < (unsigned)p->llc_words; i++)
		if (i != own && place_load_64(&p->llc_idle[i]))
			return true;
	return false;
}

/* Would WIDEN look beyond LLC l for a task that stacks on target: on, some
 * other LLC may have an idle CPU, and, where the runtime has thieves
 * (widen_short_ns), target's running task is not known to be short (it ends
 * within the kernel's migration cost, so waiting there is cheaper than a
 * cold cache elsewhere, and a thief takes the task if it does not).
 * Without thieves the task waits out target's whole run, and a task that
 * stopped sleeping keeps the short average of its last intervals: the
 * simulator's hackbench without stealing waited up to 563 us so. */
static inline bool place__widen_may(const struct place *p, int target, int l)
{
	uint64_t avg;

	if (!p->widen || !place__widen_elsewhere(p, l))
		return false;
	avg = place_load_64(&p->cpu[target].curr_avg_ns);
	return !avg || avg >= p->widen_short_ns;
}

/* The target's cluster, when the scan should try it first (CLUSTER on and
 * the target in a cluster): its span, else NULL. */
static inline const struct place_span *place__cluster_of(const struct place *p, int cpu)
{
	return p->cluster && p->clu[cpu].n ? &p->clu[cpu] : NULL;
}

/*
 * The LLC scan's order (for_each_cpu_wrap from start): without a cluster,
 * [start, nbits) then [0, start); with the target's cluster [lo, hi) first,
 * as the kernel's select_idle_cpu() since v6.7: [start, hi), [lo, start),
 * then the rest of the LLC from hi on, [hi, nbits), [0, lo). Scalars only,
 * so that the scan keeps the iterator in registers.
 */
struct place_scan_iter {
	const uint64_t *w;
	int nbits, start, lo, hi; /* lo == hi: no cluster */
	int seg, nseg;            /* the segment visited (0 ..), of 2 or 4 */
	int from, to;             /* what is left of it: [from, to) */
};

/* Enter segment it->seg. */
static inline void place__scan_seg(struct place_scan_iter *it)
{
	bool c = it->nseg == 4;

	switch (it->seg) {
	case 0:
		it->from = it->start, it->to = c ? it->hi : it->nbits;
		break;
	case 1:
		it->from = c ? it->lo : 0, it->to = it->start;
		break;
	case 2:
		it->from = it->hi, it->to = it->nbits;
		break;
	default:
		it->from = 0, it->to = it->lo;
		break;
	}
}

static inline struct place_scan_iter place__scan_iter(const uint64_t *w, int nbits, int start,
						       const struct place_span *c)
{
	struct place_scan_iter it = { .w = w, .nbits = nbits, .start = start, .nseg = 2 };

	if (c && start >= c->lo && start <= c->lo + c->n) {
		it.lo = c->lo;
		it.hi = c->lo + c->n;
		it.nseg = 4;
	} else if (start >= nbits) {
		it.start = 0;
	}
	place__scan_seg(&it);
	return it;
}

static inline int place__scan_next(struct place_scan_iter *it)
{
	for (;;) {
		int bit = place_mask_next(it->w, it->to, it->from);

		if (bit >= 0) {
			it->from = bit + 1;
			return bit;
		}
		if (++it->seg == it->nseg)
			return -1;
		place__scan_seg(it);
	}
}

/* Was the last position returned in the target's cluster? */
static inline bool place__scan_in_cluster(const struct place_scan_iter *it)
{
	return it->nseg == 4 && it->seg < 2;
}

/* widen.c */
int place__widen_create(struct place *p);
void place__widen_destroy(struct place *p);
bool place__widen(struct place_hunt *h, int target, bool node_only, bool cores);
void place__mask_repair(struct place *p, int cpu, uint64_t *probes, uint64_t *false_pos);

#endif /* PLACE_WIDEN_H */
