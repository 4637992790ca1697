/*
 * Core-scheduling cookies, the slow parts: a refusal and the forced idle it
 * starts, a worker leaving, the compatible fallback of a wakeup that found
 * no compatible idle CPU, and place_task_set_cookie(). The hot parts and
 * the occupancy invariant are in cookie.h.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>

#include "cookie.h"
#include "idle.h"
#include "internal.h"

/*
 * run_begin on cpu was refused (place__cookie_enter said -EBUSY) for a task
 * with cookie: count it, start cpu's forced-idle period unless one is
 * running (a worker that retries keeps the first stamp), and mark the core:
 * cookie waits there (its pend hint: wakeups stop sending the running
 * cookie, so the core drains) since now unless an earlier refusal waits
 * (turn_since: the waiting cookie's turn). Its worker leaves the CPU idle
 * and requeues or re-places the task (place_run_refused); nothing else
 * changed. Returns -EBUSY. Worker only.
 */
int place__cookie_refused(struct place *p, int cpu, uint64_t cookie)
{
	struct place_stat_slot *s = &p->slot[cpu];
	struct place_core *core = &p->core[p->map[cpu].core];

	place_count_64(&s->v[PLACE_STAT_cookie_refusals], 1);
	if (!s->forced_since) {
		uint64_t now = place__now(p);

		s->forced_since = now ? now : 1; /* 0 means "not forced idle" */
	}
	if (!place_load_64(&core->turn_since)) /* cpu waits since its period began */
		place_store_64(&core->turn_since, s->forced_since);
	place__cookie_pend(p, cpu, cookie);
	place__cookie_mix(p);
	return -EBUSY;
}

/* Is the turn of a cookie waiting for cpu's core due (a refusal there
 * PLACE_COOKIE_TURN_NS ago or more, see turn_since; place.h)? Read by an enter of
 * the running cookie that found forced bits set. Worker of cpu. */
bool place__cookie_turn_due(const struct place *p, int cpu)
{
	uint64_t since = place_load_64(&p->core[p->map[cpu].core].turn_since), now;

	return since && (now = place__now(p)) > since && now - since >= PLACE_COOKIE_TURN_NS;
}

/* Is cpu's forced-idle bit still set: a task of another cookie still runs
 * on its core since cpu's refusal (no run_end named cpu yet)? */
static bool still_forced(const struct place *p, int cpu)
{
	uint64_t occ[2];

	place_load_64_2(place__occ(p, cpu), occ);
	return occ[PLACE_OCC_COUNT] & place__occ_forced_bit(p, cpu);
}

/* cpu's worker parks: a forced-idle period ends here once the other cookie
 * left the core (the run_end that named cpu; idle_enter reads the clock
 * only then). Parked before that, cpu is still forced idle: the period runs
 * on until cpu retries (starts a task, or parks again after the signal).
 * Worker only. Returns 0 (idle_enter's tail call). */
int place__cookie_idle(struct place *p, int cpu)
{
	if (p->slot[cpu].forced_since && !still_forced(p, cpu))
		place__cookie_forced_end(p, cpu, place__now(p));
	return 0;
}

/* cpu's worker is going away (not concurrently with its calls): a task it
 * still runs leaves the core (the CPUs that leaving frees are not named:
 * the runtime that unregisters wakes what it wants), its forced-idle bit
 * goes (unless shared by the CPUs past the 31st), and forced idle ends. */
void place__cookie_unregister(struct place *p, int cpu)
{
	uint64_t *occ = place__occ(p, cpu), bit = place__occ_forced_bit(p, cpu);
	uint64_t old[2], want[2];

	if (!place__cookie_on(p, cpu))
		return;
	if (place_load_32(&p->cpu[cpu].running))
		place__cookie_leave(p, cpu, p->cpu[cpu].curr_cookie);
	place_load_64_2(occ, old);
	while ((old[PLACE_OCC_COUNT] & bit) && p->map[cpu].pos - p->map[cpu].core_lo < 31) {
		want[PLACE_OCC_COOKIE] = old[PLACE_OCC_COOKIE];
		want[PLACE_OCC_COUNT] = old[PLACE_OCC_COUNT] & ~bit;
		if (place_cas_64_2(occ, old, want))
			break;
	}
	if (p->slot[cpu].forced_since)
		place__cookie_forced_end(p, cpu, place__now(p));
}

/*
 * The run_end on cpu that emptied its core took the forced-idle bits
 * forced (place__cookie_leave): the OS numbers of those siblings (never cpu
 * itself), at most max of them into retry; returns how many there are. The
 * CPUs past the core's 31st share one bit: all of them are named. Slow path
 * (only after a refusal).
 */
int place__cookie_retry(const struct place *p, int cpu, uint32_t forced, int *retry, int max)
{
	const struct place_cpu_map *m = &p->map[cpu];
	int n = 0;

	for (int i = 0; i < m->smt; i++) {
		int sib = place__sibling(p, m, i);

		if (sib == cpu || !(forced & (UINT32_C(1) << (i < 31 ? i : 31))))
			continue;
		if (n < max)
			retry[n] = p->map[sib].os;
		n++;
	}
	return n;
}

/* Tasks on cpu: running plus queued (wake_affine's nr_running). */
static uint32_t load_of(const struct place *p, int cpu, uint64_t state)
{
	return place_load_32(&p->cpu[cpu].running) + place__st_queued(state);
}

/* The fallback's choice so far: the least loaded fitting CPU, its load
 * counted with the margin of its distance (fit_llc). */
struct fit {
	int cpu;
	uint32_t load;
};

/* cpu into f when allowed, usable and its load plus extra is below f's;
 * *probes counts its state read. f's own CPU (the target, seen first) is
 * not read again. */
static void fit_cpu(const struct place *p, const place_task *t, int cpu, uint32_t extra, struct fit *f,
		    uint64_t *probes)
{
	uint64_t s;
	uint32_t load;

	if (cpu == f->cpu || !place__allowed(p, t, cpu))
		return;
	++*probes;
	s = place_load_64(&p->cpu[cpu].state);
	load = load_of(p, cpu, s) + extra;
	if (place__st_usable(s) && load < f->load)
		*f = (struct fit){ cpu, load };
}

/* The cores of LLC l from position from on (wrapping) whose node is in
 * ring pass of the target's node (ring: its row of node_ring) and whose
 * core admits cookie (one hint read a core), each CPU's load counted extra
 * tasks higher. */
static void fit_llc(const struct place *p, const place_task *t, uint64_t cookie, int l, int from, const int *ring,
		    int pass, uint32_t extra, struct fit *f, uint64_t *probes)
{
	int weight = p->llc[l].weight;

	for (int k = 0; k < weight && f->load;) { /* nothing beats a CPU with no task */
		int first = place__llc_cpu(p, l, (from + k) % weight);
		const struct place_cpu_map *m = &p->map[first];

		k += m->smt; /* a core's CPUs sit side by side in the LLC, from core_lo */
		if (ring[m->node] != pass || !place__cookie_admits(p, first, cookie))
			continue;
		for (int i = 0; i < m->smt; i++)
			fit_cpu(p, t, place__sibling(p, m, i), extra, f, probes);
	}
}

/*
 * A wakeup found no compatible idle CPU: the least loaded registered,
 * allowed CPU whose core fits t's cookie (running and waiting work,
 * place__cookie_admits), target itself on a tie or when none fits; then
 * the rest of target's LLC and, as far as scope allows, the other LLCs of
 * its node, then of the other nodes, the nearest first (node_ring), where
 * a CPU must carry two tasks fewer:
 * moving a task between two CPUs whose loads differ by one only changes
 * its cache. Not only when target's core refuses t: stacking on a fitting
 * target while another core fits with less load would keep the first
 * placements' imbalance for good (a cookie can use only the cores it
 * holds, so queues do not even out by themselves), and not only in
 * target's LLC: a cookie whose tasks gathered in one LLC and lost a core
 * there would stay short of cores for good while its cores in another LLC
 * had room (BENCHMARKS.md, fairness between tenants). A slow path
 * (nothing idle): the occupancy line of every core in scope and the
 * states of the fitting ones, until a fitting CPU with no task; *probes
 * counts the states. Any thread (hints only).
 */
int place__cookie_fallback(struct place *p, const place_task *t, int target, enum place_fit_scope scope,
			   uint64_t *probes)
{
	const struct place_cpu_map *tm = &p->map[target];
	uint64_t cookie = place_load_64(&place__rec((place_task *)t)->cookie);
	struct fit f = { -1, UINT32_MAX };
	int n = scope == PLACE_FIT_LLC ? 1 : p->topo->nr_llcs;
	int passes = scope == PLACE_FIT_NODE ? 1 : p->nr_rings; /* an LLC may span nodes */
	const int *ring = &p->node_ring[tm->node * p->topo->nr_nodes];

	if (place__cookie_admits(p, target, cookie))
		fit_cpu(p, t, target, 0, &f, probes); /* first: target wins a tie */
	for (int pass = 0; pass < passes; pass++) /* target's node, then the others nearest first */
		for (int k = 0, l = tm->llc; k < n && f.load; k++, l = l + 1 < n ? l + 1 : 0)
			fit_llc(p, t, cookie, l, l == tm->llc ? tm->core_lo : 0, ring, pass, l != tm->llc, &f, probes);
	return f.cpu >= 0 ? f.cpu : target;
}

PLACE_EXTERN int place_task_set_cookie(place_task *t, uint64_t cookie)
{
	struct place_task_rec *r = place__task_rec(t);

	if (!r)
		return -EINVAL;
	/* Relaxed: read once by t's next run_begin (which captures it) and as a
	 * hint by wakeups; a call racing them gives the old or the new value. */
	place_store_64(&r->cookie, cookie);
	return 0;
}

/* A refused task is placed again as a wakeup without a waker places it: the
 * cookie-aware steps (place__cookie_admits) keep it off cores that run or
 * queue another cookie, and the wakeup gives up its slot on cpu first. */
PLACE_EXTERN int place_run_refused(place *p, int cpu, place_task *t, unsigned flags)
{
	int d;

	if (!p || !place__task_rec(t) || (flags & ~PLACE_WAKE_NOCLAIM))
		return -EINVAL;
	d = place__worker_cpu(p, cpu);
	if (d < 0)
		return d;
	return place_wakeup(p, t, PLACE_CPU_NONE, flags);
}
