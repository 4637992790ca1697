/*
 * The instance: per-CPU state lines, per-LLC shared blocks, statistics slots
 * and the private task record. Every shared field says who writes it, who
 * reads it and which memory order makes that safe.
 *
 * Indexes: "cpu" inside libplace is a dense index (topo.h); records and the
 * public API speak OS CPU numbers. "pos" is a CPU's position in its LLC's
 * slice of topo->llc_cpus, which is also its bit in the LLC's masks; SMT
 * siblings occupy adjacent positions [core_lo, core_lo + smt).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_INTERNAL_H
#define PLACE_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include "atomic.h"
#include "bitmap.h"
#include "topo.h"

#define PLACE_CACHELINE 64

/*
 * The per-CPU state word. One 64-bit word so that "is this CPU available"
 * is one load and a claim is one compare-and-swap.
 *
 *   bit 0       REGISTERED  a worker serves this CPU
 *   bit 1       IDLE        the worker found its queue empty (idle_enter)
 *   bit 2       CLAIMED     a wakeup claimed it; the task is on its way
 *   bit 3       OFFLINE     not in the instance's current topology
 *                           (place_set_topology): never claimed nor
 *                           returned; its worker may still drain its queue
 *   bits 8..31  QUEUED      tasks sent here (claimed, stacked, preempted)
 *                           that have not started running yet
 *   bits 32..63 GEN         claim generation, bumped by each claim, so a
 *                           task ends only its own claim, never a later one
 *
 * Available (idle for a new wakeup) = REGISTERED, IDLE, not CLAIMED, not
 * OFFLINE and nothing QUEUED: the kernel's available_idle_cpu() with
 * ttwu_pending. Usable (may be returned at all, idle or not) = REGISTERED
 * and not OFFLINE: the kernel's cpu_active().
 */
#define PLACE_ST_REGISTERED UINT64_C(0x1)
#define PLACE_ST_IDLE UINT64_C(0x2)
#define PLACE_ST_CLAIMED UINT64_C(0x4)
#define PLACE_ST_OFFLINE UINT64_C(0x8)
#define PLACE_ST_QUEUED_ONE (UINT64_C(1) << 8)
#define PLACE_ST_QUEUED_MASK (UINT64_C(0xffffff) << 8)
#define PLACE_ST_GEN_SHIFT 32
/*
 * QUEUED's largest value, 2^24 - 1, means "saturated: the count was lost",
 * not a count: an enqueue that reaches it stays there, and no delivery or
 * release takes it back down. The CPU then never looks available (its
 * queue may hold any number of tasks): one CPU fewer to claim, never a
 * claim over queued tasks. Exact below that: 16.7 M tasks queued on one
 * CPU, each with its own task record (120 bytes: 1.9 GiB of them).
 */
#define PLACE_ST_QUEUED_SAT UINT32_C(0xffffff)

static inline bool place__st_available(uint64_t s)
{
	return (s & (PLACE_ST_REGISTERED | PLACE_ST_IDLE | PLACE_ST_CLAIMED | PLACE_ST_OFFLINE |
		     PLACE_ST_QUEUED_MASK)) == (PLACE_ST_REGISTERED | PLACE_ST_IDLE);
}

/* May a wakeup return this CPU at all (stack a task there, take it as the
 * waker's): a worker serves it and the current topology has it. Every path
 * that returns or proposes a CPU without a claim CAS tests this. */
static inline bool place__st_usable(uint64_t s)
{
	return (s & (PLACE_ST_REGISTERED | PLACE_ST_OFFLINE)) == PLACE_ST_REGISTERED;
}

static inline uint32_t place__st_queued(uint64_t s)
{
	return (uint32_t)((s & PLACE_ST_QUEUED_MASK) >> 8);
}

static inline uint32_t place__st_gen(uint64_t s)
{
	return (uint32_t)(s >> PLACE_ST_GEN_SHIFT);
}

/*
 * Per-CPU state: exactly one cache line, written mostly by the CPU's worker.
 */
struct place_cpu {
	/* Writers: the worker (IDLE on its edges), any waker (CLAIMED, QUEUED,
	 * GEN by CAS), any thread running a task claimed here (ends CLAIMED),
	 * register/unregister (REGISTERED), place_set_topology (OFFLINE; the
	 * last three under p->ctl). Only ever changed by CAS or atomic RMW
	 * (sequentially consistent), read relaxed by probes: the CAS is the one
	 * exact step, so a stale read only costs a failed CAS. A stale read of
	 * OFFLINE on a path that returns a CPU without a claim (stacking, the
	 * waker) is closed by the RCU grace period of place_set_topology: such
	 * a wakeup ends before that call returns. */
	alignas(PLACE_CACHELINE) uint64_t state;
	/* 1 while the worker runs a task. Worker writes, wakers read (relaxed
	 * hint for nr_running in wake_affine). */
	uint32_t running;
	/* Fail-prone mark (seed 001 patch 4): a failed partial scan from this
	 * CPU sets it to 1 (relaxed store, any waker); the next scan from here
	 * consumes it with CAS 1 -> 0. A lost or duplicated mark costs one scan
	 * with or without sibling probing: harmless. */
	uint32_t scan_sibling;
	/* Short-run estimate (average run between sleeps, ns) of the running
	 * task, 0 when none or unknown. Worker writes at run_begin/run_end,
	 * wakers read relaxed (the short-task wake-affine rule). */
	uint64_t curr_avg_ns;
	/* The running task's record (wake_wide reads the waker's flips through
	 * it). Written by the worker: last in run_begin and run_end, with
	 * release. Read by the worker's own thread when it wakes a task with
	 * waker_cpu == this CPU (plain), and by any wakeup of a task whose
	 * prev is this CPU, with acquire (place__task_running: a task still
	 * running is refused). */
	place_task *curr;
	/* COOKIES: the cookie that the running task's run_begin counted in its
	 * core's occupancy (captured there, so that place_task_set_cookie during
	 * the run cannot unbalance it); run_end and unregister remove exactly
	 * that. Worker only (plain accesses from its thread). */
	uint64_t curr_cookie;
	/* The worker's last clock reading, on a timed run edge (idle.c: not
	 * every run is timed): when the current run began while it runs a
	 * timed one. Written by the worker (relaxed stores), which reads it
	 * plain: run_end takes a timed run's length from it, the worker's own
	 * wakeups use it as "now" to decay wakee flips (stale by a few runs at
	 * most, against a one-second decay). The scan-bound recompute (any CPU
	 * of the LLC) reads it relaxed, with running and curr_avg_ns, for the
	 * current run's part of busy_ns when that run is timed at weight 1. */
	uint64_t stamp;
	/* Utilization input: ns of finished runs (the kernel's notion too:
	 * running time, not time between parks), each timed run weighted by
	 * the runs it stands for (idle.c). Worker writes relaxed at run_end;
	 * the recompute reads relaxed: a torn busy_ns/running/stamp read skews
	 * one sample of a decayed average. */
	uint64_t busy_ns;
	/* Its LLC (read-only after create): the idle edge reaches the LLC's
	 * hints from this line, which it has at hand. */
	struct place_llc *llc;
};
_Static_assert(sizeof(struct place_cpu) == PLACE_CACHELINE, "per-CPU state is one cache line");

/*
 * COOKIES: one SMT core's occupancy, {cookie, count of tasks running on its
 * CPUs}, a 16-byte-aligned double word alone on its cache line (only the
 * core's own workers write it; wakers read it). Changed only by the
 * sequentially consistent 128-bit CAS of cookie.h (run_begin adds, run_end
 * removes; partners: the siblings' enters and leaves, all RMWs on the one
 * word); read relaxed and possibly torn by wakeup scans as a hint. {0, 0}
 * when nothing runs. Cores with one CPU never use theirs.
 */
struct place_core {
	alignas(PLACE_CACHELINE) uint64_t occ[2]; /* [0] cookie, [1] count */
	/* The cookie of the work last sent to the core's queues: a wakeup's
	 * answer there (wake_commit, short_commit, the hand-off short path) or
	 * a refused run_begin (its task waits there). Relaxed stores by any waker and the core's
	 * workers, relaxed reads by wakeups (place__cookie_admits): a hint,
	 * stale or lost at worst, which costs a refusal, never a co-run. */
	uint64_t pend;
	/* When the first run_begin refused since the core last emptied was
	 * refused (0 = none waits): the waiting cookie's turn is due
	 * PLACE_COOKIE_TURN_NS later. Set by a refused worker when 0 (relaxed
	 * load then store: two refusals racing keep either stamp), cleared by
	 * the leave that empties a core a refusal marked. A hint for
	 * fairness; isolation never reads it. */
	uint64_t turn_since;
};
_Static_assert(sizeof(struct place_core) == PLACE_CACHELINE, "a core's occupancy is one cache line");

/* Where a CPU sits, flattened for the hot path. Read-only after create. */
struct place_cpu_map {
	int os;      /* OS number */
	int llc;     /* dense LLC id */
	int pos;     /* bit in the LLC's masks */
	int core_lo; /* first sibling's pos */
	int smt;     /* number of siblings, itself included */
	int core;    /* dense core id */
	int node;    /* dense NUMA node id */
	int core_at; /* index of the first sibling in p->llc_cpus (32 bytes: indexing is a shift) */
};
_Static_assert(sizeof(struct place_cpu_map) == 32, "place_cpu_map is 32 bytes");

/*
 * Per-LLC shared block. The first line is read-only after create; the hints
 * line is written only on edges, and only when a value changes (read before
 * write); the masks live in their own lines (p->words).
 */
struct place_llc {
	alignas(PLACE_CACHELINE) int first;   /* index of its first CPU in topo->llc_cpus */
	int weight;                           /* CPUs in the LLC */
	int nr_words;                         /* words per mask */
	bool smt;                             /* some core has more than one CPU */
	/* SIS_CORE: the core-granule idle mask (a hint). Set by a CPU entering
	 * idle when no sibling's bit is set; cleared by scans repairing false
	 * positives. Starts full. EXACT: one bit per available CPU. */
	uint64_t *icpus;
	/* EXACT: bit core_lo set while the whole core is available. */
	uint64_t *icores;
	/* LINEAR: a constant all-ones mask, iterated like icpus. */
	const uint64_t *span;
	/* WIDEN's summary word holding this LLC's bit, and the bit (widen.h):
	 * the idle edge reaches it from the LLC it has at hand. */
	uint64_t *summary;
	uint64_t summary_bit;

	/* Set (relaxed, read first) by a CPU entering idle when its whole core
	 * is available; cleared by a full idle-core scan that found no idle
	 * core. Read relaxed by scans. A hint, as in the kernel. An LLC
	 * without SMT has no idle core to find (scans test smt first); its
	 * flag stays 1, so that the idle edge has nothing to do for it. */
	alignas(PLACE_CACHELINE) uint32_t has_idle_cores;
	/* SIS_UTIL scan bound (PLACE_SCAN_NR bits), and PLACE_SCAN_RECHECK:
	 * the bound is 0 but a CPU of the LLC is idle, so a wakeup about to
	 * stack checks first that the 0 is not older than its period (issue
	 * 14.1: a quiet LLC has no run_end to recompute it). Written (only
	 * when it changes) by the one CPU that won the recompute; RECHECK also
	 * by a CPU entering idle (CAS 0 -> RECHECK: never over a bound). Read
	 * relaxed by scans: a stale RECHECK costs one clock read. */
	uint32_t nr_idle_scan;
	/* Registered workers of online CPUs in this LLC: the weight the bound
	 * scales. register/unregister/place_set_topology write with atomic add
	 * (under p->ctl, so REGISTERED and OFFLINE are stable meanwhile), the
	 * recompute reads relaxed. */
	uint64_t nr_registered;
	/* Recompute gate: the CPU whose CAS moves util_stamp forward does the
	 * recompute; the others skip. util_avg (fixed point, 1024 = all busy)
	 * and the LLC's util_seen entries are then written by that winner only
	 * (relaxed: a winner of the next period racing a slow one skews one
	 * sample of a decayed average). */
	uint64_t util_stamp;
	uint64_t util_avg;
};

#define PLACE_SCAN_RECHECK UINT32_C(0x80000000)
#define PLACE_SCAN_NR (PLACE_SCAN_RECHECK - 1)

/* A thread mask that PLACE_WORKER_BIND replaced: its thread gets it back
 * when it unregisters that CPU (place.c). */
struct place_bound {
	struct place_bound *next;
	pid_t tid;      /* the bound thread */
	size_t size;    /* bytes of mask */
	cpu_set_t *mask;
};

/* A CPU's registrations (control plane only: under p->ctl, never read by
 * the hot paths, which see REGISTERED in the state word): how many
 * workers serve it (PLACE_WORKER_SHARED adds one), the masks BIND
 * replaced on it. */
struct place_seat {
	uint32_t workers;
	struct place_bound *bound;
};

/* Statistics, schedstat-like. One list drives the slots and place_stats. */
#define PLACE_STATS(X)                                                                             \
	X(wakeups) X(affine_wakeups) X(hit_target) X(hit_prev) X(hit_recent) X(hit_idle_core)      \
	X(hit_idle_cpu) X(hit_sibling) X(hit_fallback) X(cpus_probed) X(false_positives)           \
	X(lost_claims) X(hit_prev_smt) X(claims) X(claims_stolen) X(claims_released)               \
	X(fail_prone_marks) X(idle_enters) X(cookie_refusals) X(forced_idle_ns) X(cookie_fallbacks) \
	X(numa_moves) X(numa_kept) X(numa_cooldown_skips) X(numa_cap_skips) X(hit_widened)          \
	X(hit_cluster) X(cookie_turns)

enum place_stat_id {
#define PLACE_STAT_ENUM(name) PLACE_STAT_##name,
	PLACE_STATS(PLACE_STAT_ENUM)
#undef PLACE_STAT_ENUM
	PLACE_NR_STATS,
	/* Internal, not in place_stats: wakeups that returned an idle CPU
	 * without claiming it (NOCLAIM, or CLAIM off). place_stats.claims is
	 * the idle answers minus these: no count on a claimed wakeup. */
	PLACE_STAT_unclaimed = PLACE_NR_STATS,
	PLACE_NR_SLOT_STATS
};

/* A statistics slot. Per-CPU slots are written only by that CPU's worker
 * (place_count_64: plain relaxed load+store, no locked instruction); per-LLC
 * "external" slots take what non-workers do (wakeups with PLACE_CPU_NONE,
 * claim releases) with relaxed atomic adds. place_stats_read sums relaxed. */
struct place_stat_slot {
	alignas(PLACE_CACHELINE) uint64_t v[PLACE_NR_SLOT_STATS];
	/* COOKIES, per-CPU slots only: when this CPU's current forced-idle
	 * period began (its first refused run_begin since it last started a
	 * task or parked), 0 when none. Its worker only, plain accesses: the
	 * pending part of forced_idle_ns, added at the period's end. */
	uint64_t forced_since;
	/* NUMA, per-CPU slots only: the group that the running task's
	 * run_begin counted in this node's running counts (captured there, so
	 * that place_task_set_group during the run cannot unbalance them), 0
	 * when nothing was counted; run_end and unregister remove exactly that.
	 * Its worker only, plain accesses (as forced_since). */
	uint64_t curr_group;
	/* Per-CPU slots only: runs begun here, for one timed run in
	 * PLACE_RUN_SAMPLE of short tasks (idle.c). Its worker only, plain. */
	uint32_t run_seq;
	/* Per-CPU slots only: the address of the task that last ended a run
	 * here asleep, until it starts on another CPU, exits here or is
	 * forgotten; 0 when none. The spread (select.c, cpu_free) counts this
	 * CPU as taken, as the kernel's fork balancing counts a sleeper's
	 * blocked load (without its decay). The worker stores it (run_end,
	 * run_switch and run_handoff: SLEEP stores the task, an EXIT of that
	 * task 0); any other thread only CASes it from one task's address to
	 * 0 (place__sleeper_drop: that task's start on another CPU, through
	 * run_begin, run_switch or run_handoff, or its place_task_forget), so
	 * no store of the worker is lost. Relaxed: a hint, read relaxed by
	 * cpu_free. Compared, never dereferenced: a record freed, initialised
	 * again or copied while asleep keeps the CPU counted until another
	 * task sleeps there. The slot's last line, apart from the counters. */
	uint64_t sleeper;
};

/*
 * The private task record inside place_task.priv. Touched only by the call
 * that has the task (one wakeup or run edge at a time, per the API), except
 * wakee_flips/last_wakee/flip_decay_ns of a running waker, which only its
 * worker's thread touches. CPUs are OS numbers (stable across topologies).
 *
 * What a record holds on an instance (a queue slot or claim, queued_cpu and
 * claim_gen; a pending NUMA move, numa_pending) means something only there:
 * owner says where (place__task_foreign()).
 */
#define PLACE_TASK_MAGIC UINT32_C(0x706c6163) /* "plac" */
/* owner's low bit: place_task_init() ran while the record held something
 * (instance ids are even) */

struct place_task_rec {
	uint32_t magic;
	int32_t prev_cpu;        /* where it last started running, or -1 */
	int32_t queued_cpu;      /* CPU whose QUEUED counts it, or -1 */
	uint32_t claim_gen;      /* its claim on queued_cpu, 0 = none */
	int32_t recent_used_cpu; /* prev_cpu of the wakeup before, or -1 */
	uint32_t wakee_flips;    /* as a waker: how often it switched wakee */
	/* The id (place.id) of the instance its holdings are on, written with
	 * them (a wakeup's commit; run_begin adopts a record holding nothing);
	 * meaningful only while it holds something. Never dereferenced: an id,
	 * not a pointer, so that a destroyed instance's records never match a
	 * new one's. */
	uint64_t owner;
	uint64_t flip_decay_ns;  /* when wakee_flips was last halved */
	const void *last_wakee;
	uint64_t avg_run_ns;     /* average run between sleeps (timed ones, idle.c) */
	uint64_t run_accum_ns;   /* run since it last slept (preemptions add up) */
	uint64_t cookie;         /* place_task_set_cookie stores, any thread; the
	                          * task's run_begin and wakeups load; relaxed */
	uint32_t group;          /* NUMA group, 0 = none. place_task_set_group stores,
	                          * any thread; t's run_begin and wakeups load; relaxed */
	/* NUMA moves (numa.c), touched only by the call that has the task: */
	uint32_t numa_pending;   /* dense node + 1 whose moving count holds t (moved
	                          * there, not started yet), 0 = none */
	uint64_t numa_moved_ns;  /* when its last NUMA move was decided, 0 = never */
	/* Run-time sampling (idle.c), touched only by its run edges: */
	uint8_t run_weight;      /* this run: its utilization weight (0, 1, PLACE_RUN_SAMPLE)
	                          * and PLACE_RUN_TIMED when run_begin read the clock */
	uint8_t run_interval;    /* since it last slept: PLACE_IVL_* */
};
_Static_assert(sizeof(struct place_task_rec) <= sizeof(((place_task *)0)->priv),
	       "the task record fits in place_task.priv");

/* Run-time sampling (idle.c): one run in PLACE_RUN_SAMPLE of a short task
 * is timed; the run interval since its last sleep is timed whole or not. */
#define PLACE_RUN_SAMPLE 8
#define PLACE_RUN_TIMED 0x80
enum { PLACE_IVL_NONE, PLACE_IVL_TIMED, PLACE_IVL_UNTIMED };

/* Does r hold something on the instance r->owner names? */
static inline bool place__rec_holds(const struct place_task_rec *r)
{
	return r->queued_cpu >= 0 || r->numa_pending;
}

static inline struct place_task_rec *place__rec(place_task *t)
{
	return (struct place_task_rec *)(void *)t->priv;
}

struct place {
	/* The universe: the topology the instance was created over (its copy).
	 * Every dense index inside is into it, and it never changes: a
	 * reconfiguration only marks CPUs OFFLINE (place_set_topology). */
	struct place_topo *topo;
	/* The current topology, a restriction of topo (topo itself until the
	 * first place_set_topology). Written by place_set_topology under ctl
	 * with place__rcu_assign (release), read by place_topo_current inside
	 * a read-side critical section with place__rcu_deref; the one it
	 * replaces is freed after a grace period. */
	struct place_topo *cur;
	/* The control plane: serialises place_set_topology with worker
	 * register/unregister (they change REGISTERED, OFFLINE and
	 * nr_registered together). Never taken on the hot paths. */
	pthread_mutex_t ctl;
	/* CPUs with a registered worker (REGISTERED), whatever the topology:
	 * written under ctl by register/unregister (relaxed store), read
	 * relaxed by a new placement's wakeup (the startup window: none yet,
	 * -ESRCH at once). Read-mostly: its line changes only on registration. */
	uint64_t nr_workers;
	/* ThreadSanitizer builds only (rcu.h): the address read sections
	 * release on and grace periods acquire, standing for liburcu's
	 * handshake that TSan cannot see. Never read nor written; its own
	 * address so that it merges with no mutex or atomic's history. */
	char rcu_sync;
	/* topo's arrays the hot path indexes, one pointer chase closer */
	int cpu_limit;
	const int *dense_of;
	const int *llc_cpus;
	int policy;              /* enum place_policy */
	unsigned feat;           /* PLACE_FEAT_* */
	/* This instance's id for task records (place_task_rec.owner): even,
	 * not 0, random. Read-only after create. */
	uint64_t id;
	/* The idle-CPU scan is bounded by nr_idle_scan (SIS_UTIL on, and a
	 * policy that has the bound: not EXACT); select_idle_sibling() and the
	 * overloaded short path read it. Read-only after create: one test
	 * instead of two on the hot path. */
	bool scan_bounded;
	/* COOKIES: 1 once more than one cookie was seen queued on one core (a
	 * core's pend hint changed from one cookie to another, or a refusal):
	 * from then on a wakeup that finds nothing idle balances the cookie's
	 * cores (stack_cpu) instead of stacking on its target. Sticky: set
	 * once by any thread (relaxed load, then store), read relaxed by
	 * wakeups; a stale 0 costs one wakeup stacked the old way. */
	uint32_t cookie_mixed;
	/* COOKIES on and some core has a sibling: else place__cookie_on() is
	 * false for every CPU, in one load (the run edges test it). Read-only
	 * after create. */
	bool cookie_cores;
	/* COOKIES: 1 once a cookie other than 0 reached a core of this
	 * instance (a pend hint, an enter or a switch: place__cookie_seen).
	 * Until then every core holds cookie 0, which admits a task of cookie
	 * 0 everywhere, so its wakeups skip the cookie hints altogether
	 * (place__cookies_matter). Sticky: set once by any thread (relaxed
	 * load, then relaxed store, before the pend store or the occupancy
	 * CAS), read relaxed by wakeups; a stale 0 is a wrong hint for the
	 * first wakeups after the first cookie, which run_begin decides
	 * exactly, as any hint. */
	uint32_t cookie_seen;
	place_clock_fn clock;
	void *clock_arg;
	uint64_t short_task_ns;
	uint64_t widen_short_ns;      /* WIDEN leaves a target be whose task's average run is
	                               * below this: short_task_ns with thieves, else 0 (widen.h) */
	int widen_budget;             /* mask bits WIDEN's idle-CPU pass visits: PLACE_WIDEN_BUDGET
	                               * with thieves, else all (INT_MAX; widen.c) */
	uint64_t util_period_ns;
	uint64_t timed_run_ns;        /* every run of a task whose average is this long is
	                               * timed (idle.c); read-only after create */
	struct place_cpu *cpu;        /* [nr_cpus] */
	struct place_cpu_map *map;    /* [nr_cpus] */
	struct place_seat *seat;      /* [nr_cpus] registrations, under ctl */
	int *sib_next;                /* [nr_cpus] the next SMT sibling, a ring over the core
	                               * (itself when alone), for the wakeup's sibling walk;
	                               * read-only after create */
	struct place_core *core;      /* [nr_cores] COOKIES occupancy */
	struct place_llc *llc;        /* [nr_llcs] */
	struct place_stat_slot *slot; /* [nr_cpus] */
	struct place_stat_slot *ext;  /* [nr_llcs] */
	uint64_t *util_seen;          /* [nr_cpus] SIS_UTIL: busy_until() at its LLC's last
	                               * recompute, which alone writes it (see place_llc) */
	uint64_t *words;              /* backing store of every LLC mask */
	/* NUMA groups (numa.h). Read-only after create except the counters. */
	bool numa_count;              /* NUMA on and more than one node: keep counts */
	uint32_t max_groups;          /* groups are 1..max_groups */
	uint32_t numa_move_cap;       /* moves towards one node not yet started */
	uint64_t numa_cooldown_ns;    /* no cross-node move this soon after a NUMA move */
	size_t numa_stride;           /* words per node in numa_running (whole lines) */
	uint64_t *numa_running;       /* [nr_nodes][numa_stride], see numa.h */
	struct place_numa_node *numa_node; /* [nr_nodes] */
	int *numa_node_start;         /* [nr_nodes + 1] CSR: the dense CPUs of each node */
	int *numa_node_cpus;          /* [nr_cpus] */
	/* WIDEN and CLUSTER (widen.h). Read-only after create but llc_idle. */
	bool widen;                   /* WIDEN on, a policy with idle masks (not LINEAR), LLCs > 1 */
	bool cluster;                 /* CLUSTER on and some CPU has a cluster span */
	bool hub_queue;               /* HUB_QUEUE on and the runtime has thieves (select.c) */
	bool busy_stays;              /* BUSY_STAYS on and the runtime has thieves (select.c) */
	struct place_span *clu;       /* [nr_cpus] each CPU's cluster in its LLC */
	int llc_words;                /* words of a mask of LLCs */
	int nr_rings;                 /* rings per node: 1 + most distinct distances to others */
	int *node_ring;               /* [nr_nodes][nr_nodes] the ring of node b seen from a:
	                               * 0 a itself, k its k-th distance (ties share one) */
	uint64_t *node_rings;         /* [nr_nodes][nr_rings][llc_words] node a's ring k: the
	                               * LLCs (by their first CPU's node) of the nodes at
	                               * a's k-th distance, ring 0 its own (widen.c) */
	/* The LLC summary, bit l = LLC l's mask may be non-empty. Set (RMW) by
	 * whoever sets a mask bit that was clear, cleared (RMW) by a search
	 * that saw the mask empty; read relaxed. Protocol in widen.h. */
	uint64_t *llc_idle;
	/* WIDEN's idle-core summary, bit l = LLC l may have a whole idle core
	 * (SIS_CORE: its has_idle_cores may be 1; EXACT: its icores may be
	 * non-empty). Set (RMW) after has_idle_cores goes 0 -> 1 (a CAS) or
	 * an icores bit is set (RMW); cleared (RMW) after a scan stores
	 * has_idle_cores 0, or by a search that found icores empty, which then
	 * read the flag or mask again and set the bit back if they say so
	 * (widen.h): a Dekker pair as llc_idle's, so an idle core never hides
	 * behind a clear bit. Starts full. Read relaxed by the whole-core pass
	 * when cores_summary. */
	uint64_t *llc_cores;
	/* The whole-core pass visits only llc_cores' LLCs: SIS_CORE or EXACT,
	 * and no more LLCs than PLACE_WIDEN_LLCS (so the pass's cap on LLCs
	 * visited never binds). Read-only after create. */
	bool cores_summary;
};

/* The hot paths keep their state in registers only when every helper that
 * takes its address is inlined (select.c's ON_COPY): say which ones. */
#define PLACE_INLINE static inline __attribute__((always_inline))
#define PLACE_NOINLINE static __attribute__((noinline))

static inline bool place__feat(const struct place *p, unsigned f)
{
	return (p->feat & f) != 0;
}

static inline uint64_t place__now(const struct place *p)
{
	return p->clock(p->clock_arg);
}

/* OS number -> dense index, or -1 when cpu is not usable. */
static inline int place__dense(const struct place *p, int os)
{
	if ((unsigned)os >= (unsigned)p->cpu_limit) /* os < 0 too */
		return -1;
	return p->dense_of[os];
}

/* Dense index of the CPU at pos of LLC l. */
static inline int place__llc_cpu(const struct place *p, int l, int pos)
{
	return p->llc_cpus[p->llc[l].first + pos];
}

/* Dense index of the i-th SMT sibling (0 .. m->smt - 1) of the CPU mapped by m. */
static inline int place__sibling(const struct place *p, const struct place_cpu_map *m, int i)
{
	return p->llc_cpus[m->core_at + i];
}

/* May t run on dense cpu (its cpu_set_t)? Registration is checked apart. */
static inline bool place__allowed(const struct place *p, const place_task *t, int cpu)
{
	return !t->cpus || CPU_ISSET_S((size_t)p->map[cpu].os, t->cpus_size, t->cpus);
}

/* The statistics a wakeup counts in: the slot of dense CPU cpu when the
 * calling thread is that CPU's worker (single writer: place_count_64), else
 * (cpu -1) LLC llc's external slot (atomic adds). */
static inline uint64_t *place__stat_slot(struct place *p, int cpu, int llc)
{
	return cpu >= 0 ? p->slot[cpu].v : p->ext[llc].v;
}

/* Count v in statistic id, in place__stat_slot(p, cpu, llc). */
static inline void place__count(struct place *p, int cpu, int llc, enum place_stat_id id, uint64_t v)
{
	if (cpu >= 0)
		place_count_64(&p->slot[cpu].v[id], v);
	else
		place_add_64(&p->ext[llc].v[id], v);
}

/* Argument checks shared by the public calls (inline: the hot path's). */

/* Dense index of a CPU with a registered worker, or -EINVAL (p NULL),
 * -ENODEV (not a usable CPU), -ENOENT (no worker registered); *c gets its
 * line, for a caller that goes on with it (every atomic is a compiler
 * barrier: p->cpu would be loaded again). */
static inline int place__worker_line(const struct place *p, int os, struct place_cpu **c)
{
	int d;

	if (!p)
		return -EINVAL;
	d = place__dense(p, os);
	if (d < 0)
		return -ENODEV;
	*c = &p->cpu[d];
	if (!(place_load_64(&(*c)->state) & PLACE_ST_REGISTERED))
		return -ENOENT;
	return d;
}

static inline int place__worker_cpu(const struct place *p, int os)
{
	struct place_cpu *c;

	return place__worker_line(p, os, &c);
}

/* t's record, or NULL when t is NULL or was never initialised. */
static inline struct place_task_rec *place__task_rec(const place_task *t)
{
	struct place_task_rec *r = t ? place__rec((place_task *)t) : NULL;

	return r && r->magic == PLACE_TASK_MAGIC ? r : NULL;
}

/* The dense CPU whose worker runs t now (between its place_run_begin and
 * place_run_end), else -1. run_begin stores prev_cpu, then curr last with
 * release; run_end stores curr NULL last with release: a caller that sees
 * t there (acquire) has t's run begun, one that no longer does has its
 * run_end complete, record included. The line is the one a wakeup probes
 * for prev anyway. */
static inline int place__task_running(const struct place *p, const place_task *t)
{
	int d = place__dense(p, place__rec((place_task *)t)->prev_cpu);

	return d >= 0 && place_load_ptr_acq((void *const *)&p->cpu[d].curr) == t ? d : -1;
}

/* place.c: a record used with p whose owner is not p's id */
int place__task_check(const struct place *p, const struct place_task_rec *r);

/* idle.c */
void place__idle_publish(struct place *p, int cpu);
void place__idle_withdraw(struct place *p, int cpu);
void place__exact_unpublish(struct place *p, int cpu);
bool place__core_available(const struct place *p, int cpu);
/* t's spread mark (slot.sleeper) on OS cpu os goes, if t still has it. */
void place__sleeper_drop(struct place *p, const place_task *t, int os);
uint32_t place__util_recompute(struct place *p, int l, uint64_t now, uint64_t stamp);
void place__util_refresh(struct place *p, int l);
uint32_t place__scan_bound(uint64_t weight, uint64_t util);
void place__after_delivery(struct place *p, int cpu, uint64_t before, uint64_t after);

/* SIS_UTIL: is LLC l's scan bound due for a recompute at now (its period
 * has passed since util_stamp, which *stamp gets)? */
static inline bool place__util_due(const struct place *p, int l, uint64_t now, uint64_t *stamp)
{
	*stamp = place_load_64(&p->llc[l].util_stamp);
	return now >= *stamp + p->util_period_ns && now > *stamp && place__feat(p, PLACE_FEAT_SIS_UTIL);
}

/*
 * A wakeup in LLC l is about to stack (or widen) because its scan bound is
 * 0: should it check first that the 0 is not older than its period (a
 * quiet LLC, where no run_end recomputes it)? Only where an idle CPU makes
 * it worth a look (RECHECK), and there on one such wakeup in
 * PLACE_RECHECK_EVERY, counted by the statistics one of them is about to
 * bump in slot v (the waker's, or l's external one): stacked and widened
 * wakeups. The clock read so costs the busy LLCs little, and a stale bound
 * outlives its period by at most that many such wakeups per slot.
 */
#define PLACE_RECHECK_EVERY 8
static inline bool place__recheck_turn(const uint64_t *v)
{
	uint64_t n = place_load_64(&v[PLACE_STAT_hit_fallback]) + place_load_64(&v[PLACE_STAT_hit_widened]);

	return !(n & (PLACE_RECHECK_EVERY - 1));
}

static inline bool place__util_recheck(const struct place *p, int l, const uint64_t *v)
{
	return (place_load_32(&p->llc[l].nr_idle_scan) & PLACE_SCAN_RECHECK) && place__recheck_turn(v);
}

/* The check: LLC l's bound, recomputed first when its period has passed. */
static inline uint32_t place__util_fresh(struct place *p, int l)
{
	uint64_t now = place__now(p), stamp;

	return place__util_due(p, l, now, &stamp) ? place__util_recompute(p, l, now, stamp) : 0;
}

#endif /* PLACE_INTERNAL_H */
