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
 * the probes of one core): the bound at saturation besides the summary. */
#define PLACE_WIDEN_BUDGET 8

/* A bit of LLC l's mask went from clear to set: see the protocol above. */
static inline void place__llc_idle_note(struct place *p, int l)
{
	place_fence_rmw_load(); /* the mask RMW before the summary load */
	place_mask_set(p->llc_idle, l);
}

/* May an LLC other than l have an idle CPU (WIDEN's hint; one load for up
 * to 64 LLCs)? */
static inline bool place__widen_elsewhere(const struct place *p, int l)
{
	int words = PLACE_MASK_WORDS(p->topo->nr_llcs);

	for (int i = 0; i < words; i++) {
		uint64_t w = place_load_64(&p->llc_idle[i]);

		if (i == l / 64)
			w &= ~(UINT64_C(1) << (l % 64));
		if (w)
			return true;
	}
	return false;
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
 * then the rest of the LLC from hi on, [hi, nbits), [0, lo).
 */
struct place_scan_iter {
	const uint64_t *w;
	int seg[4][2]; /* [from, to) in visiting order */
	int nseg, i;
	int pos;       /* last position returned, -1 at a segment's start */
	int in_cluster;/* segments before this one are the cluster's */
};

static inline struct place_scan_iter place__scan_iter(const uint64_t *w, int nbits, int start,
						       const struct place_span *c)
{
	struct place_scan_iter it = { .w = w, .pos = -1 };

	if (!c || start < c->lo || start > c->lo + c->n) {
		if (start >= nbits)
			start = 0;
		it.seg[0][0] = start, it.seg[0][1] = nbits;
		it.seg[1][0] = 0, it.seg[1][1] = start;
		it.nseg = 2;
		return it;
	}
	it.seg[0][0] = start, it.seg[0][1] = c->lo + c->n;
	it.seg[1][0] = c->lo, it.seg[1][1] = start;
	it.seg[2][0] = c->lo + c->n, it.seg[2][1] = nbits;
	it.seg[3][0] = 0, it.seg[3][1] = c->lo;
	it.nseg = 4;
	it.in_cluster = 2;
	return it;
}

static inline int place__scan_next(struct place_scan_iter *it)
{
	while (it->i < it->nseg) {
		int from = it->pos < 0 ? it->seg[it->i][0] : it->pos + 1;
		int bit = place_mask_next(it->w, it->seg[it->i][1], from);

		if (bit >= 0)
			return it->pos = bit;
		it->i++;
		it->pos = -1;
	}
	return -1;
}

/* Was the last position returned in the target's cluster? */
static inline bool place__scan_in_cluster(const struct place_scan_iter *it)
{
	return it->i < it->in_cluster;
}

/* widen.c */
int place__widen_create(struct place *p);
void place__widen_destroy(struct place *p);
bool place__widen(struct place_hunt *h, int target, bool node_only, bool cores);
void place__mask_repair(struct place *p, int cpu, uint64_t *probes, uint64_t *false_pos);

#endif /* PLACE_WIDEN_H */
