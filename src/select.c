/*
 * The wakeup path: wake_wide and wake_affine choose a target, then
 * select_idle_sibling looks for an idle CPU around it, in the kernel's order
 * (kernel/sched/fair.c, with seed 001's SIS_CORE, repair and sibling rescan,
 * and seed 000's short-task rule), and claims what it finds.
 *
 * Every step honours registration and the task's cpu_set_t. Lock-free and
 * allocation-free; the only exact step is the claim CAS (idle.h). Everything
 * else reads hints and is allowed to be wrong for a moment.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <limits.h>

#include "cookie.h"
#include "handoff.h"
#include "idle.h"
#include "internal.h"
#include "numa.h"
#include "rcu.h"
#include "widen.h"

#define PLACE_WAKE_FLAGS                                                                          \
	(PLACE_WAKE_SYNC | PLACE_WAKE_NOCLAIM | PLACE_WAKE_NEW | PLACE_WAKE_CURRENT | PLACE_WAKE_SPREAD |   \
	 PLACE_WAKE_REMOTE)
#define IMBALANCE_PCT 117                  /* the kernel's LLC-level sd->imbalance_pct */

/* One wakeup in progress (dense CPU indexes, -1 for none). */
struct wake {
	struct place *p;
	place_task *t;
	struct place_task_rec *r;
	unsigned flags;
	int counter;  /* the statistics slot: the waker's, -1 none or REMOTE (not its thread) */
	int waker;    /* the waking worker's CPU */
	int prev;     /* where t last ran, if still usable */
	uint64_t prev_state; /* its state when last probed (wake_init, wake_init_prev, stale_delivery) */
	uint64_t waker_state; /* the waker's, when wake_target's choice read it (0: not read) */
	int target;   /* wake_affine's choice: the fallback */
	const struct place_cpu_map *tm; /* the target's map, and its LLC */
	struct place_llc *tllc;
	bool claim;      /* claim the CPU we return (beside cookies: no padding) */
	bool cookies;    /* COOKIES on: idle CPUs must fit cookie */
	uint64_t cookie; /* t's cookie, read once (place_task_set_cookie may race) */
	int cpu;      /* the CPU found */
	uint32_t gen; /* its claim */
	uint32_t group; /* t's NUMA group, read once */
	uint64_t probes, lost, false_pos;
};

/*
 * The wakeup keeps its struct wake in registers: GCC replaces an aggregate
 * by scalars only while its address never escapes. So every step that is
 * not inlined (a slow path) runs on a copy, and the copy comes back.
 */
#define ON_COPY(w, type, call)                                                                     \
	({                                                                                         \
		struct wake copy_ = *(w);                                                          \
		type ret_ = call(&copy_);                                                          \
		*(w) = copy_;                                                                      \
		ret_;                                                                              \
	})

static const struct place_cpu_map *map_of(const struct wake *w, int cpu)
{
	return &w->p->map[cpu];
}

PLACE_INLINE uint64_t probe(struct wake *w, int cpu)
{
	w->probes++;
	return place__state(w->p, cpu);
}

/* May t go to cpu at all: allowed, served by a worker, in the current
 * topology (not OFFLINE; a stale read is closed by the grace period). */
PLACE_INLINE bool usable(struct wake *w, int cpu)
{
	return place__allowed(w->p, w->t, cpu) && place__st_usable(probe(w, cpu));
}

/* cpu was seen available in state s: make it ours (claim unless answering
 * only). A lost claim means someone else got it: the caller moves on. */
PLACE_INLINE bool take_seen(struct wake *w, int cpu, uint64_t s)
{
	if (!place__st_available(s))
		return false;
	if (w->cookies && !place__cookie_admits(w->p, cpu, w->cookie))
		return false; /* COOKIES: its core runs another cookie (a hint; run_begin decides) */
	if (w->claim && !place__st_claim(&w->p->cpu[cpu].state, s, &w->gen)) {
		w->lost++;
		return false;
	}
	if (w->claim)
		w->probes += place__claim_unpublish(w->p, cpu);
	w->cpu = cpu;
	return true;
}

PLACE_INLINE bool take(struct wake *w, int cpu)
{
	return place__allowed(w->p, w->t, cpu) && take_seen(w, cpu, probe(w, cpu));
}

/* ---- wake_wide / wake_affine ------------------------------------------- */

/* A 1:N waker: both flip counts high, one much higher (kernel wake_wide()). */
PLACE_INLINE bool wake_wide(const struct place *p, int waker, const struct place_task_rec *wr,
			    const struct place_task_rec *r)
{
	uint32_t master = wr->wakee_flips, slave = r->wakee_flips;
	uint32_t factor = (uint32_t)p->cpu[waker].llc->weight; /* on the line record_wakee read */

	if (master < slave) {
		uint32_t tmp = master;

		master = slave;
		slave = tmp;
	}
	return !(slave < factor || master < (uint64_t)slave * factor);
}

PLACE_INLINE uint32_t nr_running(const struct place *p, int cpu, uint64_t state)
{
	return place_load_32(&p->cpu[cpu].running) + place__st_queued(state);
}

static bool is_short(const struct place *p, int cpu)
{
	uint64_t avg = place_load_64(&p->cpu[cpu].curr_avg_ns);

	return avg && avg < p->short_task_ns;
}

/* wake_affine_weight() with task counts for loads: move the wakee to the
 * waker unless that makes the waker busier than prev by the LLC imbalance. */
PLACE_INLINE bool affine_by_load(uint32_t this_nr, uint32_t prev_nr, bool sync)
{
	uint64_t this_load = (uint64_t)this_nr + 1 - (sync && this_nr);

	return this_load * 100 < (uint64_t)prev_nr * (100 + (IMBALANCE_PCT - 100) / 2) + sync;
}

/* HUB_STAYS: t (record r) wakes at least as many tasks as the waker's LLC
 * has CPUs (wake_wide's factor): no one LLC holds its partners, so a SYNC
 * pull from an idle prev in another LLC only buys it a refill there. */
PLACE_INLINE bool hub_stays(const struct place *p, const struct place_task_rec *r, int this, int prev,
			    uint64_t ps)
{
	const struct place_llc *llc = p->cpu[this].llc;

	return place__feat(p, PLACE_FEAT_HUB_STAYS) && place__st_available(ps) && llc != p->cpu[prev].llc &&
	       r->wakee_flips >= (uint32_t)llc->weight;
}

/* PULL_IDLE: may seed 000's rule pull t off prev's LLC onto the waker
 * (this, busy with one short task)? Only for an idle CPU in the waker's
 * LLC (the scan there takes it) or a shorter wait than prev's (prev_nr
 * tasks there: more than one). Else t would queue behind one task on
 * either side and lose its cache as well: at 4x the cores, hackbench on
 * the 4-socket model sent 2,611 of 23,713 wakeups to a waker in another
 * LLC (1,870 another node) and their refills cost 34 ms of CPU time
 * against LIFO's 13. The load rule pulls only to a shorter queue anyway;
 * SYNC is untouched. LINEAR keeps no mask (always full): no effect. */
PLACE_INLINE bool pull_ok(const struct place *p, int this, int prev, uint32_t prev_nr)
{
	const struct place_llc *llc = p->cpu[this].llc;

	return llc == p->cpu[prev].llc || !place__feat(p, PLACE_FEAT_PULL_IDLE) || prev_nr > 1 ||
	       place_mask_next(llc->icpus, llc->weight, 0) >= 0;
}

/* HUB_QUEUE (p->hub_queue: on, and the runtime has thieves): the waker, in
 * prev's LLC and running a short task, is t's hub: it switched wakee at
 * least as often as its LLC has CPUs (wake_wide's factor) while t wakes at
 * most one task (a dispatcher and its workers, as schbench's message
 * thread). Queued behind the hub, t starts when its short run ends or when
 * the LLC's next worker goes idle and steals, in the order woken: one
 * central queue, as LIFO's waker queue. Behind prev's running task it
 * waits for that task or the nearest thief, whichever comes first. */
PLACE_INLINE bool hub_queue(const struct place *p, const struct place_task_rec *wr, const struct place_task_rec *r,
			    int this, int prev)
{
	const struct place_llc *llc = p->cpu[this].llc;

	return p->hub_queue && wr && r->wakee_flips <= 1 && llc == p->cpu[prev].llc &&
	       wr->wakee_flips >= (uint32_t)llc->weight && is_short(p, this);
}

/* BUSY_STAYS: would a wakeup without SYNC move t, whose prev is busy, to
 * the busy waker this on another node while nothing is idle in the
 * waker's LLC mask? The waker runs on (no preemption, no SYNC promise to
 * sleep): t would wait for it as long as for prev's queue and refill its
 * cache from the other node. On the 4-socket model at 4x, hackbench pulled
 * 938 wakees a run so; they waited 43 us, those stacked on prev 32 us. */
PLACE_INLINE bool busy_stays(const struct place *p, int this, int prev, bool sync)
{
	const struct place_llc *llc = p->cpu[this].llc;

	return !sync && p->busy_stays && p->map[this].node != p->map[prev].node &&
	       place_mask_next(llc->icpus, llc->weight, 0) < 0;
}

/* Waker (true) or prev (kernel wake_affine_idle(), then the load
 * comparison), from their states ts and ps as just probed; r is t's, wr
 * the waker's (NULL: none, or REMOTE). */
PLACE_INLINE bool wake_affine(const struct place *p, const struct place_task_rec *wr,
			      const struct place_task_rec *r, int this, int prev, uint64_t ts, uint64_t ps, bool sync)
{
	uint32_t this_nr, prev_nr;

	if (place__st_available(ts) && p->cpu[this].llc == p->cpu[prev].llc)
		return !place__st_available(ps);
	/* the waker's count is read where a rule needs it: a relaxed load stays
	 * even when unused, and wake_worker_unlock()'s PREV_IDLE path comes
	 * here only to record the wakee (prev available: false below) */
	if (sync && nr_running(p, this, ts) == 1)
		return !hub_stays(p, r, this, prev, ps);
	if (place__st_available(ps))
		return false;
	this_nr = nr_running(p, this, ts);
	if (busy_stays(p, this, prev, sync))
		return false;
	prev_nr = nr_running(p, prev, ps);
	/* Seed 000: only with exactly one task there, else wakees pile up. */
	if (place__feat(p, PLACE_FEAT_SHORT_AFFINE) && this_nr == 1 && is_short(p, this) &&
	    pull_ok(p, this, prev, prev_nr))
		return true;
	if (hub_queue(p, wr, r, this, prev))
		return true;
	return affine_by_load(this_nr, prev_nr, sync);
}

/* Does prev decide without the waker's state? A wakeup without SYNC whose
 * prev was just seen available (ps) gets prev from wake_affine() whatever
 * the waker runs (only SYNC pulls a wakee off an idle prev); and the NUMA
 * rule (a pure function of the nodes and t's group) does not apply. Then
 * the waker's CPU is not read: the wakeup probes prev alone. A 1:N waker
 * (a reader waking every writer that waits on its pipe) pays one remote
 * line per wakee fewer on its own critical path. */
PLACE_INLINE bool prev_decides(const struct place *p, int prev, uint64_t ps, int waker, unsigned flags,
			       uint32_t group)
{
	return prev >= 0 && place__st_available(ps) && !(flags & PLACE_WAKE_SYNC) &&
	       !place__numa_cross(p, group, prev, waker);
}

/* wake_target()'s choice for a usable waker (dense, in state ws) and prev
 * (dense in state ps, -1 none: then prev, after recording the wakee):
 * record the wakee, then wake_wide and wake_affine pick the waker or prev.
 * The states are the ones this wakeup already read (and counted): a second
 * read of the same lines would cost a probe and tell nothing new. Shared by
 * the whole path and the worker waker's short path, so they cannot drift
 * apart. */
PLACE_INLINE int affine_choice(struct place *p, place_task *t, struct place_task_rec *r, int waker, int prev,
			       unsigned flags, uint64_t ws, uint64_t ps)
{
	/* REMOTE: the waker's record is its own thread's (no flips, no wake_wide) */
	struct place_task_rec *wr = flags & PLACE_WAKE_REMOTE ? NULL : place__waker_rec(p, waker);

	if (wr && place__feat(p, PLACE_FEAT_WAKE_WIDE) && !(flags & PLACE_WAKE_NOCLAIM)) {
		place__record_wakee(p, waker, wr, t);
		if (wake_wide(p, waker, wr, r))
			return prev;
	}
	if (prev < 0 || waker == prev)
		return prev;
	return wake_affine(p, wr, r, waker, prev, ws, ps, flags & PLACE_WAKE_SYNC) ? waker : prev;
}

/* No usable prev (a new task): start in the LLC with the most free CPUs,
 * then the most available ones, the waker's on a tie, as the kernel's fork
 * balancing picks the idlest group; in it, on a whole free core if there is
 * one, else a free CPU, else a whole available core, else an available
 * CPU. Free: available, and not the CPU of the task that last went to
 * sleep there while it sleeps (slot.sleeper): the kernel counts a
 * sleeper's blocked load, and a task placed beside a sleeper shares its
 * core or LLC when the sleeper comes back (hackbench on a 24-LLC machine at
 * one task a core: 9 tasks in some LLCs, 7 in others, their receivers
 * sharing cores for the whole run). With nothing available anywhere, on the
 * least loaded usable CPU (running plus queued), the waker's LLC first on a
 * tie: each new task queued there counts, so a burst of new tasks spreads
 * instead of piling onto the first CPU. A slow path: it reads every state
 * once. */
struct new_pick {
	int cpu;        /* the choice so far, -1 = none */
	int free;       /* its LLC's free CPUs (the first key) */
	int idle;       /* its LLC's available CPUs (the second) */
	uint32_t load;  /* its running + queued (the third) */
};

PLACE_INLINE bool cpu_free(const struct place *p, int cpu, uint64_t state)
{
	return place__st_available(state) && !place_load_64(&p->slot[cpu].sleeper);
}

/* Available cpu's rank for the spread: 4 free on a whole free core, 3
 * free, 2 on a whole available core (a sleeper's mark on it: every CPU of
 * a long-running server may carry one), 1 available; 0 when it cannot beat
 * best (its siblings are then not read). */
static int spread_rank(const struct place *p, int cpu, bool free, int best)
{
	bool whole = true, whole_free = free;

	if (best >= (free ? 4 : 2))
		return 0;
	for (int sib = p->sib_next[cpu]; sib != cpu && whole; sib = p->sib_next[sib]) {
		uint64_t s = place__state(p, sib);

		whole = place__st_available(s);
		whole_free = whole_free && cpu_free(p, sib, s);
	}
	return free ? 3 + whole_free : 1 + whole;
}

/* LLC l's candidate: the first CPU of the best rank (spread_rank()), else
 * its least loaded usable CPU; free and idle count its free and available
 * CPUs. cpu -1 when none is usable. */
static struct new_pick llc_candidate(struct wake *w, int l)
{
	const struct place *p = w->p;
	struct new_pick c = { .cpu = -1 };
	int pick = -1, rank = 0;

	for (int pos = 0; pos < p->llc[l].weight; pos++) {
		int cpu = place__llc_cpu(p, l, pos), k;
		uint64_t s;
		uint32_t load;
		bool free;

		if (!place__allowed(p, w->t, cpu))
			continue;
		s = probe(w, cpu);
		if (!place__st_usable(s))
			continue;
		load = nr_running(p, cpu, s);
		if (c.cpu < 0 || load < c.load) {
			c.cpu = cpu;
			c.load = load;
		}
		if (!place__st_available(s))
			continue;
		c.idle++;
		free = cpu_free(p, cpu, s);
		c.free += free;
		k = spread_rank(p, cpu, free, rank);
		if (k > rank) {
			rank = k;
			pick = cpu;
		}
	}
	if (pick >= 0) {
		c.cpu = pick;
		c.load = 0;
	}
	return c;
}

static bool new_better(const struct wake *w, const struct new_pick *c, const struct new_pick *best,
		       int l)
{
	bool waker_llc = w->waker >= 0 && map_of(w, w->waker)->llc == l;

	if (best->cpu < 0 || c->free != best->free)
		return best->cpu < 0 || c->free > best->free;
	if (c->idle != best->idle)
		return c->idle > best->idle;
	if (c->load != best->load)
		return c->load < best->load;
	return waker_llc;
}

PLACE_NOINLINE int new_target(struct wake *w)
{
	struct new_pick best = { .cpu = -1 };

	for (int l = 0; l < w->p->topo->nr_llcs; l++) {
		struct new_pick c = llc_candidate(w, l);

		if (c.cpu >= 0 && new_better(w, &c, &best, l))
			best = c;
	}
	return best.cpu;
}

/* A task created by a worker (NEW with a waker, not SPREAD) starts near its
 * creator: select_idle_sibling() as if it had last run on the creator's
 * CPU (the target): that CPU if idle, a whole idle core of its LLC when one
 * is hinted, an idle SMT sibling of the creator, an idle CPU of its LLC
 * (the bounded scan), else queued on the creator's CPU. A fork-join
 * runtime's children stay in the creator's cache and thieves spread them;
 * SPREAD keeps the kernel's fork balancing (new_target()). */
PLACE_INLINE int fork_local(struct wake *w)
{
	w->prev = w->waker;
	w->prev_state = probe(w, w->waker);
	return w->waker;
}

PLACE_INLINE int wake_target(struct wake *w)
{
	uint64_t ws = 0;
	/* prev_decides(): the waker only records its wakee, unread */
	bool waker_ok = w->waker >= 0 && place__allowed(w->p, w->t, w->waker) &&
			(prev_decides(w->p, w->prev, w->prev_state, w->waker, w->flags, w->group) ||
			 place__st_usable(ws = probe(w, w->waker)));
	int choice = w->prev;

	if (waker_ok) {
		w->waker_state = ws;
		choice = affine_choice(w->p, w->t, w->r, w->waker, w->prev, w->flags, ws, w->prev_state);
	}
	if (w->prev < 0 && waker_ok && (w->flags & (PLACE_WAKE_NEW | PLACE_WAKE_SPREAD)) == PLACE_WAKE_NEW)
		return fork_local(w);
	if (w->prev < 0)
		return ON_COPY(w, int, new_target);
	/* NUMA groups: across nodes, the group decides (numa.c) */
	if (waker_ok && place__numa_cross(w->p, w->group, w->prev, w->waker)) {
		int numa = place__numa_choose(w->p, w->r, w->group, w->prev, w->waker, choice,
					      !(w->flags & PLACE_WAKE_NOCLAIM), w->counter);

		if (numa != choice)
			return numa; /* a NUMA move, or kept on prev's node */
	}
	if (choice == w->waker)
		place__count(w->p, w->counter, map_of(w, w->waker)->llc, PLACE_STAT_affine_wakeups, 1);
	return choice;
}

/* ---- the LLC scan ------------------------------------------------------ */

/* False-positive repair (seed 001 patch 4): widen.c's, which WIDEN shares. */
static void repair(struct wake *w, int cpu)
{
	place__mask_repair(w->p, cpu, &w->probes, &w->false_pos);
}

/*
 * Idle-core step for the mask CPU cpu (kernel select_idle_core()): claim cpu
 * if its whole core is available. Else remember one available allowed
 * sibling as *fallback; a core with nothing available is a false positive.
 * After a lost claim the core is no longer idle: the scan moves on.
 */
static bool scan_core(struct wake *w, int cpu, int *fallback)
{
	const struct place_cpu_map *m = map_of(w, cpu);
	uint64_t own = 0;
	bool idle = true, any = false;

	for (int i = 0; i < m->smt; i++) {
		int sib = place__sibling(w->p, m, i);
		uint64_t s = probe(w, sib);

		if (sib == cpu)
			own = s;
		if (!place__st_available(s)) {
			idle = false;
			if (*fallback >= 0)
				return false; /* not idle, and nothing here we need */
			continue;
		}
		any = true;
		if (*fallback < 0 && place__allowed(w->p, w->t, sib) &&
		    (!w->cookies || place__cookie_admits(w->p, sib, w->cookie)))
			*fallback = sib;
	}
	if (idle)
		return take_seen(w, cpu, own);
	if (!any && w->p->policy == PLACE_POLICY_SIS_CORE)
		repair(w, cpu);
	return false;
}

/*
 * Fail-prone step (select_idle_smt(p, cpu, icpus, 0) of seed 001): cpu or
 * one of its SMT siblings, the true negatives that the core granule keeps
 * out of the mask. A core with nothing available is repaired.
 */
static bool scan_smt(struct wake *w, int cpu)
{
	const struct place_cpu_map *m = map_of(w, cpu);
	bool any = false;

	for (int i = 0; i < m->smt; i++) {
		int sib = place__sibling(w->p, m, i);
		uint64_t s = probe(w, sib);

		if (!place__st_available(s))
			continue;
		any = true;
		if (place__allowed(w->p, w->t, sib) && take_seen(w, sib, s))
			return true;
	}
	if (!any)
		repair(w, cpu);
	return false;
}

/* An idle SMT sibling of prev, prev excluded (kernel select_idle_smt(p,
 * prev, NULL, 1)), in a core the mask hints. */
PLACE_INLINE bool prev_sibling(struct wake *w)
{
	const struct place_cpu_map *m = map_of(w, w->prev);

	if (!place__core_hinted(w->p, w->tllc, m))
		return false;
	for (int i = 0; i < m->smt; i++) {
		int sib = place__sibling(w->p, m, i);

		if (sib != w->prev && take(w, sib))
			return true;
	}
	return false;
}

PLACE_INLINE bool has_idle_core(const struct wake *w, const struct place_llc *llc)
{
	if (!llc->smt)
		return false;
	if (w->p->policy == PLACE_POLICY_EXACT)
		return place_mask_next(llc->icores, llc->weight, 0) >= 0;
	return place_load_32(&llc->has_idle_cores) != 0;
}

/* A scan hit at level: CLUSTER counts it when it was in the target's cluster. */
static enum place_stat_id scan_hit(struct wake *w, const struct place_scan_iter *it, enum place_stat_id level)
{
	if (place__scan_in_cluster(it))
		place__count(w->p, w->counter, w->tm->llc, PLACE_STAT_hit_cluster, 1);
	return level;
}

/* EXACT (sched_ext style): the masks hold exactly the available CPUs and
 * whole cores, so every bit visited is a real candidate; no bound, no repair. */
static enum place_stat_id scan_exact(struct wake *w, struct place_llc *llc, bool core)
{
	int start = map_of(w, w->target)->pos + 1;
	const struct place_span *c = place__cluster_of(w->p, w->target); /* CLUSTER: its own first */
	struct place_scan_iter it = place__scan_iter(llc->icores, llc->weight, start, c);
	int pos;

	while (core && (pos = place__scan_next(&it)) >= 0) {
		int cpu = place__llc_cpu(w->p, map_of(w, w->target)->llc, pos);

		for (int i = 0; i < map_of(w, cpu)->smt; i++)
			if (take(w, place__llc_cpu(w->p, map_of(w, cpu)->llc, pos + i)))
				return scan_hit(w, &it, PLACE_STAT_hit_idle_core);
	}
	it = place__scan_iter(llc->icpus, llc->weight, start, c);
	while ((pos = place__scan_next(&it)) >= 0)
		if (take(w, place__llc_cpu(w->p, map_of(w, w->target)->llc, pos)))
			return scan_hit(w, &it, PLACE_STAT_hit_idle_cpu);
	return PLACE_STAT_hit_fallback;
}

PLACE_INLINE void set_scan_sibling(struct wake *w)
{
	uint32_t *mark = &w->p->cpu[w->target].scan_sibling;

	if (!place_load_32(mark)) {
		place_store_32(mark, 1);
		place__count(w->p, w->counter, map_of(w, w->target)->llc, PLACE_STAT_fail_prone_marks, 1);
	}
}

/* The slot whose stacked and widened counts this wakeup adds to
 * (wake_commit()): the throttle of place__util_recheck(). */
static const uint64_t *target_slot(const struct wake *w)
{
	return place__stat_slot(w->p, w->counter, w->tm->llc);
}

/*
 * select_idle_cpu() of seed 001 over the target's LLC: SIS_CORE iterates the
 * core-granule mask, LINEAR every CPU, both from target + 1 with wraparound.
 * With an idle core hinted: a full scan for a whole idle core (the depth
 * bound does not apply, seed patch 2). Otherwise at most nr_idle_scan
 * candidates (SIS_UTIL); a fail-prone target also probes siblings.
 */
static enum place_stat_id select_idle_cpu(struct wake *w, bool core)
{
	const struct place_cpu_map *tm = w->tm;
	struct place_llc *llc = w->tllc;
	bool sis_core = w->p->policy == PLACE_POLICY_SIS_CORE, scan_sibling = false;
	int nr = INT_MAX, fallback = -1, pos, last_core = -1;
	struct place_scan_iter it;

	if (w->p->policy == PLACE_POLICY_EXACT)
		return scan_exact(w, llc, core);
	if (place__feat(w->p, PLACE_FEAT_SIS_UTIL) && !core)
		nr = (int)(place_load_32(&llc->nr_idle_scan) & PLACE_SCAN_NR) + 1; /* !--nr stops it; not 1 */
	/* consume the fail-prone mark (CAS 1 -> 0, so one scan takes it);
	 * partner: set_scan_sibling()'s relaxed store, a hint */
	if (sis_core && place__feat(w->p, PLACE_FEAT_SCAN_SIBLING))
		scan_sibling = place_cas_32(&w->p->cpu[w->target].scan_sibling, 1, 0);

	/* CLUSTER: the target's cluster first, then the rest of the LLC */
	it = place__scan_iter(sis_core ? llc->icpus : llc->span, llc->weight, tm->pos + 1,
			      place__cluster_of(w->p, w->target));
	while ((pos = place__scan_next(&it)) >= 0) {
		int cpu = place__llc_cpu(w->p, tm->llc, pos);

		if (!place__allowed(w->p, w->t, cpu) || (core && !sis_core && pos != map_of(w, cpu)->core_lo))
			continue; /* LINEAR visits each core once in core mode */
		if (core && sis_core && map_of(w, cpu)->core_lo == last_core)
			continue; /* a sibling's bit: scan_core() just examined (and repaired) its core */
		last_core = map_of(w, cpu)->core_lo;
		if (!--nr)
			break;
		if (core ? scan_core(w, cpu, &fallback) : scan_sibling ? scan_smt(w, cpu) : take(w, cpu))
			return scan_hit(w, &it, core ? PLACE_STAT_hit_idle_core
					: w->cpu == cpu ? PLACE_STAT_hit_idle_cpu : PLACE_STAT_hit_sibling);
	}
	/* the bound cut it short: its age looked at as place__util_recheck() does */
	if (!nr && place__recheck_turn(target_slot(w)))
		place__util_refresh(w->p, tm->llc); /* for the next wakeups */
	if (core && place_load_32(&llc->has_idle_cores))
		place__llc_cores_none(w->p, llc); /* a full scan found no idle core */
	if (fallback >= 0)
		return take(w, fallback) ? PLACE_STAT_hit_idle_cpu : PLACE_STAT_hit_fallback;
	/* A full core or fail-prone scan already cleared every busy core it met
	 * (that is the seed's "clear the mask"); a partial one marks the target. */
	if (sis_core && !(nr > 0 && (core || scan_sibling)))
		set_scan_sibling(w);
	return PLACE_STAT_hit_fallback;
}

/* select_idle_sibling()'s answer when it hands the scan on (not a level). */
enum { SCAN_CORES = -1, SCAN_CPUS = -2 };

/* How far stack_cpu's cookie fallback may look (cookie.h). */
PLACE_INLINE enum place_fit_scope fit_scope(const struct wake *w)
{
	if (w->target == w->waker)
		return PLACE_FIT_LLC; /* wake_affine chose the waker's cache, as WIDEN respects */
	return w->group && w->p->numa_count ? PLACE_FIT_NODE : PLACE_FIT_MACHINE;
}

/* Nothing idle fits: stack on the target; with COOKIES on, once cookies
 * mix on cores (cookie_mixed) or when the target's core does not fit, the
 * least loaded CPU whose core fits, nearest first on a tie (cookie.c: the
 * target, its LLC, its node, the machine; only the LLC when the target is
 * the waker, as WIDEN leaves it; a grouped task's node), counted in
 * cookie_fallbacks when that is not a fitting target. That CPU may be
 * idle (the scan was bounded, or the core granule hid it): then it is
 * taken, claimed, like any idle CPU. Sets w->cpu, returns the level. */
PLACE_INLINE enum place_stat_id stack_cpu(struct wake *w)
{
	uint64_t probes;
	int cpu;

	w->cpu = w->target;
	if (!w->cookies || ((!place_load_32(&w->p->cookie_mixed) || map_of(w, w->target)->smt < 2) &&
			    place__cookie_admits(w->p, w->target, w->cookie)))
		return PLACE_STAT_hit_fallback;
	probes = w->probes;
	cpu = place__cookie_fallback(w->p, w->t, w->target, fit_scope(w), &probes);
	w->probes = probes;
	if (cpu != w->target || !place__cookie_admits(w->p, cpu, w->cookie))
		place__count(w->p, w->counter, map_of(w, cpu)->llc, PLACE_STAT_cookie_fallbacks, 1);
	if (cpu != w->target && take(w, cpu))
		return PLACE_STAT_hit_idle_cpu;
	w->cpu = cpu;
	return PLACE_STAT_hit_fallback;
}

/* The kernel's select_idle_sibling() order up to the LLC scan. Returns the
 * level that found w->cpu, hit_fallback, or which scan to run. */
PLACE_INLINE int select_idle_sibling(struct wake *w)
{
	int target = w->target, prev = w->prev, recent;
	bool prev_here, core;

	w->tm = map_of(w, target);
	w->tllc = &w->p->llc[w->tm->llc];
	/* target is prev or the waker, whose states this wakeup just read: a
	 * second read of the same line would cost a probe and tell nothing new
	 * (prev >= 0 is allowed, wake_prev(); so is a waker whose state was read) */
	if (target == prev ? take_seen(w, prev, w->prev_state)
	    : target == w->waker && w->waker_state ? take_seen(w, target, w->waker_state)
	    : take(w, target))
		return PLACE_STAT_hit_target;
	prev_here = prev >= 0 && (prev == target || map_of(w, prev)->llc == w->tm->llc);
	if (prev_here && prev != target && take_seen(w, prev, w->prev_state))
		return PLACE_STAT_hit_prev;
	recent = place__dense(w->p, w->r->recent_used_cpu); /* before we overwrite it */
	if (!(w->flags & PLACE_WAKE_NOCLAIM))
		w->r->recent_used_cpu = prev >= 0 ? w->r->prev_cpu : -1; /* prev's OS number */
	if (recent >= 0 && recent != prev && recent != target && map_of(w, recent)->llc == w->tm->llc &&
	    place__core_hinted(w->p, w->tllc, map_of(w, recent)) && take(w, recent))
		return PLACE_STAT_hit_recent;
	core = has_idle_core(w, w->tllc);
	if (!core && prev_here && prev_sibling(w))
		return PLACE_STAT_hit_prev_smt;
	if (core)
		return SCAN_CORES;
	/* SIS_UTIL: overloaded, unlikely to find one (EXACT has no bound) */
	if (w->p->scan_bounded && !(place_load_32(&w->tllc->nr_idle_scan) & PLACE_SCAN_NR) &&
	    !(place__util_recheck(w->p, w->tm->llc, target_slot(w)) && place__util_fresh(w->p, w->tm->llc)))
		return PLACE_STAT_hit_fallback;
	return SCAN_CPUS;
}

/* ---- the public calls -------------------------------------------------- */

/* t still counts on some CPU from an earlier wakeup it never ran after
 * (delivered nowhere, not released): give that up. */
static void give_up_delivery(struct place *p, struct place_task_rec *r)
{
	int from = place__dense(p, r->queued_cpu);
	uint64_t before, after;

	if (from >= 0) {
		before = place__st_deliver(&p->cpu[from].state, false, true, r->claim_gen, &after);
		place__after_delivery(p, from, before, after);
	}
	r->queued_cpu = -1;
	r->claim_gen = 0;
}

/*
 * t holds something from an earlier wakeup (r->queued_cpu >= 0). Another
 * instance's: -EXDEV (place__task_check). NOCLAIM answers only: nothing
 * is given up. Otherwise
 * it is given up before the target is chosen, so that this wakeup sees that
 * CPU as it is now (prev's state is read again); but only once the wakeup
 * cannot fail with -ESRCH, a failed call changing nothing. With a usable
 * prev it cannot (the target is prev or the waker); a new placement may
 * find no usable CPU in new_target() (the last one unregistered or went
 * offline meanwhile): 1, give it up once a target is found.
 */
PLACE_NOINLINE int stale_delivery(struct wake *w)
{
	int err;

	if (w->r->owner != w->p->id &&
	    (err = place__task_check(w->p, w->r)))
		return err;
	if (w->r->queued_cpu < 0 || (w->flags & PLACE_WAKE_NOCLAIM))
		return 0;
	if (w->prev < 0)
		return 1;
	give_up_delivery(w->p, w->r);
	w->prev_state = probe(w, w->prev);
	return 0;
}

/* w's prev: t's last CPU prev (dense, -1 none), state as probed there (0
 * when t may not go there). */
PLACE_INLINE void wake_prev(struct wake *w, int prev, uint64_t state)
{
	w->prev = prev;
	w->prev_state = state;
	if (prev >= 0 && !place__st_usable(state))
		w->prev = -1; /* no worker there, or not in the topology: a new placement */
}

/* Everything but prev, for arguments already checked but the NUMA group
 * (r is t's record, waker dense or -1). */
PLACE_INLINE int wake_fill(struct wake *w, place *p, place_task *t, struct place_task_rec *r, int waker,
			   unsigned flags)
{
	w->r = r;
	w->waker = waker;
	w->counter = flags & PLACE_WAKE_REMOTE ? -1 : waker;
	/* NUMA: read once (place_task_set_group may race), refused before
	 * anything changes */
	w->group = place_load_32(&r->group);
	if (place__numa_check(p, w->group))
		return -ENOSPC;
	w->p = p;
	w->t = t;
	w->flags = flags;
	w->probes = w->lost = w->false_pos = 0;
	w->prev_state = w->waker_state = 0;
	w->claim = !(flags & PLACE_WAKE_NOCLAIM) && place__feat(p, PLACE_FEAT_CLAIM);
	w->cookie = place_load_64(&w->r->cookie);
	w->cookies = place__cookies_matter(p, w->cookie);
	w->cpu = w->target = -1;
	w->gen = 0;
	w->tm = NULL;
	w->tllc = NULL;
	return 0;
}

/* Everything but prev: checks the arguments, fills the rest of w. */
PLACE_INLINE int wake_init_args(struct wake *w, place *p, place_task *t, int waker_cpu, unsigned flags)
{
	struct place_task_rec *r;
	int waker;

	if (!p || !(r = place__task_rec(t)) || (flags & ~PLACE_WAKE_FLAGS) || (t->cpus && !t->cpus_size) ||
	    ((flags & (PLACE_WAKE_CURRENT | PLACE_WAKE_REMOTE)) && waker_cpu == PLACE_CPU_NONE) ||
	    (flags & (PLACE_WAKE_CURRENT | PLACE_WAKE_REMOTE)) == (PLACE_WAKE_CURRENT | PLACE_WAKE_REMOTE))
		return -EINVAL;
	waker = place__dense(p, waker_cpu);
	if (waker_cpu != PLACE_CPU_NONE && waker < 0)
		return -ENODEV;
	return wake_fill(w, p, t, r, waker, flags);
}

PLACE_INLINE int wake_init(struct wake *w, place *p, place_task *t, int waker_cpu, unsigned flags)
{
	int err = wake_init_args(w, p, t, waker_cpu, flags), prev;

	if (err)
		return err;
	prev = place__dense(p, w->r->prev_cpu);
	/* a run edge still to come (place__task_running, on the prev at hand) */
	if (prev >= 0 && place_load_ptr_acq((void *const *)&p->cpu[prev].curr) == t)
		return place__why(-EALREADY, PLACE_WHY_WOKEN_RUNNING, p->map[prev].os, 0);
	if (flags & PLACE_WAKE_NEW)
		prev = -1;
	wake_prev(w, prev, prev >= 0 && place__allowed(p, t, prev) ? probe(w, prev) : 0);
	return 0;
}

/* t (record r) now counts on dense cpu: claimed there (claim gen), else
 * queued there (gen 0); with cookies (COOKIES applies to its cookie), its
 * cookie is what waits on cpu's core. Shared by every path. */
PLACE_INLINE int commit_task(struct place *p, struct place_task_rec *r, int cpu, uint32_t gen, bool cookies,
			     uint64_t cookie)
{
	int os = p->map[cpu].os;

	if (cookies)
		place__cookie_pend(p, cpu, cookie);
	if (!gen)
		place__st_enqueue(&p->cpu[cpu].state);
	r->queued_cpu = os;
	r->claim_gen = gen;
	r->owner = p->id;
	return os;
}

/* Add n to *v in counter's slot: its worker's own (single writer), else shared. */
PLACE_INLINE void stat_add(int counter, uint64_t *v, uint64_t n)
{
	if (counter >= 0)
		place_count_64(v, n);
	else
		place_add_64(v, n);
}

/* A wakeup's statistics, in counter's slot (place__stat_slot) for llc:
 * its level, probes, and what went wrong. wakeups and claims are sums of
 * these (stats.c); a claim is never lost on a hit. The slot's address is
 * taken once (each atomic add is a compiler barrier). */
PLACE_INLINE void commit_stats(struct place *p, int counter, int llc, enum place_stat_id level, uint64_t probes,
			       bool unclaimed, uint64_t lost, uint64_t false_pos)
{
	uint64_t *v = place__stat_slot(p, counter, llc);

	stat_add(counter, &v[level], 1);
	stat_add(counter, &v[PLACE_STAT_cpus_probed], probes);
	if (unclaimed)
		stat_add(counter, &v[PLACE_STAT_unclaimed], 1);
	if (lost)
		stat_add(counter, &v[PLACE_STAT_lost_claims], lost);
	if (false_pos)
		stat_add(counter, &v[PLACE_STAT_false_positives], false_pos);
}

/* Account the answer: the task is now counted on w->cpu (unless answering
 * only), and the statistics of this wakeup go to the waker's slot (no
 * waker: the external slot of w->cpu's LLC; a widened wakeup's, of the
 * target's, whose stacked and widened counts place__util_recheck()
 * throttles on). */
PLACE_INLINE int wake_commit(struct wake *w, enum place_stat_id level)
{
	int os = map_of(w, w->cpu)->os;
	/* widened: in the target's LLC, where place__util_recheck() counts */
	int llc = level == PLACE_STAT_hit_widened ? w->tm->llc : map_of(w, w->cpu)->llc;

	if (!(w->flags & PLACE_WAKE_NOCLAIM))
		commit_task(w->p, w->r, w->cpu, w->gen, w->cookies, w->cookie);
	commit_stats(w->p, w->counter, llc, level, w->probes, !w->claim && level != PLACE_STAT_hit_fallback, w->lost,
		     w->false_pos);
	return os;
}

/* WIDEN (widen.c): nothing idle for t in the target's LLC; beyond it, in
 * sched_ext's order. A grouped task stays on the target's node. Not when
 * the target is the waker: wake_affine pulled t into the waker's cache on
 * purpose (SYNC, a short waker, the load), as sched_ext keeps a SYNC
 * wakee on the waker's CPU; nor when the target runs a short task
 * (place__widen_may). */
PLACE_INLINE enum place_stat_id wake_widen(struct wake *w)
{
	struct place_hunt h = { .p = w->p, .t = w->t, .claim = w->claim, .cookies = w->cookies,
				.cookie = w->cookie };
	bool found = place__widen(&h, w->target, w->group && w->p->numa_count, true);

	w->probes += h.probes;
	w->lost += h.lost;
	w->false_pos += h.false_pos;
	if (!found)
		return PLACE_STAT_hit_fallback;
	w->cpu = h.cpu;
	w->gen = h.gen;
	return PLACE_STAT_hit_widened;
}

/* What is left once the level is known: stack if nothing idle, commit. */
PLACE_INLINE int wake_finish(struct wake *w, enum place_stat_id level)
{
	if (level == PLACE_STAT_hit_fallback && w->target != w->waker && place__widen_may(w->p, w->target, w->tm->llc))
		level = wake_widen(w); /* inline: its hunt is apart, w stays in registers */
	if (level == PLACE_STAT_hit_fallback)
		level = stack_cpu(w); /* nothing idle: stack on the target */
	return wake_commit(w, level);
}

/* The LLC scan and the rest of the wakeup, out of line. */
PLACE_NOINLINE int scan_finish(struct wake *w, bool core)
{
	return wake_finish(w, select_idle_cpu(w, core));
}

/* From the target on: select_idle_sibling(), else stack on the target. A
 * scan finishes the wakeup on a copy of w: nothing after it needs w, and w
 * whose address never escapes stays in registers. */
PLACE_INLINE int wake_from_target(struct wake *w)
{
	int level = select_idle_sibling(w);
	struct wake copy;

	if (level >= 0)
		return wake_finish(w, (enum place_stat_id)level);
	copy = *w;
	return scan_finish(&copy, level == SCAN_CORES);
}

/*
 * PLACE_WAKE_CURRENT (the kernel's WF_CURRENT_CPU): the waker hands its CPU
 * to t, which then goes there, queued behind the waker and not claimed (the
 * CPU is busy until the waker stops), when t may run there: its cpu_set_t
 * allows the CPU, a worker serves it, and (COOKIES) its core admits t's
 * cookie or runs nothing but the waker, which is leaving. The wakee is
 * recorded first, as the kernel does. Otherwise the usual path decides.
 */
PLACE_NOINLINE bool handoff(struct wake *w)
{
	struct place *p = w->p;
	int waker = w->waker;
	struct place_task_rec *wr;

	if (!place__allowed(p, w->t, waker) || !place__st_usable(probe(w, waker)))
		return false;
	if (w->cookies && !place__cookie_runs_fit(p, waker, w->cookie)) {
		uint64_t occ[2];

		place_load_64_2(place__occ(p, waker), occ);
		if (occ[PLACE_OCC_COUNT] != 1 || !p->cpu[waker].curr)
			return false; /* a sibling runs another cookie */
	}
	wr = place__waker_rec(p, waker);
	if (wr && place__feat(p, PLACE_FEAT_WAKE_WIDE) && !(w->flags & PLACE_WAKE_NOCLAIM))
		place__record_wakee(p, waker, wr, w->t);
	place__count(p, waker, 0, PLACE_STAT_affine_wakeups, 1);
	w->cpu = waker;
	w->claim = false; /* counted unclaimed: the CPU is the waker's until it stops */
	return true;
}

/* The whole path: wake_target() then select_idle_sibling(), as the kernel. */
PLACE_INLINE int wakeup(place *p, place_task *t, int waker_cpu, unsigned flags)
{
	struct wake w;
	int err = wake_init(&w, p, t, waker_cpu, flags);

	if (err)
		return err;
	if (w.r->queued_cpu >= 0 && (err = ON_COPY(&w, int, stale_delivery)) < 0)
		return err;
	if ((flags & PLACE_WAKE_CURRENT) && handoff(&w)) {
		if (err > 0)
			give_up_delivery(p, w.r); /* a new placement's, now that it has a target */
		return wake_commit(&w, PLACE_STAT_hit_target);
	}
	/* the startup window: nothing to look for (one load, new placements only) */
	if (w.prev < 0 && !place_load_64(&p->nr_workers))
		return place__why(-ESRCH, PLACE_WHY_NO_WORKER, 0, 0);
	w.target = wake_target(&w);
	if (w.target < 0) /* no usable CPU (changed nothing, or raced an unregister) */
		return place__why(-ESRCH, PLACE_WHY_NONE_ALLOWED, 0, 0);
	if (err > 0) {
		give_up_delivery(p, w.r); /* a new placement's, now that it has a target */
		w.waker_state = 0; /* the CPU given up may be the waker's: read it again */
		if (w.prev >= 0) /* fork-local: the creator's CPU may be the one given up */
			w.prev_state = probe(&w, w.prev);
	}
	return wake_from_target(&w);
}

/*
 * The commonest wakeups have plain flags, no cpu_set_t and nothing of an
 * earlier wakeup to give up. place_wakeup looks at prev first and then takes
 * a short path, small enough to keep what it needs in registers, where one
 * fits: PREV_IDLE claims prev, as select_idle_sibling()'s first step would;
 * PREV_BUSY in an overloaded LLC stacks on prev after the kernel's probes.
 * Without a waker prev is the target (see wake_target()); a worker waker
 * first makes wake_target()'s choice with the whole path's own helpers
 * (affine_choice()), and the same short paths go on when it is prev
 * (counted in the waker's slot), select_idle_sibling() from the waker when
 * it is the waker. A short path hands anything else to a longer one, which
 * starts over: a busy prev that overloaded() does not decide goes to
 * select_idle_sibling() from its first step, every other wakeup to the
 * whole path. They answer alike (tests/test_engine: t_short_paths_agree).
 */
enum glance { WHOLE_PATH, PREV_IDLE, PREV_BUSY };

PLACE_INLINE enum glance glance(place *p, place_task *t, unsigned flags, int *prev, uint64_t *state)
{
	const struct place_task_rec *r = place__task_rec(t);

	if ((flags & ~PLACE_WAKE_SYNC) || !r || t->cpus || r->queued_cpu >= 0 ||
	    (*prev = place__dense(p, r->prev_cpu)) < 0)
		return WHOLE_PATH;
	*state = place__state(p, *prev);
	if (!place__st_usable(*state))
		return WHOLE_PATH;
	if (place__st_available(*state))
		return PREV_IDLE; /* never t's CPU while t runs: running clears IDLE */
	/* t still running there: the whole path refuses it (-EALREADY) */
	return place_load_ptr_acq((void *const *)&p->cpu[*prev].curr) == t ? WHOLE_PATH : PREV_BUSY;
}

/* The short paths' w: what wake_init() and wake_target() make of it, prev
 * given, the target prev, after probes probes. glance() checked p, t and
 * flags (and that t has no cpu_set_t); waker is dense or -1. */
PLACE_INLINE int wake_init_prev(struct wake *w, place *p, place_task *t, int waker, unsigned flags, int prev,
				uint64_t state, uint64_t probes)
{
	/* after glance(): flags are SYNC or 0 (the REMOTE and NOCLAIM tests fold) */
	int err = wake_fill(w, p, t, place__rec(t), waker, flags & PLACE_WAKE_SYNC);

	if (err)
		return err;
	w->probes = probes;
	wake_prev(w, prev, state);
	w->target = prev;
	return 0;
}

/* The whole path inside the read section place_wakeup opened; closes it
 * (so that place_wakeup's calls are tail calls and it saves no register). */
PLACE_NOINLINE int wakeup_unlock(place *p, place_task *t, int waker_cpu, unsigned flags)
{
	int cpu = wakeup(p, t, waker_cpu, flags);

	place__read_unlock(p);
	return cpu;
}

/* A short path's answer: t (cookie read once, cookies: COOKIES applies
 * to it) is counted on cpu (claim gen, 0 = queued), at the given level
 * after probes probes (lost claims: lost), as wake_commit() counts it; the
 * read section closes. A worker waker (dense waker >= 0) counts in its own
 * slot; no waker, in the external slot of LLC llc: the target's (prev's or
 * the waker's), where a widened wakeup counts too, as wake_commit(). */
PLACE_INLINE int short_commit(place *p, int waker, int llc, struct place_task_rec *r, uint64_t cookie, bool cookies,
			      int cpu, uint32_t gen, enum place_stat_id level, uint64_t probes, uint64_t lost,
			      uint64_t false_pos)
{
	int os = commit_task(p, r, cpu, gen, cookies, cookie);

	commit_stats(p, waker, llc, level, probes, !gen && level != PLACE_STAT_hit_fallback, lost, false_pos);
	if (waker >= 0 && waker == cpu)
		place_count_64(&p->slot[waker].v[PLACE_STAT_affine_wakeups], 1); /* as wake_target() */
	place__read_unlock(p);
	return os;
}

/* Can a short path answer for t (its cookie as read): its group accepted,
 * its cookie admitted on prev's core; when stacking, not once cookies mix
 * on SMT cores (stack_cpu balances them then). NO_FIT, else whether
 * COOKIES applies (short_commit keeps the core's pend hint then, as
 * wake_commit does). */
enum fit { NO_FIT = -1, FIT, FIT_COOKIES };

PLACE_INLINE enum fit short_fits(place *p, struct place_task_rec *r, uint64_t cookie, int prev, bool stacking)
{
	if (place__numa_check(p, place_load_32(&r->group)))
		return NO_FIT;
	if (!place__cookies_matter(p, cookie))
		return FIT;
	/* cookies mixed on SMT cores: stack_cpu() balances the cookie's cores */
	if (stacking && place_load_32(&p->cookie_mixed) && p->map[prev].smt > 1)
		return NO_FIT;
	return place__cookie_admits(p, prev, cookie) ? FIT_COOKIES : NO_FIT;
}

/* PREV_IDLE's claim, its mask bit still to clear (place__claim_unpublish):
 * apart, so that prev_idle_unlock() calls nothing and saves no register.
 * t's cookie is read again (six arguments, all in registers): the pend
 * hint it sets is a hint, as any racing place_task_set_cookie leaves it. */
PLACE_NOINLINE int claimed_unpublish_unlock(place *p, int waker, struct place_task_rec *r, int prev, uint32_t gen,
					   uint64_t probes)
{
	uint64_t cookie = place_load_64(&r->cookie);

	probes += place__claim_unpublish_slow(p, prev);
	return short_commit(p, waker, p->map[prev].llc, r, cookie, place__cookies_matter(p, cookie), prev, gen,
			    PLACE_STAT_hit_target, probes, 0, 0);
}

/* PREV_IDLE: claim prev, as select_idle_sibling()'s first step would,
 * closing the read section. Anything else (CLAIM off, a cookie or group the
 * short paths do not decide, a lost claim) starts the whole path; a lost
 * claim is counted here, as take_seen() would have. waker: dense or -1,
 * waker_cpu its OS number. */
PLACE_INLINE int prev_idle_unlock(place *p, place_task *t, int waker_cpu, int waker, unsigned flags, int prev,
				  uint64_t state, uint64_t probes)
{
	struct place_task_rec *r = place__rec(t);
	uint64_t cookie = place_load_64(&r->cookie);
	enum fit fit;
	uint32_t gen;

	if (!place__feat(p, PLACE_FEAT_CLAIM) || (fit = short_fits(p, r, cookie, prev, false)) == NO_FIT)
		return wakeup_unlock(p, t, waker_cpu, flags);
	if (!place__st_claim(&p->cpu[prev].state, state, &gen)) {
		place__count(p, waker, p->map[prev].llc, PLACE_STAT_lost_claims, 1);
		return wakeup_unlock(p, t, waker_cpu, flags);
	}
	if (place__claim_unpublish_due(p, prev))
		return claimed_unpublish_unlock(p, waker, r, prev, gen, probes);
	return short_commit(p, waker, p->map[prev].llc, r, cookie, fit, prev, gen, PLACE_STAT_hit_target, probes, 0, 0);
}

/* The no-waker short paths keep place_wakeup's first four arguments where
 * they are (waker_cpu is PLACE_CPU_NONE): no register moves before the
 * tail calls. */
PLACE_NOINLINE int wake_prev_idle_unlock(place *p, place_task *t, int waker_cpu, unsigned flags, int prev,
					 uint64_t state)
{
	return prev_idle_unlock(p, t, waker_cpu, -1, flags, prev, state, 1);
}

/* select_idle_sibling() from target, closing the read section: prev where
 * PREV_BUSY is not overloaded(), or the worker waker that wake_affine
 * chose. waker_cpu: the waker's OS number or PLACE_CPU_NONE; the probes so
 * far are prev's and the waker's. Their states are read again, uncounted
 * (this wakeup read them; fewer registers to keep in the callers); a prev
 * no longer usable starts over. Out of line: its struct wake would take a
 * stack frame in its callers. */
PLACE_NOINLINE int wake_from_unlock(place *p, place_task *t, int waker_cpu, unsigned flags, int prev, int target)
{
	uint64_t state = place__state(p, prev);
	int waker = place__dense(p, waker_cpu), cpu;
	struct wake w;

	if (!place__st_usable(state))
		return wakeup_unlock(p, t, waker_cpu, flags);
	if (waker >= 0 && waker == target)
		place__count(p, waker, 0, PLACE_STAT_affine_wakeups, 1); /* as wake_target() */
	cpu = wake_init_prev(&w, p, t, waker, flags, prev, state, 1 + (waker >= 0));
	if (!cpu) {
		w.target = target;
		if (target != prev)
			w.waker_state = place__state(p, waker);
		cpu = wake_from_target(&w);
	}
	place__read_unlock(p);
	return cpu;
}

/*
 * PREV_BUSY where select_idle_sibling() can only stack on prev: the LLC
 * hints no idle core, its scan bound is 0 (SIS_UTIL: overloaded, so no
 * scan), and neither recent_used_cpu nor an SMT sibling of prev is
 * available. The commonest wakeup of a busy machine, here with the kernel's
 * probes and nothing else, each only where the mask hints the core
 * (place__core_hinted); *probes counts them. False for anything else
 * (no scan bound, something available, an idle-core hint, a
 * cookie that prev's core does not admit, a group the instance refuses):
 * the busy path then decides it in the kernel's order from the start.
 */
enum over { OVER_NOT, OVER_STACK, OVER_RECHECK /* stack, but RECHECK is set */ };

PLACE_INLINE int overloaded(place *p, place_task *t, int prev, uint64_t *probes)
{
	struct place_task_rec *r = place__rec(t);
	const struct place_cpu_map *m = &p->map[prev];
	const struct place_llc *llc = &p->llc[m->llc];
	uint32_t scan = place_load_32(&llc->nr_idle_scan); /* the bound, 0, or 0 and RECHECK */
	int recent;

	if (!p->scan_bounded || (scan & PLACE_SCAN_NR) || (llc->smt && place_load_32(&llc->has_idle_cores)) ||
	    short_fits(p, r, place_load_64(&r->cookie), prev, true) == NO_FIT)
		return OVER_NOT;
	recent = place__dense(p, r->recent_used_cpu);
	if (recent >= 0 && recent != prev && p->map[recent].llc == m->llc && place__core_hinted(p, llc, &p->map[recent]) &&
	    (++*probes, place__st_available(place__state(p, recent))))
		return OVER_NOT;
	if (m->smt > 1 && place__core_hinted(p, llc, m))
		for (int sib = p->sib_next[prev]; sib != prev; sib = p->sib_next[sib])
			if (++*probes, place__st_available(place__state(p, sib)))
				return OVER_NOT;
	return scan ? OVER_RECHECK : OVER_STACK;
}

/*
 * overloaded(), and WIDEN may find an idle CPU beyond prev's LLC: the busy
 * path would find nothing in prev's LLC with the same probes and go on to
 * wake_widen(), so go there at once. What it finds, else stack on prev, as
 * wake_finish(). Apart: its hunt would take a stack frame in the stacking
 * path. waker: dense or -1, not prev (no widening onto the waker's CPU).
 */
PLACE_NOINLINE int widen_unlock(place *p, place_task *t, int prev, uint64_t probes, int waker)
{
	struct place_task_rec *r = place__rec(t);
	uint64_t cookie = place_load_64(&r->cookie);
	struct place_hunt h = { .p = p, .t = t, .claim = place__feat(p, PLACE_FEAT_CLAIM),
				.cookies = place__cookies_matter(p, cookie), .cookie = cookie };
	bool found = place__widen(&h, prev, place_load_32(&r->group) && p->numa_count, true);

	return short_commit(p, waker, p->map[prev].llc, r, cookie, h.cookies, found ? h.cpu : prev, found ? h.gen : 0,
			    found ? PLACE_STAT_hit_widened : PLACE_STAT_hit_fallback, probes + h.probes, h.lost,
			    h.false_pos);
}

/* overloaded(): nothing idle for t in prev's LLC; widen_unlock(), else
 * stack on prev, closing the read section. waker: dense or -1. */
PLACE_NOINLINE int wake_stack_unlock(place *p, place_task *t, int prev, uint64_t probes, int waker)
{
	struct place_task_rec *r = place__rec(t);
	uint64_t cookie = place_load_64(&r->cookie);

	r->recent_used_cpu = r->prev_cpu; /* as select_idle_sibling() */
	if (waker != prev && place__widen_may(p, prev, p->map[prev].llc))
		return widen_unlock(p, t, prev, probes, waker);
	return short_commit(p, waker, p->map[prev].llc, r, cookie, place__cookies_matter(p, cookie), prev, 0,
			    PLACE_STAT_hit_fallback, probes, 0, 0);
}

/*
 * PLACE_WAKE_CURRENT from a worker (waker_cpu), for t with nothing
 * queued and no cpu_set_t: handoff()'s answer and nothing else, counted as
 * the whole path counts it (its probes: prev's in wake_init(), the
 * waker's). Anything else (a cookie that the waker's core does not admit,
 * a group the instance refuses, a waker no longer usable, other flags) the
 * whole path decides.
 */
PLACE_NOINLINE int wake_handoff_unlock(place *p, place_task *t, int waker_cpu, unsigned flags)
{
	struct place_task_rec *r = place__task_rec(t), *wr;
	int waker = place__dense(p, waker_cpu);
	uint64_t probes = 1, cookie = 0;
	enum fit fit = NO_FIT;

	if (waker < 0 || !r || t->cpus || (flags & ~(PLACE_WAKE_SYNC | PLACE_WAKE_CURRENT | PLACE_WAKE_NEW)) ||
	    r->queued_cpu >= 0 || !place__st_usable(place__state(p, waker)) ||
	    (fit = short_fits(p, r, cookie = place_load_64(&r->cookie), waker, false)) == NO_FIT ||
	    place__task_running(p, t) >= 0)
		return wakeup_unlock(p, t, waker_cpu, flags);
	if (!(flags & PLACE_WAKE_NEW) && place__dense(p, r->prev_cpu) >= 0)
		probes++;
	wr = place__waker_rec(p, waker);
	if (wr && place__feat(p, PLACE_FEAT_WAKE_WIDE))
		place__record_wakee(p, waker, wr, t);
	/* queued, unclaimed */
	return short_commit(p, waker, p->map[waker].llc, r, cookie, fit, waker, 0, PLACE_STAT_hit_target, probes, 0, 0);
}

/* The bound of 0 is due a look at its age: one older than its period (a
 * quiet LLC) now lets a scan run, and the busy path decides. Apart: the
 * clock read and the recompute take a stack frame that a wakeup stacked by
 * wake_recheck_unlock() would pay too (saturated, one LLC: 213 -> 235
 * instructions, the median of place-bench's 16-CPU rows). Six arguments,
 * all in registers: the dense waker is found again from waker_cpu. */
PLACE_NOINLINE int wake_stale_unlock(place *p, place_task *t, int waker_cpu, unsigned flags, int prev,
				     uint64_t probes)
{
	if (place__util_fresh(p, p->map[prev].llc))
		return wake_from_unlock(p, t, waker_cpu, flags, prev, prev);
	return wake_stack_unlock(p, t, prev, probes, place__dense(p, waker_cpu));
}

/* An idle CPU flagged the bound of 0 (RECHECK): look at its age when
 * place__util_recheck() says to (not from overloaded(), whose caller's
 * registers would pay for it), else stack. */
PLACE_NOINLINE int wake_recheck_unlock(place *p, place_task *t, int waker_cpu, unsigned flags, int prev,
				       uint64_t probes, int waker)
{
	int llc = p->map[prev].llc; /* the slot its stacked or widened count goes to */

	if (place__util_recheck(p, llc, place__stat_slot(p, waker, llc)))
		return wake_stale_unlock(p, t, waker_cpu, flags, prev, probes);
	return wake_stack_unlock(p, t, prev, probes, waker);
}

/* PREV_BUSY (waker dense or -1, probes so far: prev's and the waker's):
 * stack or widen where overloaded() decides, else the busy path. */
PLACE_INLINE int prev_busy(place *p, place_task *t, int waker_cpu, unsigned flags, int prev, uint64_t probes,
			   int waker)
{
	switch (overloaded(p, t, prev, &probes)) {
	case OVER_STACK:
		return wake_stack_unlock(p, t, prev, probes, waker);
	case OVER_RECHECK:
		return wake_recheck_unlock(p, t, waker_cpu, flags, prev, probes, waker);
	case OVER_NOT:
		break;
	}
	return wake_from_unlock(p, t, waker_cpu, flags, prev, prev);
}

/* PREV_BUSY without a waker, apart as wake_prev_idle_unlock(): place_wakeup
 * keeps only what glance() needs, so the idle prev's path saves no
 * register for the busy one's probes. */
PLACE_NOINLINE int wake_prev_busy_unlock(place *p, place_task *t, int waker_cpu, unsigned flags, int prev)
{
	return prev_busy(p, t, waker_cpu, flags, prev, 1 /* prev, by glance() */, -1);
}

/*
 * A worker waker (waker_cpu, a registered worker's CPU): wake_target()'s
 * choice, then the short paths as above, with the waker's statistics slot.
 * A group the instance refuses, or a cross-node waker of a grouped task
 * (the NUMA rule), starts the whole path before anything changes; the
 * whole path records the wakee again, which changes nothing.
 */
PLACE_NOINLINE int wake_worker_unlock(place *p, place_task *t, int waker_cpu, unsigned flags)
{
	int waker = place__dense(p, waker_cpu), prev = -1;
	uint64_t state = 0, ws, probes = 2; /* prev's and the waker's */
	struct place_task_rec *r;
	enum glance g;
	uint32_t group;

	if (waker < 0 || (g = glance(p, t, flags, &prev, &state)) == WHOLE_PATH)
		return wakeup_unlock(p, t, waker_cpu, flags);
	r = place__rec(t);
	group = place_load_32(&r->group);
	if (place__numa_check(p, group))
		return wakeup_unlock(p, t, waker_cpu, flags);
	if (g == PREV_IDLE && prev_decides(p, prev, state, waker, flags, group)) {
		affine_choice(p, t, r, waker, prev, 0, 0, state); /* records the wakee: prev */
		return prev_idle_unlock(p, t, waker_cpu, waker, flags, prev, state, probes - 1);
	}
	ws = place__state(p, waker);
	if (place__st_usable(ws)) {
		if (place__numa_cross(p, group, prev, waker))
			return wakeup_unlock(p, t, waker_cpu, flags);
		/* glance() let only SYNC through: say so, the other tests fold */
		if (affine_choice(p, t, r, waker, prev, flags & PLACE_WAKE_SYNC, ws, state) != prev)
			return wake_from_unlock(p, t, waker_cpu, flags, prev, waker);
	}
	if (g == PREV_IDLE)
		return prev_idle_unlock(p, t, waker_cpu, waker, flags, prev, state, probes);
	return prev_busy(p, t, waker_cpu, flags, prev, probes, waker);
}

/* This thread's first wakeup: its RCU reader slot, then the whole path
 * (which answers as the short paths would). */
PLACE_NOINLINE int wakeup_register(place *p, place_task *t, int waker_cpu, unsigned flags)
{
	place__read_register();
	place__read_lock();
	return wakeup_unlock(p, t, waker_cpu, flags);
}

/* One RCU read-side critical section (rcu.h): place_set_topology's grace
 * period waits for it, so an answer read from a state word before a CPU
 * went OFFLINE is returned before that call returns. */
PLACE_INLINE int wakeup_entry(place *p, place_task *t, int waker_cpu, unsigned flags)
{
	uint64_t state = 0;
	int prev = -1;

	if (!p)
		return -EINVAL;
	if (!place__read_ready())
		return wakeup_register(p, t, waker_cpu, flags);
	place__read_lock();
	if (waker_cpu != PLACE_CPU_NONE)
		return flags & PLACE_WAKE_CURRENT ? wake_handoff_unlock(p, t, waker_cpu, flags)
						  : wake_worker_unlock(p, t, waker_cpu, flags);
	switch (glance(p, t, flags, &prev, &state)) {
	case PREV_IDLE:
		return wake_prev_idle_unlock(p, t, waker_cpu, flags, prev, state);
	case PREV_BUSY:
		return wake_prev_busy_unlock(p, t, waker_cpu, flags, prev);
	case WHOLE_PATH:
		break;
	}
	return wakeup_unlock(p, t, waker_cpu, flags);
}

PLACE_EXTERN int place_wakeup(place *p, place_task *t, int waker_cpu, unsigned flags)
{
	return wakeup_entry(p, t, waker_cpu, flags);
}

/* The same wakeup; then t's record says whether it claimed: a successful
 * wakeup other than NOCLAIM leaves claim_gen its claim's generation, 0
 * when it claimed nothing. Only the caller can touch t until it delivers
 * it, so the record still holds this wakeup's answer. */
PLACE_EXTERN int place_wakeup_ex(place *p, place_task *t, int waker_cpu, unsigned flags, unsigned *how)
{
	int cpu = wakeup_entry(p, t, waker_cpu, flags);

	if (how)
		*how = cpu >= 0 && !(flags & PLACE_WAKE_NOCLAIM) && place__rec(t)->claim_gen ? PLACE_WOKE_CLAIMED
											     : 0;
	return cpu;
}

PLACE_EXTERN int place_claim_release(place *p, int cpu)
{
	int d = place__worker_cpu(p, cpu);
	uint64_t after;

	if (d == -ENOENT)
		d = place__dense(p, cpu); /* a claim may outlive its worker */
	if (d < 0)
		return d;
	if (!place__st_release(&p->cpu[d].state, &after))
		return -ENOENT;
	place__after_delivery(p, d, PLACE_ST_CLAIMED, after);
	place__count(p, -1, p->map[d].llc, PLACE_STAT_claims_released, 1);
	return 0;
}

PLACE_EXTERN int place_task_forget(place *p, place_task *t)
{
	struct place_task_rec *r = place__task_rec(t);

	if (!p || !r)
		return -EINVAL;
	if (r->owner != p->id && place__task_check(p, r))
		return -EXDEV; /* (a re-initialised record drops what it held elsewhere) */
	give_up_delivery(p, r);
	if (r->numa_pending)
		place__numa_started(p, r); /* its slot under the moves cap */
	place__sleeper_drop(p, t, r->prev_cpu); /* nor is its CPU kept for it */
	return 0;
}

PLACE_EXTERN int place_task_claimed(const place *p, const place_task *t)
{
	const struct place_task_rec *r = place__task_rec(t);
	int cpu;
	uint64_t s;

	if (!p || !r)
		return -EINVAL;
	if (r->owner != p->id && place__rec_holds(r))
		return place__task_check(p, r) ?: PLACE_CPU_NONE;
	cpu = place__dense(p, r->queued_cpu);
	if (cpu < 0 || !r->claim_gen)
		return PLACE_CPU_NONE;
	s = place__state(p, cpu);
	return (s & PLACE_ST_CLAIMED) && place__st_gen(s) == r->claim_gen ? r->queued_cpu : PLACE_CPU_NONE;
}
