/*
 * Reconfiguration under load (DESIGN.md mechanism 12): CPU hotplug, cpuset
 * shrink and grow, a worker's CPU leaving, while other threads keep waking
 * tasks and running them.
 *
 * The instance's machine is the topology it was created over (the
 * universe, p->topo). Every dense array inside is indexed by it and never
 * moves, so per-CPU state (queued counts, claim generations, statistics,
 * the cookies and NUMA groups of running tasks) survives every swap. A new
 * topology must be a restriction of the universe: a subset of its CPUs
 * grouped exactly as there (same cores, LLCs, nodes). The CPUs it lacks
 * are marked OFFLINE in their state words:
 *
 *   - a claim is one CAS on that word, and place__st_available() requires
 *     OFFLINE clear: no claim succeeds on a removed CPU once the OR is done;
 *   - the paths that return a CPU without a claim (stacking on the target,
 *     the waker's CPU, fallbacks) test place__st_usable() on a state they
 *     read earlier; the RCU grace period below waits out every wakeup that
 *     may have read it before the OR. After place_set_topology returns, no
 *     place_wakeup returns a removed CPU.
 *
 * A CPU that comes back is republished in its LLC's idle masks if its
 * worker is registered and idle (the RMW that clears OFFLINE and the
 * worker's idle_enter RMW are ordered on one word: one of the two sees the
 * other and publishes).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "idle.h"
#include "internal.h"
#include "rcu.h"

/*
 * One kind of grouping (core, LLC or node) of t against the universe u:
 * to_u[x] is the universe id of t's group x, from_u[y] t's group for the
 * universe's group y (-1 while unseen). Two CPUs share a group in t exactly
 * when they share it in u when both maps stay functions.
 */
struct group_map {
	const char *what;
	int *to_u, *from_u;
};

static int map_group(struct group_map *g, int cpu, int x, int y)
{
	if (g->to_u[x] < 0 && g->from_u[y] < 0) {
		g->to_u[x] = y;
		g->from_u[y] = x;
	}
	if (g->to_u[x] != y || g->from_u[y] != x)
		return place__fail(-EXDEV, "place_set_topology: cpu %d: its %s is not grouped as in "
				   "the instance's topology", cpu, g->what);
	return 0;
}

static int *minus_ones(int **buf, int n)
{
	int *a = *buf;

	for (int i = 0; i < n; i++)
		a[i] = -1;
	*buf += n;
	return a;
}

/* Is t a restriction of u? On success online[d] says whether u's dense CPU
 * d is in t. -EXDEV (naming the first CPU that disagrees) or -ENOMEM. */
static int check_restriction(const struct place_topo *u, const struct place_topo *t, bool *online)
{
	size_t n = (size_t)(t->nr_cores + u->nr_cores + t->nr_llcs + u->nr_llcs + t->nr_nodes + u->nr_nodes);
	int *buf = malloc(n * sizeof(int)), *cur = buf, err = 0;
	struct group_map g[3];

	if (!buf)
		return place__fail(-ENOMEM, "place_set_topology: out of memory");
	g[0] = (struct group_map){ "core", minus_ones(&cur, t->nr_cores), minus_ones(&cur, u->nr_cores) };
	g[1] = (struct group_map){ "LLC", minus_ones(&cur, t->nr_llcs), minus_ones(&cur, u->nr_llcs) };
	g[2] = (struct group_map){ "NUMA node", minus_ones(&cur, t->nr_nodes), minus_ones(&cur, u->nr_nodes) };
	for (int d = 0; d < u->nr_cpus; d++)
		online[d] = false;
	for (int i = 0; i < t->nr_cpus && !err; i++) {
		int os = t->os_of[i], d = os < u->cpu_limit ? u->dense_of[os] : -1;
		const struct place_topo_cpu *tc = &t->cpu[i], *uc;

		if (d < 0) {
			err = place__fail(-EXDEV, "place_set_topology: cpu %d is not a CPU of the "
					  "instance's topology", os);
			break;
		}
		uc = &u->cpu[d];
		online[d] = true;
		if ((err = map_group(&g[0], os, tc->core, uc->core)) ||
		    (err = map_group(&g[1], os, tc->llc, uc->llc)))
			break;
		err = map_group(&g[2], os, tc->node, uc->node);
	}
	free(buf);
	return err;
}

/* Under ctl. d leaves the current topology: no claim succeeds from the OR
 * on; its idle bits go, its worker no longer weighs in the scan bound. */
static void cpu_offline(struct place *p, int d)
{
	/* seq_cst RMW; partners: every claim CAS (exact), and the grace
	 * period that follows (for the paths without a claim) */
	uint64_t before = place__st_change(&p->cpu[d].state, PLACE_ST_OFFLINE, 0);

	if (before & PLACE_ST_OFFLINE)
		return;
	if (before & PLACE_ST_REGISTERED)
		place_add_64(&p->llc[p->map[d].llc].nr_registered, (uint64_t)-1);
	place__idle_withdraw(p, d);
}

/* Under ctl. d comes back; an idle registered worker there is idle for
 * wakeups again. Partner of the AND: its worker's idle_enter RMW and claim
 * ends (one word: whichever comes second sees the other). */
static void cpu_online(struct place *p, int d)
{
	uint64_t before = place__st_change(&p->cpu[d].state, 0, PLACE_ST_OFFLINE);

	if (!(before & PLACE_ST_OFFLINE))
		return;
	if (before & PLACE_ST_REGISTERED)
		place_add_64(&p->llc[p->map[d].llc].nr_registered, 1);
	if (place__st_available(before & ~PLACE_ST_OFFLINE))
		place__idle_publish(p, d);
}

/* Under ctl: apply the new online set, publish snap, wait a grace period.
 * Returns the snapshot replaced (free it), or NULL when it was the
 * universe, which the instance keeps. */
static struct place_topo *swap_locked(struct place *p, const bool *online, struct place_topo *snap)
{
	struct place_topo *old = p->cur;

	for (int d = 0; d < p->topo->nr_cpus; d++)
		(online[d] ? cpu_online : cpu_offline)(p, d);
	place__rcu_assign(p->cur, snap);
	/* Every wakeup that may have read a state word before the ORs above,
	 * and every place_topo_current still reading old, ends before this. */
	place__synchronize(p);
	return old == p->topo ? NULL : old;
}

PLACE_EXTERN int place_set_topology(place *p, const place_topo *t)
{
	struct place_topo *snap, *old;
	bool *online;
	int err;

	place__clear_error();
	if (!p || !t)
		return place__fail(-EINVAL, "place_set_topology: NULL %s", p ? "topology" : "instance");
	online = malloc((size_t)p->topo->nr_cpus * sizeof(*online));
	if (!online)
		return place__fail(-ENOMEM, "place_set_topology: out of memory");
	if ((err = check_restriction(p->topo, t, online))) {
		free(online);
		return err;
	}
	/* the universe itself is kept as the snapshot: no copy to make */
	snap = t == p->topo ? p->topo : place__topo_dup(t);
	if (!snap) {
		free(online);
		return place__fail(-ENOMEM, "place_set_topology: out of memory");
	}
	pthread_mutex_lock(&p->ctl);
	old = swap_locked(p, online, snap);
	pthread_mutex_unlock(&p->ctl);
	place_topo_free(old);
	free(online);
	return 0;
}

PLACE_EXTERN int place_topo_current(const place *p, place_topo **out)
{
	struct place_topo *copy;

	if (out)
		*out = NULL;
	if (!p || !out)
		return place__fail(-EINVAL, "place_topo_current: NULL %s", p ? "out" : "instance");
	place__read_lock();
	copy = place__topo_dup(place__rcu_deref(((struct place *)p)->cur));
	place__read_unlock(p);
	if (!copy)
		return place__fail(-ENOMEM, "place_topo_current: out of memory");
	*out = copy;
	return 0;
}
