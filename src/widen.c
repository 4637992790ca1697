/*
 * Beyond the target's LLC (WIDEN), the cluster spans (CLUSTER) and the
 * task-less thief query place_idle_near(). See widen.h for the LLC summary
 * that bounds the search.
 *
 * WIDEN is sched_ext's order (scx_select_cpu_dfl()) after the kernel's LLC
 * search found nothing: a whole idle core in the target's node, then on
 * the other nodes, nearest first; an idle CPU likewise. The kernel leaves that
 * to its idle balancer; a runtime has none, so the task would stack.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cookie.h"
#include "idle.h"
#include "internal.h"
#include "rcu.h"
#include "widen.h"

/* ---- setup ------------------------------------------------------------- */

/* cpu's cluster span in its LLC: the positions of its cluster's CPUs, if
 * they are contiguous (cores are, in hwloc's order) and hold more than its
 * core and less than the LLC; else none. O(LLC) per CPU, at create. */
static struct place_span cluster_span(const struct place *p, int cpu)
{
	const struct place_topo *t = p->topo;
	const struct place_cpu_map *m = &p->map[cpu];
	int id = t->cpu[cpu].cluster, lo = -1, hi = -1, n = 0;
	struct place_span none = { 0, 0 };

	if (id < 0)
		return none;
	for (int pos = 0; pos < p->llc[m->llc].weight; pos++) {
		if (t->cpu[place__llc_cpu(p, m->llc, pos)].cluster != id)
			continue;
		if (lo < 0)
			lo = pos;
		hi = pos;
		n++;
	}
	if (hi - lo + 1 != n || n <= m->smt || n >= p->llc[m->llc].weight)
		return none;
	return (struct place_span){ lo, n };
}

/* How far nodes a and b are: 1 for every other node without a matrix,
 * else the mean of hwloc's two latencies (a wakeup runs b's CPUs on memory
 * near a, a thief the other way round; firmware tables are symmetric, as
 * the kernel assumes, a hand-made one need not be); unknown the farthest. */
static int node_far(const struct place_topo *t, int a, int b)
{
	const int *d = t->node_dist;
	int n = t->nr_nodes, ab, ba;

	if (!d)
		return 1;
	ab = d[a * n + b];
	ba = d[b * n + a];
	if (ab > 0 && ba > 0)
		return (int)(((int64_t)ab + ba) / 2);
	return ab > 0 ? ab : ba > 0 ? ba : INT_MAX;
}

/* ring[a * nr_nodes + b]: the ring of node b seen from a, 0 for a itself,
 * k for the k-th smallest of a's distances to its other nodes (ties share
 * a ring); *nr the rings of the node that has most. NULL on ENOMEM. */
static int *ring_table(const struct place_topo *t, int *nr)
{
	int nn = t->nr_nodes, *ring = calloc((size_t)nn * (size_t)nn, sizeof(int)), *u = malloc((size_t)nn * sizeof(int));

	*nr = 1;
	if (!ring || !u) {
		free(ring);
		free(u);
		return NULL;
	}
	for (int a = 0; a < nn; a++) {
		int m = 0; /* a's distinct distances, u[0 .. m) ascending */

		for (int b = 0; b < nn; b++) {
			int d = node_far(t, a, b), i = 0;

			while (b != a && i < m && u[i] < d)
				i++;
			if (b == a || (i < m && u[i] == d))
				continue;
			memmove(&u[i + 1], &u[i], (size_t)(m - i) * sizeof(int));
			u[i] = d;
			m++;
		}
		for (int b = 0; b < nn; b++) {
			int d = node_far(t, a, b), i = 0;

			while (b != a && u[i] != d) /* d is among u[0 .. m) */
				i++;
			ring[a * nn + b] = b == a ? 0 : i + 1;
		}
		if (m + 1 > *nr)
			*nr = m + 1;
	}
	free(u);
	return ring;
}

/* node_ring and node_rings (internal.h): a search beyond the target's
 * node (and a thief's steal order, steal.c) visits the nearer nodes
 * before the farther ones; the LLCs of one ring in LLC order from the
 * target's. */
static int build_rings(struct place *p)
{
	const struct place_topo *t = p->topo;
	int words = PLACE_MASK_WORDS(t->nr_llcs);

	p->node_ring = ring_table(t, &p->nr_rings);
	p->node_rings = p->node_ring ? calloc((size_t)t->nr_nodes * (size_t)p->nr_rings * (size_t)words,
					      sizeof(uint64_t))
				     : NULL;
	if (!p->node_rings)
		return -ENOMEM;
	for (int l = 0; l < t->nr_llcs; l++) {
		int node = p->map[place__llc_cpu(p, l, 0)].node; /* its first CPU's */

		for (int a = 0; a < t->nr_nodes; a++)
			p->node_rings[(a * p->nr_rings + p->node_ring[a * t->nr_nodes + node]) * words + l / 64] |=
				UINT64_C(1) << (l % 64);
	}
	return 0;
}

int place__widen_create(struct place *p)
{
	const struct place_topo *t = p->topo;

	p->clu = calloc((size_t)t->nr_cpus, sizeof(*p->clu));
	p->llc_idle = aligned_alloc(PLACE_CACHELINE, (size_t)(PLACE_MASK_WORDS(t->nr_llcs) + 7) / 8 * 64);
	p->llc_cores = aligned_alloc(PLACE_CACHELINE, (size_t)(PLACE_MASK_WORDS(t->nr_llcs) + 7) / 8 * 64);
	if (!p->clu || !p->llc_idle || !p->llc_cores || build_rings(p) < 0)
		return -ENOMEM;
	for (int i = 0; i < (PLACE_MASK_WORDS(t->nr_llcs) + 7) / 8 * 8; i++)
		p->llc_idle[i] = p->llc_cores[i] = 0;
	for (int l = 0; l < t->nr_llcs; l++) {
		p->llc_idle[l / 64] |= UINT64_C(1) << (l % 64); /* a hint: the first search repairs it */
		p->llc_cores[l / 64] |= UINT64_C(1) << (l % 64);
		p->llc[l].summary = &p->llc_idle[l / 64];
		p->llc[l].summary_bit = UINT64_C(1) << (l % 64);
	}
	p->llc_words = PLACE_MASK_WORDS(t->nr_llcs);
	p->widen = place__feat(p, PLACE_FEAT_WIDEN) && p->policy != PLACE_POLICY_LINEAR && t->nr_llcs > 1;
	p->cores_summary = p->policy != PLACE_POLICY_LINEAR && t->nr_llcs <= PLACE_WIDEN_LLCS;
	for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
		p->clu[cpu] = cluster_span(p, cpu);
		if (p->clu[cpu].n && place__feat(p, PLACE_FEAT_CLUSTER))
			p->cluster = true;
	}
	return 0;
}

void place__widen_destroy(struct place *p)
{
	free(p->clu);
	free(p->node_ring);
	free(p->node_rings);
	free(p->llc_idle);
	free(p->llc_cores);
}

/* ---- repair (shared with select.c) ------------------------------------- */

/*
 * False-positive repair (seed 001 patch 4): cpu's bit is set but nothing in
 * its core is available. Clear the bits of the whole core (a sibling's bit is
 * just as false), then look at the core again: a sibling may have entered
 * idle between our probes and the clear and, seeing a bit still set, not set
 * its own. idle_enter sets IDLE then reads the mask; we clear the bits then
 * read the states (both sequentially consistent): one of the two sees the
 * other, so an idle core never drops out of the mask.
 */
void place__mask_repair(struct place *p, int cpu, uint64_t *probes, uint64_t *false_pos)
{
	const struct place_cpu_map *m = &p->map[cpu];
	struct place_llc *llc = &p->llc[m->llc];
	uint64_t cleared = 0;

	for (int i = 0; i < m->smt; i++)
		cleared += place_mask_clear(llc->icpus, m->core_lo + i);
	if (!cleared)
		return;
	*false_pos += cleared;
	place_fence_rmw_load(); /* the clears before the state loads; pairs with idle_enter */
	for (int i = 0; i < m->smt; i++) {
		++*probes;
		if (place__st_available(place__state(p, place__sibling(p, m, i)))) {
			if (place_mask_set(llc->icpus, m->core_lo + i))
				place__llc_idle_note(llc);
			return;
		}
	}
}

/* ---- a claim's bit (SIS_CORE, widen.h) -------------------------------- */

/* Is an SMT sibling of cpu available? Each state read is a probe. */
static bool sibling_available(const struct place *p, int cpu, uint64_t *probes)
{
	for (int sib = p->sib_next[cpu]; sib != cpu; sib = p->sib_next[sib])
		if (++*probes, place__st_available(place__state(p, sib)))
			return true;
	return false;
}

/* The bit of claimed cpu is set (and with SMT no idle core is hinted):
 * clear it unless a sibling is available. The siblings are read again
 * after the clear (the Dekker pair of repair(): a sibling entering idle saw
 * the bit and set none of its own), and the bit comes back for one found
 * available. */
uint64_t place__claimed_unpublish(struct place *p, int cpu)
{
	const struct place_cpu_map *m = &p->map[cpu];
	struct place_llc *llc = &p->llc[m->llc];
	uint64_t probes = 0;

	if (m->smt > 1 && sibling_available(p, cpu, &probes))
		return probes;
	place_mask_clear(llc->icpus, m->pos);
	if (m->smt < 2)
		return probes;
	place_fence_rmw_load(); /* the clear before the state loads; pairs with idle_enter */
	if (sibling_available(p, cpu, &probes) && place_mask_set(llc->icpus, m->pos))
		place__llc_idle_note(llc);
	return probes;
}

/* ---- the search -------------------------------------------------------- */


/* cpu, seen in state s, for h: available, allowed, its core admits h's
 * cookie; claimed unless h only answers. A lost claim moves on. */
PLACE_INLINE bool hunt_take(struct place_hunt *h, int cpu, uint64_t s)
{
	struct place *p = h->p;

	if (!place__st_available(s) || (h->t && !place__allowed(p, h->t, cpu)))
		return false;
	if (h->cookies && !place__cookie_admits(p, cpu, h->cookie))
		return false;
	if (h->claim && !place__st_claim(&p->cpu[cpu].state, s, &h->gen)) {
		h->lost++;
		return false;
	}
	if (h->claim)
		h->probes += place__claim_unpublish(p, cpu);
	h->cpu = cpu;
	return true;
}

/* The core of mask CPU cpu: cpu when the whole core is available (whole),
 * else any available CPU of it (the core granule hides siblings). A core
 * with nothing available is a false positive: repaired (SIS_CORE). */
static bool hunt_core(struct place_hunt *h, int cpu, bool whole)
{
	struct place *p = h->p;
	const struct place_cpu_map *m = &p->map[cpu];
	int avail = 0;

	for (int i = 0; i < m->smt; i++) {
		int sib = place__sibling(p, m, i);
		uint64_t s = place__state(p, sib);

		h->probes++;
		if (!place__st_available(s))
			continue;
		avail++;
		if (!whole && hunt_take(h, sib, s))
			return true;
	}
	if (whole && avail == m->smt)
		return h->probes++, hunt_take(h, cpu, place__state(p, cpu));
	if (!avail && p->policy == PLACE_POLICY_SIS_CORE)
		place__mask_repair(p, cpu, &h->probes, &h->false_pos);
	return false;
}

/* LLC l's mask (icpus for llc_idle, EXACT's icores for llc_cores) was
 * seen empty: clear l's bit in that summary, then look again (the protocol
 * of widen.h). */
static void summary_clear(uint64_t *summary, const struct place_llc *llc, int l, const uint64_t *mask)
{
	if (!place_mask_clear(summary, l))
		return;
	place_fence_rmw_load(); /* the summary clear before the mask loads */
	if (place_mask_next(mask, llc->weight, 0) >= 0)
		place_mask_set(summary, l);
}

/* The mask a search visits in LLC l: whole cores (EXACT's icores; the
 * others' idle mask when an idle core is hinted), else idle CPUs. NULL when
 * there is nothing to look for. */
static const uint64_t *hunt_mask(const struct place *p, const struct place_llc *llc, bool whole)
{
	if (whole && (!llc->smt || (p->policy != PLACE_POLICY_EXACT && !place_load_32(&llc->has_idle_cores))))
		return NULL;
	if (p->policy == PLACE_POLICY_LINEAR)
		return llc->span; /* no mask: every core, within the budget */
	return whole && p->policy == PLACE_POLICY_EXACT ? llc->icores : llc->icpus;
}

/* Visit the candidates of LLC l in mask from position start (cluster c
 * first when given), one core each, while the budget lasts. */
PLACE_NOINLINE bool hunt_llc(struct place_hunt *h, int l, const uint64_t *mask, int start, bool whole,
			     const struct place_span *c)
{
	struct place *p = h->p;
	struct place_llc *llc = &p->llc[l];
	struct place_scan_iter it = place__scan_iter(mask, llc->weight, start, c);
	int pos, last_core = -1, seen = 0;

	while (h->budget > 0 && (pos = place__scan_next(&it)) >= 0) {
		int cpu = place__llc_cpu(p, l, pos);

		if (p->map[cpu].core_lo == last_core)
			continue; /* a sibling's bit: its core was just examined */
		last_core = p->map[cpu].core_lo;
		seen++;
		h->budget--;
		if (hunt_core(h, cpu, whole))
			return true;
	}
	if (!seen && !whole && p->policy != PLACE_POLICY_LINEAR)
		summary_clear(p->llc_idle, llc, l, llc->icpus);
	else if (!seen && p->policy == PLACE_POLICY_EXACT)
		summary_clear(p->llc_cores, llc, l, llc->icores);
	else if (whole && h->budget > 0 && p->policy == PLACE_POLICY_SIS_CORE &&
		 place_load_32(&llc->has_idle_cores))
		place__llc_cores_none(p, llc); /* a full scan found no idle core */
	return false;
}

/* The LLCs of word i a pass looks at: summary bit set, in the ring, and
 * for a whole core in llc_cores (the others have none to look for). */
PLACE_INLINE uint64_t ring_word(const struct place *p, const uint64_t *ring, int i, bool whole)
{
	uint64_t bits = place_load_64(&p->llc_idle[i]) & ring[i];

	return whole && p->cores_summary ? bits & place_load_64(&p->llc_cores[i]) : bits;
}

/* Visit LLC l for h, counted in *seen (LLCs visited by this pass, whether
 * they had anything to look at or not): -1 found, 0 budget spent, else 1. */
PLACE_INLINE int hunt_visit(struct place_hunt *h, const struct place_cpu_map *tm, int l, bool whole, int *seen)
{
	const uint64_t *mask = hunt_mask(h->p, &h->p->llc[l], whole);

	++*seen;
	if (mask && hunt_llc(h, l, mask, tm->pos, whole, NULL))
		return -1;
	return h->budget > 0;
}

/* One ring of LLCs (ring: its mask) whose bit ring_word() gives, from the
 * target's LLC on and wrapping, each visited while the budget lasts and *seen stays below
 * PLACE_WIDEN_LLCS. Up to 64 LLCs, one word rotated so that the ring's
 * order is its bits' order. Beyond, one word at a time, the target's word
 * twice (above the target first, below it last), each read when its turn
 * comes (the LLCs visited before it change only their own bits): a search
 * that ends in its first LLCs reads no further. Returns -1 when found, 0
 * when the budget ran out, else 1. */
PLACE_INLINE int hunt_ring(struct place_hunt *h, const struct place_cpu_map *tm, const uint64_t *ring, bool whole,
			  int *seen)
{
	const struct place *p = h->p;
	int words = p->llc_words, w0 = (int)((unsigned)tm->llc / 64), r = 1;
	unsigned after = ((unsigned)tm->llc + 1) % 64; /* the bit after the target's */
	uint64_t self = UINT64_C(1) << ((unsigned)tm->llc % 64), bits;

	if (words == 1) {
		bits = ring_word(p, ring, 0, whole) & ~self;
		bits = after ? bits >> after | bits << (64 - after) : bits;
		for (; bits && *seen < PLACE_WIDEN_LLCS && r > 0; bits &= bits - 1)
			r = hunt_visit(h, tm, (int)(((unsigned)__builtin_ctzll(bits) + after) % 64), whole, seen);
		return r;
	}
	for (int k = 0, i = w0; k <= words; k++, i = i + 1 < words ? i + 1 : 0) {
		bits = ring_word(p, ring, i, whole);
		if (i == w0)
			bits &= k == 0 ? ~(self | (self - 1)) : self - 1;
		for (; bits && *seen < PLACE_WIDEN_LLCS && r > 0; bits &= bits - 1)
			r = hunt_visit(h, tm, i * 64 + __builtin_ctzll(bits), whole, seen);
		if (r <= 0)
			return r;
	}
	return 1;
}

/* A pass over the LLCs ring by ring, from ring (the target's node's) to
 * end (the nearest other nodes first), at most PLACE_WIDEN_LLCS, with a
 * fresh budget (widen.h: the whole-core pass's, the idle-CPU pass's):
 * found, or not. */
PLACE_INLINE bool hunt_rings(struct place_hunt *h, const struct place_cpu_map *tm, const uint64_t *ring,
			     const uint64_t *end, bool whole)
{
	int seen = 0, r;

	h->budget = whole ? PLACE_WIDEN_BUDGET : h->p->widen_budget;
	do
		r = hunt_ring(h, tm, ring, whole, &seen);
	while (r > 0 && (ring += h->p->llc_words) < end);
	return r < 0;
}

/*
 * Beyond the target's LLC, in sched_ext's order: a whole idle core (cores)
 * in the target's node, then on the other nodes, the nearest first (by
 * hwloc's latencies, node_rings); an idle CPU in the node, then on the
 * others likewise (node_only: never off the node). Only LLCs whose summary bit is
 * set are visited, at most PLACE_WIDEN_LLCS of them, and at most
 * PLACE_WIDEN_BUDGET mask bits (one core each) for a whole core, as many
 * for an idle CPU. The idle-CPU pass reads llc_idle again: the
 * whole-core pass clears none of its bits, and sets only bits already set
 * (a repair's). It reads llc_cores too (cores_summary), which it keeps
 * as llc_idle is kept (EXACT: summary_clear() of an empty icores).
 */
bool place__widen(struct place_hunt *h, int target, bool node_only, bool cores)
{
	const struct place *p = h->p;
	const struct place_cpu_map *tm = &p->map[target];
	const uint64_t *ring = &p->node_rings[tm->node * p->nr_rings * p->llc_words]; /* its node's */
	const uint64_t *end = ring + (node_only ? 1 : p->nr_rings) * p->llc_words;

	return (cores && hunt_rings(h, tm, ring, end, true)) || hunt_rings(h, tm, ring, end, false);
}

/* ---- the thief query --------------------------------------------------- */

/* Near d inside its LLC: its SMT siblings, then its cluster, then the rest
 * of the LLC (the whole mask: no budget; a thief query is no wakeup). */
static bool near_llc(struct place_hunt *h, int d)
{
	struct place *p = h->p;
	const struct place_cpu_map *m = &p->map[d];
	struct place_llc *llc = &p->llc[m->llc];
	const uint64_t *mask = hunt_mask(p, llc, false);
	struct place_scan_iter it;
	int pos;

	(void)llc;
	for (int sib = p->sib_next[d]; sib != d; sib = p->sib_next[sib])
		if (h->probes++, hunt_take(h, sib, place__state(p, sib)))
			return true;
	it = place__scan_iter(mask, llc->weight, m->pos + 1, p->clu[d].n ? &p->clu[d] : NULL);
	while ((pos = place__scan_next(&it)) >= 0) {
		int cpu = place__llc_cpu(p, m->llc, pos);

		if (p->map[cpu].core_lo != m->core_lo && hunt_core(h, cpu, false))
			return true;
	}
	return false;
}

PLACE_EXTERN int place_idle_near(place *p, int cpu, unsigned flags)
{
	struct place_hunt h = { .p = p };
	int d;
	bool found;

	if (!p || (flags & ~PLACE_WAKE_NOCLAIM))
		return -EINVAL;
	d = place__dense(p, cpu);
	if (d < 0)
		return -ENODEV;
	h.claim = !(flags & PLACE_WAKE_NOCLAIM) && place__feat(p, PLACE_FEAT_CLAIM);
	if (!place__read_ready())
		place__read_register();
	place__read_lock();
	found = near_llc(&h, d) || (p->topo->nr_llcs > 1 && place__widen(&h, d, false, false));
	place__read_unlock(p);
	if (h.lost)
		place__count(p, -1, p->map[d].llc, PLACE_STAT_lost_claims, h.lost);
	if (h.false_pos)
		place__count(p, -1, p->map[d].llc, PLACE_STAT_false_positives, h.false_pos);
	return found ? p->map[h.cpu].os : -EAGAIN;
}
