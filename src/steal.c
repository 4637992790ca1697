/*
 * Work-stealing order: for an idle worker, the CPUs to try to steal from,
 * nearest first. Every work-stealing runtime writes this by hand, usually as
 * "random victim" or "next index", and so steals across a socket while the
 * SMT sibling has work.
 *
 * Rings, nearest first: SMT siblings, the rest of the LLC, the rest of the
 * NUMA node, the rest of the package, then the other nodes, nearest first
 * by hwloc's latencies (one ring without them). Within a ring the walk
 * starts just after the thief in dense CPU order and wraps, so thieves that
 * go idle together do not all hit the same victim first.
 *
 * Not a hot path: a worker computes its order once (and after a topology
 * change) and keeps it.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>

#include "cookie.h"
#include "internal.h"

enum steal_ring { RING_CORE, RING_LLC, RING_NODE, RING_PACKAGE, RING_REST /* and after, by node distance */ };

/* Beyond the package, the nearer nodes first (p->node_ring: hwloc's
 * latencies; without them every other node is one ring). */
static int ring_of(const struct place *p, int a, int b)
{
	const struct place_topo *t = p->topo;
	const struct place_topo_cpu *x = &t->cpu[a], *y = &t->cpu[b];

	if (x->core == y->core)
		return RING_CORE;
	if (x->llc == y->llc)
		return RING_LLC;
	if (x->node == y->node)
		return RING_NODE;
	if (x->package >= 0 && x->package == y->package)
		return RING_PACKAGE;
	return RING_REST - 1 + p->node_ring[x->node * t->nr_nodes + y->node];
}

/* A victim: a registered worker in the current topology. A worker whose
 * CPU left the topology drains its own queue and is nobody's victim: only
 * CPUs of the current topology are ever proposed. */
static bool victim(const struct place *p, int cpu)
{
	return place__st_usable(place_load_64(&p->cpu[cpu].state));
}

/* Registration and OFFLINE are read relaxed: a worker that comes or goes
 * meanwhile is a victim too many or too few, which the thief finds out when
 * it tries (and place_set_topology's caller recomputes orders after it). */
PLACE_EXTERN int place_steal_order(const place *p, int cpu, int *out, int max)
{
	int self = p ? place__dense(p, cpu) : -EINVAL, n = 0; /* with a worker or not */
	const struct place_topo *t;

	if (self < 0)
		return self == -1 ? -ENODEV : self;
	if (max < 0 || (max > 0 && !out))
		return -EINVAL;
	t = p->topo;
	for (int ring = 0; ring < RING_REST - 1 + p->nr_rings; ring++) {
		for (int i = 1; i < t->nr_cpus; i++) {
			int v = (self + i) % t->nr_cpus;

			if (ring_of(p, self, v) != ring || !victim(p, v))
				continue;
			if (n < max)
				out[n] = t->os_of[v];
			n++;
		}
	}
	return n;
}

/* The kernel's can_migrate_task() for one thief, from hints: a task its
 * core would refuse stays where it waits, for a thief whose core fits. */
PLACE_EXTERN int place_steal_check(const place *p, int cpu, const place_task *t)
{
	const struct place_task_rec *r = place__task_rec(t);
	int d = place__worker_cpu(p, cpu);

	if (d < 0)
		return d;
	if (!r)
		return -EINVAL;
	if (!place__st_usable(place_load_64(&p->cpu[d].state)))
		return -ENODEV; /* left the topology: its worker drains, takes nothing */
	if (!place__allowed(p, t, d))
		return -EPERM;
	if (place__cookie_on(p, d) && !place__cookie_steal_fits(p, d, place_load_64(&r->cookie)))
		return -EBUSY;
	return 0;
}
