/*
 * NUMA groups (seed 003), the slow parts: the per-node arrays, the wakeup's
 * cross-node decision with its cool-down and moves cap, and
 * place_task_set_group(). The counters and their writers are in numa.h.
 *
 * The decision, for a wakeup of a task of group g whose previous CPU (node
 * src) and waker (node dst) sit on different nodes:
 *
 *   running(n) = g's tasks running on node n (the node-local counters)
 *   nr(n), cap(n) = tasks on n's CPUs (running + queued), registered CPUs,
 *                   as sampled at most util_period_ns and n's CPUs / 8 + 1
 *                   decisions ago (node_load())
 *
 *   - in the cool-down after its last NUMA move: stay on src (no cross-node
 *     move at all, not even wake_affine's), counted numa_cooldown_skips
 *     when one was wanted;
 *   - running(dst) == running(src): no preference, the kernel's choice;
 *   - running(dst) < running(src): stay on src, where the group runs more;
 *   - running(dst) > running(src): move to dst when the seed's rule
 *     running(dst) * nr(src) >= running(src) * nr(dst) holds (the group's
 *     share of dst is at least its share of src) and dst is not more
 *     loaded: it keeps a CPU free for t (nr(dst) < cap(dst)) or is less
 *     loaded per CPU than src; else stay (numa_kept). A move also needs a
 *     slot under the moves cap of dst (else numa_cap_skips).
 *
 * A cross-node wakeup of a grouped task is so decided by the group alone:
 * wake_affine's choice stands only when the group gives no preference.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "numa.h"

#define NUMA_MAX_GROUPS UINT32_C(65536) /* bounds the arrays: nodes * this * 8 bytes */

int place__numa_create(struct place *p, uint32_t max_groups, uint32_t cap, uint64_t cooldown_ns)
{
	const struct place_topo *t = p->topo;
	size_t bytes;
	int *fill;

	p->max_groups = max_groups;
	p->numa_move_cap = cap;
	p->numa_cooldown_ns = cooldown_ns;
	if (!place__feat(p, PLACE_FEAT_NUMA) || t->nr_nodes < 2)
		return 0; /* nothing to count: one node, or the feature off */
	p->numa_stride = ((size_t)max_groups + 7) / 8 * 8; /* whole 64-byte lines per node */
	bytes = (size_t)t->nr_nodes * p->numa_stride * sizeof(uint64_t);
	p->numa_running = aligned_alloc(PLACE_CACHELINE, bytes);
	p->numa_node = aligned_alloc(PLACE_CACHELINE, (size_t)t->nr_nodes * sizeof(*p->numa_node));
	p->numa_node_start = calloc((size_t)t->nr_nodes + 1, sizeof(int));
	p->numa_node_cpus = calloc((size_t)t->nr_cpus, sizeof(int));
	fill = calloc((size_t)t->nr_nodes, sizeof(int));
	if (!p->numa_running || !p->numa_node || !p->numa_node_start || !p->numa_node_cpus || !fill) {
		free(fill);
		return -ENOMEM;
	}
	memset(p->numa_running, 0, bytes);
	memset(p->numa_node, 0, (size_t)t->nr_nodes * sizeof(*p->numa_node));
	for (int cpu = 0; cpu < t->nr_cpus; cpu++)
		p->numa_node_start[t->cpu[cpu].node + 1]++;
	for (int n = 0; n < t->nr_nodes; n++)
		p->numa_node_start[n + 1] += p->numa_node_start[n];
	for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
		int n = t->cpu[cpu].node;

		p->numa_node_cpus[p->numa_node_start[n] + fill[n]++] = cpu;
	}
	for (int n = 0; n < t->nr_nodes; n++) /* node_load() says why */
		p->numa_node[n].load_uses_max = (uint64_t)fill[n] / 8 + 1;
	free(fill);
	p->numa_count = true;
	return 0;
}

void place__numa_destroy(struct place *p)
{
	free(p->numa_node_cpus);
	free(p->numa_node_start);
	free(p->numa_node);
	free(p->numa_running);
}

/* t, moved to a node and counted in its moving count, starts running (on
 * any CPU): its slot under the cap is free again. Partner: the CAS in
 * take_move_slot(); relaxed, the count is a bound on a hint. */
void place__numa_started(struct place *p, struct place_task_rec *r)
{
	place_add_64(&p->numa_node[r->numa_pending - 1].moving, (uint64_t)-1);
	r->numa_pending = 0;
}

/* Tasks on node n's CPUs (running + queued) and its registered CPUs, from
 * the per-CPU lines (relaxed hints): O(CPUs of the node). */
static void node_scan(const struct place *p, int n, uint64_t *nr, uint64_t *cap)
{
	*nr = *cap = 0;
	for (int i = p->numa_node_start[n]; i < p->numa_node_start[n + 1]; i++) {
		const struct place_cpu *c = &p->cpu[p->numa_node_cpus[i]];
		uint64_t s = place_load_64(&c->state);

		if (!place__st_usable(s))
			continue; /* no worker, or not in the current topology */
		++*cap;
		*nr += place_load_32(&c->running) + place__st_queued(s);
	}
}

/*
 * Node n's load as of at most util_period_ns ago and at most load_uses_max
 * decisions ago (the sample in place_numa_node). Scanning a node's lines on
 * every cross-node decision cost 2.6x the whole wakeup on 2 x 128 CPUs
 * (place-bench --groups 8); a sample costs that once per node and
 * cpus / 8 + 1 decisions: about 16 CPU lines per decision. The bound in
 * decisions is what keeps the rule's answers right: each decision may move
 * one task, so those that one sample answers change the node's load by at
 * most an eighth of its CPUs (plus one); a sample held for a period alone
 * answered every decision of a burst with the same "room" (2 x 32 CPUs:
 * 8 groups piled onto one node within 1 ms and stayed, 40% slower than
 * NUMA off). now: the caller's clock.
 */
static void node_load(struct place *p, int n, uint64_t now, uint64_t *nr, uint64_t *cap)
{
	struct place_numa_node *nd = &p->numa_node[n];
	uint64_t stamp = place_load_64(&nd->load_stamp), uses = place_load_64(&nd->load_uses);

	if (stamp && (now < stamp || now - stamp < p->util_period_ns) && uses < nd->load_uses_max) {
		place_store_64(&nd->load_uses, uses + 1);
		*nr = place_load_64(&nd->load_nr);
		*cap = place_load_64(&nd->load_cap);
		return;
	}
	node_scan(p, n, nr, cap);
	if (place_cas_64(&nd->load_stamp, &stamp, now > stamp ? now : stamp ? stamp : 1)) {
		place_store_64(&nd->load_nr, *nr);
		place_store_64(&nd->load_cap, *cap);
		place_store_64(&nd->load_uses, 1);
	}
}

/* A slot under dst's moves cap: one CAS bounded by the cap, only on a move
 * (the one atomic of the wakeup path, and only then). Sequentially
 * consistent CAS; partner: place__numa_started()'s add. False when the cap
 * is reached. */
static bool take_move_slot(struct place *p, int dst)
{
	uint64_t *moving = &p->numa_node[dst].moving;
	uint64_t old = place_load_64(moving);

	do {
		if (old >= p->numa_move_cap)
			return false;
	} while (!place_cas_64(moving, &old, old + 1));
	return true;
}

/*
 * The NUMA step of a wakeup (see the top of the file): prev and waker are
 * dense CPUs on different nodes, choice is wake_affine's (one of them).
 * Returns prev or waker. commit: a real wakeup (not NOCLAIM), which may
 * move t (its record, the cap) and counts; otherwise this only answers.
 * Statistics go to slot: the waker's when the caller is its worker, else
 * -1 (PLACE_WAKE_REMOTE: the waker's LLC's external slot).
 */
int place__numa_choose(struct place *p, struct place_task_rec *r, uint32_t g, int prev, int waker,
		       int choice, bool commit, int slot)
{
	int src = p->map[prev].node, dst = p->map[waker].node;
	uint64_t rs = place_load_64(place__numa_slot(p, src, g));
	uint64_t rd = place_load_64(place__numa_slot(p, dst, g));
	uint64_t nr_src, cap_src, nr_dst, cap_dst, now = 0;
	enum place_stat_id skip;

	if (r->numa_moved_ns) {
		now = place__now(p);
		if (now - r->numa_moved_ns < p->numa_cooldown_ns) {
			if (commit && (rd > rs || choice == waker))
				place__count(p, slot, p->map[waker].llc, PLACE_STAT_numa_cooldown_skips, 1);
			return prev; /* no ping-pong: stay where the last move put it */
		}
	}
	if (rd == rs)
		return choice; /* the group gives no preference */
	if (rd < rs)
		return prev; /* the group runs more on prev's node */
	/* dst first: when the group has nothing running on src (the rule
	 * holds: rd * nr_src >= 0) and dst has room, src's load cannot change
	 * the answer and is not looked at */
	if (!now)
		now = place__now(p);
	node_load(p, dst, now, &nr_dst, &cap_dst);
	if (rs == 0 && nr_dst < cap_dst)
		nr_src = cap_src = 0;
	else
		node_load(p, src, now, &nr_src, &cap_src);
	skip = PLACE_STAT_numa_kept;
	if (rd * nr_src >= rs * nr_dst && (nr_dst < cap_dst || nr_dst * cap_src < nr_src * cap_dst)) {
		if (!commit)
			return place_load_64(&p->numa_node[dst].moving) < p->numa_move_cap ? waker : prev;
		if (take_move_slot(p, dst)) {
			if (r->numa_pending)
				place__numa_started(p, r); /* an earlier move it never ran after */
			r->numa_pending = (uint32_t)dst + 1;
			r->numa_moved_ns = now ? now : 1; /* 0 means "never moved" */
			place__count(p, slot, p->map[waker].llc, PLACE_STAT_numa_moves, 1);
			return waker;
		}
		skip = PLACE_STAT_numa_cap_skips;
	}
	if (commit)
		place__count(p, slot, p->map[waker].llc, skip, 1);
	return prev;
}

PLACE_EXTERN int place_task_set_group(place_task *t, uint32_t group)
{
	struct place_task_rec *r = place__task_rec(t);

	if (!r)
		return -EINVAL;
	/* Relaxed: read once by t's next run_begin (which captures it for its
	 * run_end) and by its wakeups; a call racing them gives the old or the
	 * new value, and the counts stay balanced either way. */
	place_store_32(&r->group, group);
	return 0;
}
