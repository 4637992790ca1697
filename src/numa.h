/*
 * NUMA groups (seed 003, DESIGN.md mechanism 10), the inline parts of the
 * hot path: the group check every task edge makes, run_begin's count and
 * run_end's uncount. The wakeup's decision and the bookkeeping around it are
 * in numa.c.
 *
 * A task may belong to a group (an address space, a tenant): 1..max_groups,
 * 0 = none. For every node and group, the number of the group's tasks
 * running on the node's CPUs:
 *
 *   p->numa_running[node * p->numa_stride + group - 1]
 *
 * Each node's block is whole cache lines of its own, written only by the
 * CPUs of that node: a run_begin adds 1 to the group's counter of its CPU's
 * node, its run_end (any how) or the worker's unregister removes exactly
 * that (the group captured in the CPU's stat slot, curr_group). Several
 * workers of one node may write the block, so the writes are atomic adds
 * (relaxed: a counter is a hint, nothing is published through it); the
 * line bounces only inside the node, never between nodes: no group-wide
 * atomics on the hot path, which is what the reviewers of seed 003 refused
 * in its per-mm array. Wakeups on any node read the counters relaxed, as
 * hints: a stale count costs one placement decision, never correctness.
 *
 * Tasks without a group, a machine with one node, or the feature off:
 * nothing is counted, nothing is atomic, one predictable branch.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_NUMA_H
#define PLACE_NUMA_H

#include "internal.h"

/*
 * Per node, what wakers on other nodes write: the tasks moved towards the
 * node by a NUMA move that have not started running yet (the concurrent
 * moves cap). Alone on its line, away from the node-local running counts,
 * so that remote wakers never bounce those. Written by a moving waker (CAS
 * bounded by the cap, any node: only on a move) and by the moved task's
 * run_begin (atomic add of -1); read relaxed by deciding wakeups.
 */
struct place_numa_node {
	alignas(PLACE_CACHELINE) uint64_t moving;
	/* The node's load sample for the cross-node decision (numa.c
	 * node_load()): tasks on its CPUs (running + queued) and its usable
	 * CPUs, summed from the per-CPU lines, used by at most load_uses_max
	 * decisions within util_period_ns. load_stamp is the gate: the decider
	 * whose CAS moves it (forward, or at the same time once the uses are
	 * spent) rescans and stores nr, cap and uses 0 (relaxed); deciders read
	 * them relaxed and count a use with a plain load and store (relaxed: a
	 * lost use lets the sample answer one more decision). A torn sample
	 * skews one decision: the counts are hints, as the kernel's NUMA
	 * statistics are. load_uses_max is read-only after create. */
	alignas(PLACE_CACHELINE) uint64_t load_stamp; /* when sampled, 0 = never */
	uint64_t load_nr;
	uint64_t load_cap;
	uint64_t load_uses;
	uint64_t load_uses_max;
};

/* The running count of group g (>= 1) on node n. */
static inline uint64_t *place__numa_slot(const struct place *p, int node, uint32_t g)
{
	return &p->numa_running[(size_t)node * p->numa_stride + (g - 1)];
}

/* May a task of group g use this instance: -ENOSPC when NUMA is on and g is
 * above max_groups (refused before anything changes). */
static inline int place__numa_check(const struct place *p, uint32_t g)
{
	return g > p->max_groups && place__feat(p, PLACE_FEAT_NUMA) ? -ENOSPC : 0;
}

/* Does a wakeup of group g from waker (dense) with t's prev (dense) cross
 * nodes in a way the NUMA step decides: counting on, a group, two nodes. */
static inline bool place__numa_cross(const struct place *p, uint32_t g, int prev, int waker)
{
	return g && p->numa_count && p->map[prev].node != p->map[waker].node;
}

void place__numa_started(struct place *p, struct place_task_rec *r);

/*
 * run_begin on dense cpu of a task of group g (checked): a move that was
 * pending ends (the cap's count), and the group counts one more running
 * task on cpu's node. Only the worker of cpu.
 */
static inline void place__numa_begin(struct place *p, int cpu, struct place_task_rec *r, uint32_t g)
{
	struct place_stat_slot *s = &p->slot[cpu];

	if (r->numa_pending)
		place__numa_started(p, r); /* slow path: the task was moved here */
	if (!g || !p->numa_count) {
		s->curr_group = 0;
		return;
	}
	/* relaxed atomic add on this node's line (other workers of the node add
	 * too); readers are wakeup hints, nothing is published through it */
	place_add_64(place__numa_slot(p, p->map[cpu].node, g), 1);
	s->curr_group = g;
}

/* The task run_begin counted on dense cpu stops running there (run_end of
 * any how, or unregister while it runs): uncount exactly what was counted.
 * Only the worker of cpu (or unregister, not concurrently with it). */
static inline void place__numa_end(struct place *p, int cpu)
{
	struct place_stat_slot *s = &p->slot[cpu];

	if (!s->curr_group)
		return;
	place_add_64(place__numa_slot(p, p->map[cpu].node, (uint32_t)s->curr_group), (uint64_t)-1);
	s->curr_group = 0;
}

/* numa.c */
int place__numa_create(struct place *p, uint32_t max_groups, uint32_t cap, uint64_t cooldown_ns);
void place__numa_destroy(struct place *p);
int place__numa_choose(struct place *p, struct place_task_rec *r, uint32_t g, int prev, int waker,
		       int choice, bool commit, int slot);

#endif /* PLACE_NUMA_H */
