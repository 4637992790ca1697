/*
 * libplace: select_idle_sibling() for user space.
 *
 * A thread pool or task runtime links libplace to decide which CPU (so which
 * pinned worker) runs a task that just woke up. This is the whole public API.
 *
 * Conventions
 * - Every public name starts with place_ (macros PLACE_).
 * - Functions return >= 0 on success or a negative errno; they never set errno.
 *   place_strerror() names a code; place_last_error() gives a human-readable
 *   detail of the last failure on the calling thread (which file, what hwloc said).
 * - CPUs are OS CPU numbers, what sched_setaffinity() takes.
 * - A call that fails changes nothing: the instance stays usable.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_H
#define PLACE_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(PLACE_BUILDING)
#define PLACE_EXTERN __attribute__((visibility("default")))
#else
#define PLACE_EXTERN
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */

#define PLACE_VERSION_MAJOR 0
#define PLACE_VERSION_MINOR 1
#define PLACE_VERSION_PATCH 0
#define PLACE_VERSION_HEX                                                   \
	((PLACE_VERSION_MAJOR << 16) | (PLACE_VERSION_MINOR << 8) | PLACE_VERSION_PATCH)

/* The version of the library actually linked, as PLACE_VERSION_HEX. Any thread. */
PLACE_EXTERN unsigned place_version(void);
/* The same as "MAJOR.MINOR.PATCH". Any thread; static storage. */
PLACE_EXTERN const char *place_version_string(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

#define PLACE_CPU_NONE (-1)
/* The largest OS CPU number libplace accepts (place_topo_load): 8 times
 * Linux's largest NR_CPUS (8192, x86 MAXSMP and powerpc), so a kernel that
 * raises it still loads, while the arrays indexed by OS number stay small
 * (256 KiB). */
#define PLACE_CPU_OS_MAX 65535

/* A short message for a negative errno returned by libplace (or any errno).
 * Any thread; static storage. */
PLACE_EXTERN const char *place_strerror(int err);

/* Detail of the last failure of a libplace call on the calling thread, e.g.
 * "xml:/tmp/x.xml: cannot import XML version 3.0 > 2". Empty string when the
 * last call on this thread succeeded or set no detail. Thread-local storage,
 * valid until the next libplace call on this thread.
 * The hot-path calls (place_wakeup, place_idle_enter, place_run_begin,
 * place_run_end) record a detail only when they fail, and cost nothing more
 * when they succeed: they leave the last detail as it was then. Their
 * details name the cause, e.g. "place_run_begin: the worker of cpu 3 still
 * runs a task (place_run_end is missing)" against "an SMT sibling of cpu 3
 * runs a task of another cookie", or "place_run_end: cpu 3 runs no task
 * (place_run_end twice, or no place_run_begin)"; read it right after the
 * failing call. */
PLACE_EXTERN const char *place_last_error(void);

/* ------------------------------------------------------------------------ */
/* Topology                                                                  */

/* A flattened, immutable snapshot of the machine: usable CPUs, their SMT
 * cores, last-level caches, NUMA nodes and packages. Built once from hwloc;
 * nothing that reads it touches hwloc again. Safe to read from any thread. */
typedef struct place_topo place_topo;

/* Load a topology.
 * source:
 *   NULL, "" or "live"   this machine, restricted to the cgroup-allowed cpuset
 *                        AND the calling thread's affinity mask: a thread
 *                        pinned to one CPU (a worker registered with
 *                        PLACE_WORKER_BIND, or a thread created by one while
 *                        pinned, which inherits its mask) sees one CPU. When
 *                        the environment variable PLACE_TOPOLOGY is set, its
 *                        value (any of the other forms) is loaded instead.
 *   "process"            this machine, restricted to the cgroup-allowed
 *                        cpuset AND the union of the affinity masks of the
 *                        process's threads (/proc/self/task; the caller's
 *                        alone without /proc): the CPUs the process may use,
 *                        whichever thread asks, even once its workers are
 *                        pinned. What a runtime sizing its pool wants.
 *                        PLACE_TOPOLOGY replaces it as it replaces "live".
 *   "machine"            this machine's online CPUs, without the cgroup and
 *                        affinity restrictions: create an instance over it and
 *                        place_set_topology() it down to "live", so that the
 *                        cpuset can grow back later. PLACE_TOPOLOGY does not
 *                        replace it.
 *   "xml:PATH"           an hwloc XML export (hwloc 2 format).
 *   "synthetic:STRING"   an hwloc synthetic description, for example
 *                        "pack:2 [numa] l3:8 core:8 pu:2(indexes=core)".
 * Returns 0 and *out, or (with *out set to NULL when out is not NULL):
 *   -EINVAL  out is NULL, unknown source prefix, empty path or string,
 *            malformed synthetic string, unparsable XML (hwloc refuses it),
 *            an XML v3.0 export (hwloc 3; hwloc 2 reads v1 and v2 only),
 *            a directory given as PATH, two PUs with one OS number, a
 *            usable PU whose OS number is above PLACE_CPU_OS_MAX (65535:
 *            arrays are indexed by OS number, and an export claiming CPU
 *            1000000000 would cost gigabytes; refused before any is made)
 *   -ENOENT  the XML file does not exist; -EACCES it cannot be read
 *   -ENODEV  no usable CPU remains after the restrictions (for XML: the
 *            export's allowed_cpuset holds no PU)
 *   -ENOMEM  out of memory.
 * place_last_error() then says which source and what hwloc said, e.g.
 * "xml:/x.xml: cannot import XML version 3.0 > 2 (...)". hwloc 2 itself
 * explains XML and synthetic failures only on stderr and only under
 * HWLOC_XML_VERBOSE=1 / HWLOC_SYNTHETIC_VERBOSE=1, so libplace checks the file
 * and the XML version itself and names those variables otherwise.
 * XML and synthetic sources use hwloc's default load flags: the usable CPUs
 * are the export's allowed PUs (offline and disallowed PUs are left out).
 * Any thread. */
PLACE_EXTERN int place_topo_load(place_topo **out, const char *source);

/* Free a topology. NULL is accepted. An instance created from it keeps its own
 * copy, so the topology may be freed right after place_create(). */
PLACE_EXTERN void place_topo_free(place_topo *topo);

/* The source string the topology was loaded from (after PLACE_TOPOLOGY):
 * "live", "process", "machine", "xml:PATH" or "synthetic:STRING". NULL when
 * topo is NULL. */
PLACE_EXTERN const char *place_topo_source(const place_topo *topo);

/* Counts of usable CPUs, of cores, LLC domains, NUMA nodes (with usable CPUs)
 * and packages. -EINVAL when topo is NULL. nr_packages is 0 when the machine
 * reports no Package objects. */
PLACE_EXTERN int place_topo_nr_cpus(const place_topo *topo);
PLACE_EXTERN int place_topo_nr_cores(const place_topo *topo);
PLACE_EXTERN int place_topo_nr_llcs(const place_topo *topo);
PLACE_EXTERN int place_topo_nr_nodes(const place_topo *topo);
PLACE_EXTERN int place_topo_nr_packages(const place_topo *topo);

/* The largest usable OS CPU number plus one: size CPU bitmaps by this, never
 * by the CPU count (numbering may be sparse). */
PLACE_EXTERN int place_topo_cpu_limit(const place_topo *topo);

/* The i-th usable OS CPU number, ascending, 0 <= i < place_topo_nr_cpus().
 * -EINVAL on a NULL topo; -ERANGE when i is out of range. */
PLACE_EXTERN int place_topo_cpu(const place_topo *topo, int i);

/* How a CPU's LLC domain was found. The LLC is found per CPU (hybrid parts
 * have CPUs whose LLC is an L3 next to CPUs whose LLC is a cluster's L2);
 * instruction caches and memory-side caches never count. A domain always
 * holds whole cores: when the topmost cache sits below the core (per-CPU L1,
 * nothing above), the core's caches together form the domain (llc_kind stays
 * CACHE; hw_llc names the CPU's own cache). */
enum place_llc_kind {
	PLACE_LLC_CACHE = 0,   /* the topmost data or unified CPU cache above it */
	PLACE_LLC_PACKAGE = 1, /* no cache reported: its package */
	PLACE_LLC_NODE = 2,    /* no cache, no package: its NUMA node */
	PLACE_LLC_MACHINE = 3  /* none of those: the whole machine */
};

/* Where one CPU sits. Ids named core/llc/node/package are libplace's own
 * dense ids (0 .. count-1, stable for a given topology, ordered by the first
 * CPU of each object in hwloc's logical order). The hw_ fields are hwloc's
 * identifiers, for comparison with hwloc's tools: logical indexes of the Core,
 * of the LLC cache within its level and of the Package, and the NUMA node's OS
 * index; -1 where the object does not exist. */
typedef struct place_cpu_info {
	int cpu;        /* OS CPU number */
	int core;       /* a CPU without a Core object is its own core */
	int llc;
	int node;       /* the nearest NUMA node whose cpuset holds the CPU (NUMA
	                 * nodes are memory children in hwloc 2: found through the
	                 * ancestors' memory children, CPU-less nodes never; the
	                 * lowest logical index when several are equally near). A
	                 * CPU without any node shares one stand-in node. */
	int package;    /* -1 when the machine reports no Package */
	int llc_level;  /* cache level 1..5; -1 when llc_kind is not CACHE */
	int llc_kind;   /* enum place_llc_kind */
	int smt;        /* number of usable CPUs in its core, itself included */
	int hw_core;
	int hw_llc;
	int hw_node_os;
	int hw_package;
} place_cpu_info;

/* Fill *out for the OS CPU cpu. -EINVAL on NULL arguments; -ENODEV when cpu is
 * not a usable CPU of this topology. */
PLACE_EXTERN int place_topo_cpu_info(const place_topo *topo, int cpu, place_cpu_info *out);

/* The usable CPUs of cpu's core (its SMT siblings, cpu itself included),
 * ascending OS numbers. Writes at most max of them into out and returns the
 * total count (which may exceed max). -EINVAL on NULL topo or out with
 * max > 0, -ENODEV when cpu is not usable. */
PLACE_EXTERN int place_topo_siblings(const place_topo *topo, int cpu, int *out, int max);

/* The usable CPUs sharing cpu's LLC domain, same conventions. */
PLACE_EXTERN int place_topo_llc_cpus(const place_topo *topo, int cpu, int *out, int max);

/* How far NUMA node b is from node a (dense node ids, as place_cpu_info's
 * node): hwloc's NUMA latency (NUMALatency: the OS's SLIT on Linux, or an
 * XML export's matrix), 10 from a node to itself, larger for farther nodes.
 * The searches beyond a node (PLACE_FEAT_WIDEN, place_idle_near,
 * place_steal_order) visit the other nodes nearest first by it (by the mean
 * of both directions where a table is not symmetric). 0 when the
 * topology has no latency matrix (synthetic ones, one node) or no value for
 * the pair: every other node then counts as equally far. -EINVAL on a NULL
 * topo, -ERANGE when a or b is not a node id. */
PLACE_EXTERN int place_topo_node_distance(const place_topo *topo, int a, int b);

/* ------------------------------------------------------------------------ */
/* Instance and configuration                                                */

/* An instance: per-CPU state, per-LLC idle bitmaps and statistics for one
 * pool of workers over one topology. Opaque. Nothing is global: several
 * instances may coexist in one process. */
typedef struct place place;

/* Placement policies. */
enum place_policy {
	PLACE_POLICY_SIS_CORE = 0, /* per-LLC idle mask at core granularity, repaired by scans (default) */
	PLACE_POLICY_LINEAR = 1,   /* scan the LLC's CPUs reading each CPU's state: the kernel before SIS_CORE */
	PLACE_POLICY_EXACT = 2     /* exact idle-CPU and idle-core masks set on idle, cleared on busy (sched_ext) */
};

/* Feature bits (place_config.features), like the kernel's SCHED_FEAT. */
#define PLACE_FEAT_CLAIM        (1u << 0) /* claim the returned idle CPU with one CAS */
#define PLACE_FEAT_SCAN_SIBLING (1u << 1) /* fail-prone scans also probe SMT siblings */
#define PLACE_FEAT_SHORT_AFFINE (1u << 2) /* wake onto a waker running one short task */
#define PLACE_FEAT_WAKE_WIDE    (1u << 3) /* no wake-affine for 1:N wakers (wakee flips) */
#define PLACE_FEAT_SIS_UTIL     (1u << 4) /* bound the idle-CPU scan by LLC utilization */
/* (SIS_UTIL's utilization is the share of the LLC's registered workers'
 * time spent running tasks, from place_run_begin to place_run_end, as the
 * kernel counts running time; decayed, sampled at most once per
 * util_period_ns. The scan stops from about 85% busy. Runs of short tasks
 * are sampled: one in 8 reads the clock and stands for 8; a task with no
 * estimate yet, or a long one, is timed on every run. A bound of 0 is
 * looked at again by a wakeup about to stack where an idle CPU is, once
 * its period has passed: a quiet LLC does not keep it.) */
/* Core scheduling (SMT isolation): tasks of different cookies never run at
 * once on SMT siblings of one core (see place_run_begin). On by default, so
 * that isolation is never silently off. Costs, on cores with more than one
 * CPU: a 128-bit compare-and-swap on the core's line in each run_begin and
 * run_end, one or two loads per idle candidate in place_wakeup; and
 * throughput, since refused run_begins leave CPUs forced idle: how much
 * depends on how the cookies' tasks mix on the cores (BENCHMARKS.md, "Core
 * scheduling: mixed tenants"). Turn it off when all tasks trust each other. */
#define PLACE_FEAT_COOKIES      (1u << 5)
/* COOKIES: how long a cookie may keep a core while another waits for it
 * (see place_run_begin). */
#define PLACE_COOKIE_TURN_NS    1000000u
/* NUMA groups (after Srikar Dronamraju's "Improve numa scheduling by
 * consolidating tasks", RFC, 2013): a cross-node wakeup of a task with a group
 * (place_task_init, place_task_set_group) prefers the node where its group
 * runs most, unless that node is busier; a cool-down and a cap on
 * concurrent moves towards one node stop ping-pong and herds (see
 * place_wakeup). On by default: tasks without a group, and machines with
 * one node, pay one branch. A grouped task pays one atomic add on a line of
 * its CPU's node in each run_begin and run_end (shared only by that node's
 * CPUs), and its cross-node wakeups read the clock and a load sample of
 * each node (tasks and usable CPUs, rescanned from the node's per-CPU lines
 * once per util_period_ns or per node CPUs / 8 + 1 decisions, whichever
 * comes first); a NUMA move adds one compare-and-swap. */
#define PLACE_FEAT_NUMA         (1u << 6)
/* Beyond the LLC (sched_ext's order): when the target's LLC has nothing
 * idle for t, a whole idle core in the target's node, then on the other
 * nodes, the nearest first (hwloc's NUMA latencies where the topology has
 * them, as the kernel's NUMA levels; else every other node is as far, in
 * LLC order from the target's); then an idle CPU in the node, then on the
 * others likewise; claimed like any idle answer,
 * counted in hit_widened. For runtimes without an idle balancer (the
 * kernel has one to rescue a stacked task): on by default; turn it off
 * when the runtime's thieves already pull work across LLCs. Bounded: it
 * visits only LLCs whose idle mask may be non-empty (a per-instance
 * summary, one bit per LLC, kept on the idle edges only when a mask bit
 * changes from clear to set) and, where the runtime has thieves
 * (PLACE_RUNTIME_THIEVES), at most 8 mask bits (one core each) per pass:
 * on a saturated machine one extra load. Without thieves the idle-CPU
 * pass visits every bit its summary points to, since a t stacked while a
 * CPU is idle would wait out a whole run: a stale bit costs one core's
 * probes once and is cleared, so the cost stays bounded by the idle
 * entries that set the bits (whole cores: 8 bits always). Honours t->cpus and
 * cookies; a task with a NUMA group (and PLACE_FEAT_NUMA, more than one
 * node) is widened within the target's node only, never off it: the
 * group's node is where it should run. With PLACE_RUNTIME_THIEVES it
 * leaves a target whose running task is short (average run below
 * short_task_ns) be: that task ends soon, and a thief takes t if it does
 * not. Without thieves t would wait out the whole run, so it widens then
 * too. No effect with PLACE_POLICY_LINEAR (the kernel without idle masks)
 * or a single LLC. */
#define PLACE_FEAT_WIDEN        (1u << 7)
/* Cluster first (the kernel's SD_CLUSTER scan, v6.7): where a cache below
 * the LLC (an L2) or an hwloc Group ("Cluster", ARM) is shared by several
 * but not all cores of the LLC, the idle-core and idle-CPU scans try the
 * target's cluster before the rest of the LLC (from just after the target,
 * wrapping within the cluster, then from the cluster's end). Scan hits
 * inside the cluster are counted in hit_cluster. No effect where the
 * topology has no cluster (most x86). */
#define PLACE_FEAT_CLUSTER      (1u << 8)
/* Pull only for a gain: wake_affine's short-task rule (the waker runs one
 * short task) moves t off its previous CPU's LLC onto the busy waker only
 * when the waker's LLC has an idle CPU in its mask (for the LLC scan to
 * take) or t's previous CPU has work queued (the waker is then the
 * shorter wait). Otherwise t would queue behind one task on either side
 * and lose its cache as well: it stays in prev's LLC (WIDEN looks further
 * when that is full too). SYNC and the load rule pull as before. On by
 * default; costs one load of the waker LLC's mask where such a pull would
 * happen. No effect with PLACE_POLICY_LINEAR (no mask) or a single LLC. */
#define PLACE_FEAT_PULL_IDLE    (1u << 9)
/* A hub stays: a SYNC wakeup does not pull t from an idle prev into the
 * waker's LLC when t itself wakes many others (it switched wakee at least
 * as often as the waker's LLC has CPUs, wake_wide's factor, in the last
 * second or so): its partners do not fit in one LLC, so the pull only
 * costs it a cache refill, and the next round's partner pulls it back (a
 * message or dispatcher thread woken by each worker's reply in turn). A
 * pair that wakes only each other is pulled together as the kernel does.
 * Costs nothing but on a SYNC wakeup whose waker runs one task. */
#define PLACE_FEAT_HUB_STAYS    (1u << 10)
/* Queue on a hub (only with PLACE_RUNTIME_THIEVES in place_config.runtime):
 * when t's prev is busy and the waker is a hub of t's in prev's LLC (the
 * waker switched wakee at least as often as the LLC has CPUs, wake_wide's
 * factor, while t wakes at most one task: a dispatcher and its workers),
 * and the waker runs a short task, t goes to the waker: an idle CPU of the
 * LLC as usual, else queued behind the waker rather than behind prev's
 * running task. The waker's short run ends soon and the runtime's thieves
 * take the rest of its queue in order, as a central queue, where a task
 * queued behind prev waits for prev's task or the nearest thief: a
 * shorter wakeup-latency tail when the LLC is oversubscribed
 * (BENCHMARKS.md, "the regimes sweep"). Without thieves the queue would
 * drain one task at a time on the waker's CPU, so the rule does nothing
 * then. On by default; costs nothing but where the load rule would
 * decide. No effect across LLCs. */
#define PLACE_FEAT_HUB_QUEUE    (1u << 11)
/* A busy waker on another node keeps its wakee off: a wakeup without SYNC
 * whose previous CPU is busy is not moved to a busy waker on another NUMA
 * node (by the short-task rule or the load rule) while the waker's LLC has
 * no idle CPU in its mask. Without wakeup preemption the waker, which SYNC
 * does not say is about to sleep, runs on: t would wait for it about as
 * long as for prev's queue, and refill its cache from the other node. It
 * stays on prev's node (an idle CPU of prev's LLC, WIDEN, else prev), where
 * the node's thieves take it: only with PLACE_RUNTIME_THIEVES, since
 * without them it waits out prev's running task, a loss of throughput
 * (BENCHMARKS.md, "the regimes sweep", has the gain with thieves;
 * CHANGELOG.md's BUSY_STAYS entry the loss without). On by default;
 * costs one load of the waker LLC's mask where such a pull would happen.
 * No effect with PLACE_POLICY_LINEAR (no mask) or one node. */
#define PLACE_FEAT_BUSY_STAYS   (1u << 12)
#define PLACE_FEAT_ALL          (0x1fffu)
#define PLACE_FEAT_DEFAULT      PLACE_FEAT_ALL

/* Time in nanoseconds from an arbitrary origin, non-decreasing. */
typedef uint64_t (*place_clock_fn)(void *arg);

typedef struct place_config {
	size_t size;              /* sizeof(place_config): set by place_config_init */
	int policy;               /* enum place_policy */
	unsigned features;        /* PLACE_FEAT_* */
	place_clock_fn clock;     /* NULL = CLOCK_MONOTONIC */
	void *clock_arg;
	uint64_t short_task_ns;   /* a task whose average run is below this is short */
	uint64_t util_period_ns;  /* SIS_UTIL: recompute the scan bound at most this often */
	uint32_t max_groups;      /* NUMA: groups are 1..max_groups (0 = the default) */
	uint32_t numa_move_cap;   /* NUMA: at most this many tasks moved towards one node
	                           * and not started yet (0 = the default) */
	uint64_t numa_cooldown_ns;/* NUMA: no cross-node move of a task this soon after
	                           * its last NUMA move (0 = no cool-down) */
	uint64_t runtime;         /* PLACE_RUNTIME_*: what the runtime does (0: nothing assumed) */
	uint64_t reserved[5];     /* must be zero */
} place_config;

/* place_config.runtime: facts about the runtime that some rules need. */
/* Its idle workers steal tasks queued on busy CPUs (Tokio, Go, Rayon,
 * oneTBB): a task queued on a CPU starts when the first worker of the LLC
 * goes idle, not only when that CPU's running task ends. Set it only then:
 * PLACE_FEAT_HUB_QUEUE, PLACE_FEAT_BUSY_STAYS and WIDEN's short-target
 * rule and search budget rely on it. */
#define PLACE_RUNTIME_THIEVES   (1u << 0)
#define PLACE_RUNTIME_ALL       (0x1u)

/* Set *cfg (size included) to the defaults: SIS_CORE, all features, runtime
 * 0, CLOCK_MONOTONIC, short_task_ns 500000 (the kernel's migration cost),
 * util_period_ns 4000000, max_groups 64, numa_move_cap 4, numa_cooldown_ns
 * 10000000. The NUMA arrays take nodes * max_groups * 8 bytes (only with
 * PLACE_FEAT_NUMA and more than one node). NULL is accepted (nothing
 * happens). Any thread. */
PLACE_EXTERN void place_config_init(place_config *cfg);

/* Create an instance over a copy of topo. cfg NULL means defaults. No CPU has
 * a worker yet: see place_worker_register().
 * -EINVAL on NULL out/topo, wrong cfg->size, unknown policy, feature or runtime bits,
 * max_groups above 65536, non-zero reserved fields; -ENOMEM. Any thread. */
PLACE_EXTERN int place_create(place **out, const place_topo *topo, const place_config *cfg);

/* Destroy an instance. NULL accepted. No other call on p may be in flight.
 * Task records that still hold something of p (see place_task_init) are
 * refused by other instances until initialised again (place_task_init
 * forgets what they held). */
PLACE_EXTERN void place_destroy(place *p);

/* The instance's own copy of the topology it was created over (its
 * "universe"), valid until place_destroy(). It never changes: after
 * place_set_topology() it still describes the whole machine the instance
 * knows, and the dense ids of place_stats_read() are its LLC ids; the
 * current topology is place_topo_current()'s. NULL when p is NULL. */
PLACE_EXTERN const place_topo *place_get_topo(const place *p);

/* ------------------------------------------------------------------------ */
/* Reconfiguration: CPU hotplug, cpusets                                     */

/* Swap the instance to topology t while other threads keep calling
 * place_wakeup() and the worker calls (CPU hotplug, cpuset changes).
 *
 * t must be a restriction of the creation topology (place_get_topo()):
 * every CPU of t is one of its CPUs (same OS number), and two CPUs of t
 * share a core, an LLC, a NUMA node in t exactly when they do there. That
 * covers CPU hotplug out and back in, a cpuset that shrinks and grows back
 * within the creation set, a worker's CPU leaving. Passing place_get_topo(p)
 * itself restores every CPU. To grow beyond the CPUs a process started
 * with, create the instance over place_topo_load("machine") and restrict it.
 *
 * A CPU t lacks goes offline: from the moment place_set_topology() returns,
 * no place_wakeup() returns it, nor place_steal_order() lists it, nor may a
 * worker register there (-ENODEV). Its worker, if any, stays registered
 * and drains: place_idle_enter() (which then leaves it out of the idle
 * masks), place_run_begin(), place_run_end(), place_claim_release() and
 * place_worker_unregister() keep working, so tasks already queued or
 * claimed there still run there (or are stolen) and the worker can leave.
 * A CPU that comes back with its worker registered and idle is idle for
 * wakeups again at once. Per-CPU state (queued counts, claims, statistics,
 * cookies and NUMA groups of running tasks) survives every swap untouched.
 * Tasks whose previous CPU went offline are placed as new ones.
 * Compute steal orders again after a swap.
 *
 * Blocks for an RCU grace period (liburcu-bp; microseconds, more under
 * load): it waits until every place_wakeup() in flight has returned. Not a
 * hot path: may allocate and takes the instance's control lock (shared with
 * register/unregister). Must not be called from inside a place_* call (a
 * clock callback).
 *
 * Returns 0, or with nothing changed: -EINVAL p or t NULL; -EXDEV t is not
 * a restriction (a CPU that is not one of the instance's, or grouped
 * otherwise; place_last_error() names the first such CPU); -ENOMEM.
 * The instance keeps its own copy: the caller may free t when it returns.
 * Any thread; concurrently with every call on p except place_destroy(). */
PLACE_EXTERN int place_set_topology(place *p, const place_topo *t);

/* A copy of the instance's current topology (the last one given to
 * place_set_topology(), else the creation topology), owned by the caller:
 * free it with place_topo_free(). *out is NULL on failure.
 * -EINVAL p or out NULL; -ENOMEM. Any thread, concurrently with
 * place_set_topology() (lock-free: an RCU read-side critical section). */
PLACE_EXTERN int place_topo_current(const place *p, place_topo **out);

/* ------------------------------------------------------------------------ */
/* Workers                                                                   */

/* Pin the calling thread to cpu, until it unregisters (see below). */
#define PLACE_WORKER_BIND   (1u << 0)
/* Join a CPU that already has a worker, as one more of its threads. */
#define PLACE_WORKER_SHARED (1u << 1)

/* A worker now serves cpu; it starts idle. Only CPUs with a registered worker
 * are ever returned by place_wakeup().
 *
 * Several threads per CPU. libplace's unit is the CPU, not the thread: a
 * CPU has one state (idle or not, the task running, its queue count), and
 * a count of the threads registered on it. The first registration serves
 * the CPU; a later one is -EEXIST, unless it passes PLACE_WORKER_SHARED: it
 * then joins (the count grows, nothing else changes) and the CPU stays
 * served until as many place_worker_unregister() calls have come. Its
 * threads (a worker and its helpers, a spare that takes over while the
 * worker blocks in a system call) take turns: any of them may call the
 * worker calls for cpu, one task running at a time, which the runtime
 * serialises: a second place_run_begin before the first task's
 * place_run_end is -EBUSY, and place_idle_enter while a task runs is
 * -EBUSY, so a CPU whose helper runs a task never looks idle. The runtime
 * calls place_idle_enter when the CPU's queue is empty and none of its
 * threads runs a task. (Two tasks running at once on one CPU, each with its
 * own run_begin, is not modelled: the CPU has one run state.)
 *
 * PLACE_WORKER_BIND pins the calling thread to cpu first (nothing changes
 * if that fails) and keeps the mask it had; when the same thread later
 * unregisters cpu, that mask is given back (a thread bound twice gets its
 * masks back in reverse order). A mask whose thread never unregisters cpu
 * itself is dropped when the CPU's last thread leaves. The give-back is
 * best effort: a mask none of whose CPUs the cpuset still allows is refused
 * by the kernel, and the thread stays pinned. Threads the bound thread
 * created meanwhile inherited its one-CPU mask: create them before binding,
 * or set their masks (place_topo_load("process") lists the process's CPUs).
 *
 * -EINVAL bad p or flags, -ENODEV cpu not usable or not in the current
 * topology (place_set_topology), -EEXIST already registered and no
 * PLACE_WORKER_SHARED, -ENOMEM, or the negative errno of sched_getaffinity
 * or sched_setaffinity. Any thread (serialised with unregister and
 * place_set_topology by the instance's control lock). */
PLACE_EXTERN int place_worker_register(place *p, int cpu, unsigned flags);

/* One thread of cpu leaves: the mask its PLACE_WORKER_BIND replaced is
 * given back when the caller is that thread; while other threads of cpu
 * (PLACE_WORKER_SHARED) remain, nothing else changes. The last one: the
 * worker of cpu is gone; cpu is no longer claimed nor chosen. A claim
 * still held there survives until its task runs elsewhere or it is released.
 * A wakeup running concurrently may still return cpu (as its fallback). A
 * task it still runs (no place_run_end) leaves its core's occupancy (COOKIES).
 * Works on a CPU that left the current topology (its worker drained).
 * -EINVAL p NULL, -ENODEV cpu not usable, -ENOENT no worker registered there.
 * Any thread; the last one not concurrently with calls made by cpu's
 * worker (the others change nothing those calls see). */
PLACE_EXTERN int place_worker_unregister(place *p, int cpu);

/* ------------------------------------------------------------------------ */
/* Tasks                                                                     */

/* The record a runtime embeds in its task object. libplace never allocates
 * per task. Public fields may be read; private storage is libplace's.
 * Not shared by concurrent calls: one wakeup or run edge of a task at a time
 * (but a wakeup racing the task's place_run_end: see place_wakeup).
 *
 * Size: sizeof(place_task), which place_task_size() returns for FFI
 * binders: 120 bytes on LP64 (two pointers, a size_t, 96 private bytes),
 * part of the ABI.
 *
 * Copying and moving. A record may be copied or moved (memcpy, realloc of
 * an array of tasks, a task object migrated) only while it holds nothing:
 * it is not running (no place_run_begin without its place_run_end: the CPU
 * remembers the running record's address) and holds no claim, queue slot
 * or NUMA move from a wakeup it has not started after (place_task_claimed()
 * is PLACE_CPU_NONE and it was not woken since its last run, nor ended with
 * PLACE_RUN_PREEMPT; place_task_forget() gives those up). That is: a fresh
 * record, or one after place_run_end with SLEEP or EXIT, or after
 * place_task_forget. The copy keeps the history (previous CPU, average run,
 * cookie, group, cpus pointer) and is a task of its own: use one of the two
 * afterwards, not both as the same task. A running or holding record that
 * is copied leaves the original's claim or run to the original's address:
 * the copy would then end nothing, and the slot would stay held. */
typedef struct place_task {
	void *data;                 /* free for the caller */
	const cpu_set_t *cpus;      /* read-only: allowed CPUs, NULL = any (place_task_set_cpus) */
	size_t cpus_size;           /* read-only: size in bytes of *cpus */
	uint64_t priv[12];          /* private */
} place_task;

/* Initialise a task record: no previous CPU, no history, any CPU allowed,
 * cookie (0 = trusted, untagged; see place_task_set_cookie), NUMA group
 * (0 = none). data is left alone. An initialiser: it never reads the record,
 * so fresh memory (malloc) is fine, and it forgets whatever the record held.
 * NULL is accepted (nothing happens). A record that was never initialised is
 * refused by every call with -EINVAL.
 *
 * Instances. What a wakeup leaves in a record until the task starts (a
 * claim or queue slot on a CPU, a NUMA move's slot) belongs to that
 * instance: another instance refuses the record with -EXDEV (place_wakeup,
 * place_run_begin, place_task_claimed, place_task_forget), changing
 * nothing, until the first instance gives it up (the task starts there, or
 * place_task_forget there). A record that holds nothing goes to any
 * instance; its history (previous CPU, average run) comes along as hints.
 * Before initialising (or freeing) a record that still holds something (a
 * task woken and then dropped: neither started nor forgotten), give it up
 * with place_task_forget() on its instance: place_task_init has no
 * instance to give it up on, and the CPU it was sent to would stay claimed
 * (idle for nobody) until place_claim_release(). */
PLACE_EXTERN void place_task_init(place_task *t, uint64_t cookie, uint32_t group);

/* Restrict t to the CPUs in set (size bytes, as CPU_ALLOC_SIZE gives; NULL =
 * any). The set stays owned by the caller and must outlive its use.
 * -EINVAL when t is NULL or not initialised, or set is non-NULL with size 0. */
PLACE_EXTERN int place_task_set_cpus(place_task *t, const cpu_set_t *set, size_t size);

/* Set t's core-scheduling cookie. With PLACE_FEAT_COOKIES, tasks whose
 * cookies differ never run at the same time on SMT siblings of one core; 0
 * ("trusted, untagged") is a cookie like the others, so a tagged task never
 * shares a core with untagged ones either. Cookies are compared whole (any
 * two different values are different cookies).
 * Safe while t runs or is queued, from any thread, even during a call on t:
 * it takes effect at t's next place_run_begin (a run in progress keeps the
 * cookie it started with until its place_run_end; a run_begin racing this
 * call uses the old or the new cookie) and steers t's next wakeups.
 * -EINVAL when t is NULL or not initialised. */
PLACE_EXTERN int place_task_set_cookie(place_task *t, uint64_t cookie);

/* Set t's NUMA group: 0 = none, else 1..max_groups of the instances it is
 * used with (checked there: place_wakeup and place_run_begin refuse a
 * larger group with -ENOSPC while PLACE_FEAT_NUMA is on). Tasks of one
 * group (an address space, a tenant) are drawn to the NUMA node where the
 * group runs most (see place_wakeup). Safe while t runs or is queued, from
 * any thread, even during a call on t: a run in progress keeps counting for
 * the group it started with until its place_run_end; the next run_begin and
 * wakeups use the new group (a call racing them, the old or the new one).
 * -EINVAL when t is NULL or not initialised. */
PLACE_EXTERN int place_task_set_group(place_task *t, uint32_t group);

/* sizeof(place_task) (120 on LP64), for FFI binders. */
PLACE_EXTERN size_t place_task_size(void);

/* ------------------------------------------------------------------------ */
/* The hot path                                                              */

#define PLACE_WAKE_SYNC    (1u << 0) /* the waker is about to sleep */
#define PLACE_WAKE_NOCLAIM (1u << 1) /* answer only: claim nothing */
#define PLACE_WAKE_NEW     (1u << 2) /* first placement: no previous CPU */
/* The waker hands its CPU to t (the kernel's WF_CURRENT_CPU): it is about to
 * stop (sleep, wait, exit) and t should run next on its CPU, as a user-level
 * thread switch does. t goes to waker_cpu, queued (counted in nr_running),
 * never claimed, when its cpu_set_t allows that CPU, a worker serves it and
 * (COOKIES) its core admits t's cookie or runs nothing but the waker;
 * otherwise the usual rules decide. Needs a waker_cpu (else -EINVAL).
 * Counted in hit_target and affine_wakeups. SYNC alone keeps the kernel's
 * meaning: the waker's CPU is the target, but an idle prev or idle CPU of
 * its LLC is preferred to it. */
#define PLACE_WAKE_CURRENT (1u << 3)
/* With PLACE_WAKE_NEW: spread the new task as the kernel's fork balancing
 * does (the LLC with the most free CPUs, see place_wakeup, else the least
 * loaded CPU), for a long-lived, independent task (a process, a service
 * loop). Without it a task created by a worker (NEW with a waker_cpu)
 * starts near its creator (see place_wakeup), which is what fine-grained
 * fork-join wants. A flag, not a feature bit: one runtime creates both
 * kinds, and the creator knows which one each is. NEW without a waker
 * always spreads (there is no creator to stay near). No effect without NEW. */
#define PLACE_WAKE_SPREAD  (1u << 4)
/* waker_cpu is the CPU where the waker ran (or runs), but the caller is not
 * that worker's thread: another worker resuming a task the waker blocked,
 * a helper thread acting for it. wake_affine uses waker_cpu as a worker
 * waker's (prev or waker, the NUMA rule, fork-local placement); the
 * waker's running task is not touched (no wakee flips recorded, no
 * wake_wide: they are that thread's) and the statistics go to the LLC's
 * shared slot (as PLACE_CPU_NONE's). Needs a waker_cpu; not with
 * PLACE_WAKE_CURRENT (a hand-off is the waker's own: -EINVAL). */
#define PLACE_WAKE_REMOTE  (1u << 5)

/* Task t became runnable: returns the OS CPU whose worker should run it.
 *
 * The kernel's order: wake_affine picks the waker's CPU or t's previous CPU
 * (SYNC and the waker runs one task -> waker; the waker runs exactly one
 * short task -> waker; wake_wide turns this off for 1:N wakers); then, in
 * that target's LLC: the target if idle, prev, t's recently used CPU, a
 * whole idle core (when one is hinted), an idle SMT sibling of prev, an idle
 * CPU (a bounded scan); with PLACE_FEAT_CLUSTER, both scans try the
 * target's cluster (CPUs under one L2 below the LLC) first. A task created
 * by a worker (PLACE_WAKE_NEW with a waker_cpu that t may use, without
 * PLACE_WAKE_SPREAD) starts near its creator: the same steps as if it had
 * last run on the waker's CPU (that CPU if idle, a whole idle core of its
 * LLC, an idle SMT sibling of the waker, an idle CPU of its LLC), else it
 * is queued on the waker's CPU. Any other new task (NEW without a waker,
 * NEW with SPREAD, or no usable previous CPU) starts in the LLC with the
 * most free CPUs, then the most idle ones; in it on a whole free core,
 * else a free CPU, else a whole idle core, else an idle CPU. Free: idle,
 * and not the CPU where the last task to go to sleep there still sleeps
 * (it has not started on another CPU, exited or been forgotten since), so
 * that a sleeping task keeps its CPU, as the kernel counts a sleeper's
 * load (without its decay: see place_run_end). When no CPU is idle, on the
 * least loaded one (running plus queued tasks; the waker's LLC on a tie),
 * so a burst of new tasks spreads. Only registered CPUs inside t->cpus are
 * considered. When nothing idle is found in the target's LLC and the target
 * is not the waker's CPU (wake_affine's pull stays, as sched_ext keeps a
 * SYNC wakee on the waker), PLACE_FEAT_WIDEN looks beyond it: a whole idle
 * core in the target's node, then on the other nodes nearest first, then an
 * idle CPU likewise (hit_widened; a task with a NUMA group stays on the
 * target's node). When nothing idle is found the target itself is returned
 * (the task stacks there; counted in hit_fallback).
 *
 * Cookies (PLACE_FEAT_COOKIES). Every step skips idle CPUs whose core runs
 * tasks of another cookie than t's (a whole idle core always fits). This is
 * a hint, read without synchronisation; place_run_begin checks exactly. When
 * no fitting idle CPU is found and the target's core runs another cookie
 * (or, once cookies have mixed on a core, always), t goes to the least
 * loaded CPU whose core fits: the target's LLC first on a tie, then its
 * node, then the other nodes, nearest first, where a CPU must carry two tasks
 * fewer (a task with a NUMA group: its node only; a task wake_affine
 * pulled to the waker: its LLC only); the target when none does; claimed
 * as above when it is idle.
 * Counted in cookie_fallbacks when that is not a fitting target. So each
 * cookie's tasks spread over the cores it holds, in every LLC.
 *
 * NUMA groups (PLACE_FEAT_NUMA). When t has a group and its prev and the
 * waker sit on different nodes, the group decides between them (wake_affine
 * only when the group runs equally on both): t stays on prev's node when
 * the group runs more there; it moves to the waker's node (the target is
 * then the waker) when the group runs more there, its share of the tasks on
 * that node is at least its share on prev's node (the consolidation
 * patches' rule dst_running * src_nr >= src_running * dst_nr, tasks running and queued,
 * the nodes' loads as sampled at most util_period_ns and node CPUs / 8 + 1
 * decisions ago),
 * and that node keeps a CPU free for t or is less loaded per CPU than
 * prev's; otherwise it stays (numa_kept). A task never crosses nodes within
 * numa_cooldown_ns after its last NUMA move (numa_cooldown_skips when one
 * was wanted), and at most numa_move_cap moved tasks that have not started
 * yet head for one node (numa_cap_skips): a moved task holds its slot until
 * its next place_run_begin, on any CPU, or place_task_forget. Counted in numa_moves. The counts
 * read are hints; PLACE_WAKE_NOCLAIM answers with the same rule and
 * changes and counts nothing of it.
 *
 * Claims. Unless PLACE_WAKE_NOCLAIM (or the CLAIM feature is off), an idle
 * CPU returned is claimed for t with one compare-and-swap: no concurrent
 * wakeup gets it, and it is not idle for anyone, until t starts running
 * anywhere (place_run_begin on that CPU or on a thief) or the claim is
 * released (place_claim_release). Its worker parking does not end it.
 * Every answer other than NOCLAIM also counts t as queued on the CPU it
 * returns (nr_running for later wake_affine decisions) until t starts.
 * PLACE_WAKE_NOCLAIM answers only: no claim, nothing counted, t's record
 * and the waker's untouched (stale idle-mask bits may still be repaired).
 * Waking a task that still holds a claim or queue slot from an earlier
 * wakeup it never ran after gives that up first (so that this wakeup sees
 * that CPU as it is now; a new placement, which may find no usable CPU,
 * gives it up once it found one: a failed call keeps it).
 *
 * A task still running. A wakeup of t between its place_run_begin and its
 * place_run_end (a user-level thread that blocked and that another worker
 * resumes before the worker that ran it reported the run's end) is refused
 * with -EALREADY, and nothing changes. This is the one wakeup that may race
 * a call on the same task, t's place_run_end on its worker: the wakeup
 * either sees the run still on (-EALREADY) or sees the whole run_end
 * (acquire and release on the CPU's line), never half of it. The runtime
 * then does one of: mark t "woken" where the worker that runs it will see
 * it, and let that worker end the run with PLACE_RUN_PREEMPT (t stays
 * runnable, queued on its CPU) or with PLACE_RUN_SLEEP and then wake t
 * itself; or retry the wakeup once that run_end has happened. Costs
 * nothing on a wakeup whose prev is idle (a CPU that runs t is never idle)
 * and one load of prev's line, which the wakeup reads anyway, otherwise.
 *
 * The startup window. Before any worker has registered (place_worker_register),
 * every wakeup returns -ESRCH at once, with place_last_error() "no worker
 * has registered yet", and changes nothing: no search runs. The runtime
 * keeps such tasks itself (a pending list, or the queue of the worker it
 * means for them) and wakes them again once its workers registered; a
 * task woken later places as a new one (its prev has no worker yet).
 * (-ESRCH with workers registered means none is allowed for t: "no
 * registered worker serves a CPU the task may use".)
 *
 * waker_cpu is the CPU of the waking worker, and then the caller must be
 * that worker's thread (libplace updates the waker's running task's wakee
 * flips), unless flags has PLACE_WAKE_REMOTE: the CPU where the waker ran,
 * from any thread (wake-affine without the flips); otherwise
 * PLACE_CPU_NONE: no wake-affine, placement around prev.
 *
 * -EINVAL p or t NULL, t not initialised, unknown flags, PLACE_WAKE_CURRENT
 * or PLACE_WAKE_REMOTE without a waker or both, t->cpus set with a zero
 * size; -ENODEV waker_cpu not a usable CPU; -EALREADY t is still running
 * (see above); -ESRCH no registered worker is allowed for t, or none has
 * registered yet (an earlier claim or queue slot of t is then kept);
 * -ENOSPC (NUMA) t's group is above max_groups; -EXDEV t holds a claim,
 * queue slot or NUMA move of another instance (see place_task_init). Any
 * thread, concurrently with every call except the ones on the same task
 * (but t's place_run_end, see above). Lock-free, allocation-free: one RCU read-side
 * critical section (liburcu-bp), so that place_set_topology() can wait for
 * it; the first call on a thread registers the thread with liburcu-bp,
 * which allocates once. Only CPUs of the current topology are returned. */
PLACE_EXTERN int place_wakeup(place *p, place_task *t, int waker_cpu, unsigned flags);

/* place_wakeup_ex's *how: the CPU returned was claimed for t by this call
 * (deliver t there, or give the claim back with place_claim_release). */
#define PLACE_WOKE_CLAIMED (1u << 0)

/* place_wakeup, and in *how (when not NULL) what it did: PLACE_WOKE_CLAIMED
 * or 0 (t was stacked or handed off, or NOCLAIM, or the call failed). The
 * same as place_task_claimed(p, t) == the answer right after the call,
 * without its loads; other bits may be added later (test the bit). Same
 * errors, threads and guarantees as place_wakeup. */
PLACE_EXTERN int place_wakeup_ex(place *p, place_task *t, int waker_cpu, unsigned flags, unsigned *how);

/* The worker of cpu found its queue empty and is about to park. The CPU
 * becomes idle; it enters the idle mask unless a wakeup is pending on it (a
 * claimed or stacked task on its way). Calling it again while parked is
 * harmless. -EINVAL p NULL, -ENODEV cpu not usable, -ENOENT no worker there,
 * -EBUSY a task is still running there (place_run_end first).
 * Only that worker. */
PLACE_EXTERN int place_idle_enter(place *p, int cpu);

/* The worker of cpu starts running t: cpu is busy, and t's claim or queue
 * slot ends wherever it was. If t was claimed on another CPU (cpu stole it)
 * and that CPU is idle, it is idle for new wakeups again. -EINVAL p NULL or
 * t NULL or not initialised, -ENODEV cpu not usable, -ENOENT no worker
 * there, -EBUSY the worker already runs a task (a missing place_run_end), or
 * (COOKIES) an SMT sibling of cpu runs a task with another cookie
 * (place_last_error() says which), -ENOSPC (NUMA) t's group is above
 * max_groups; nothing changes on a failure. Only that worker (a thread of
 * cpu: PLACE_WORKER_SHARED).
 * NUMA groups: t's group (the value now) counts one more task running on
 * cpu's node until t's place_run_end (any how) or the worker's unregister.
 *
 * Core scheduling. With PLACE_FEAT_COOKIES this is the enforcement point:
 * one compare-and-swap on the core's occupancy {cookie, running count}
 * admits t only when nothing runs on cpu's core or what runs there carries
 * t's cookie (the value of t's cookie now; see place_task_set_cookie).
 * Otherwise -EBUSY and nothing changed: t keeps its claim or queue slot,
 * cpu stays between tasks. The worker must then not run t: it leaves cpu
 * "forced idle" (runs another task, whose cookie may fit, or parks with
 * place_idle_enter) and requeues t (it may retry later, or another CPU may
 * take it). Guarantee: as long as the runtime honours -EBUSY and runs a
 * task's code only between a successful place_run_begin and its
 * place_run_end, no two tasks of different cookies run at the same time on
 * SMT siblings of one core, whatever the interleaving of the calls on all
 * threads. A core with one CPU never refuses. Counted: cookie_refusals,
 * forced_idle_ns (from a refusal until cpu retries: it next starts a task,
 * or parks once the other cookie has left its core).
 *
 * The wake edge of a refused worker: the place_run_end_retry() that ends
 * the last task of the other cookie on that core names cpu (and every
 * sibling refused since): its runtime then unparks that worker, whose
 * place_run_begin may now succeed. A worker parked after -EBUSY needs no
 * other event. Better still, the refused task need not wait there: ask
 * place_run_refused() where it goes instead.
 *
 * Fairness between cookies: a cookie keeps a core at most
 * PLACE_COOKIE_TURN_NS (1 ms) after a sibling was first refused while that
 * sibling still waits. Then the next place_run_begin of the running cookie
 * on that core is refused too (-EBUSY, counted in cookie_turns), and every
 * later one, until the core's last task ends: the core drains and its
 * place_run_end_retry() names the waiting siblings, whose cookie then gets
 * the core. The drained CPUs are forced idle meanwhile (forced_idle_ns).
 * So a refused task waits at most about PLACE_COOKIE_TURN_NS plus the
 * longest run of the tasks running there, if the runtime retries the named
 * CPUs before the CPU that emptied the core picks its next task. Only a
 * refusal starts this; how many cores each cookie holds follows from
 * placement (place_wakeup's fallback spreads a cookie over its cores).
 *
 * A record that holds a claim, queue slot or NUMA move of another
 * instance (see place_task_init) is refused with -EXDEV, nothing changed. */
PLACE_EXTERN int place_run_begin(place *p, int cpu, place_task *t);

#define PLACE_RUN_SLEEP   0u /* t blocked and will be woken again */
#define PLACE_RUN_EXIT    1u /* t finished */
#define PLACE_RUN_PREEMPT 2u /* t was preempted and stays runnable on cpu */

/* t stopped running on cpu. Every how ends the run: cpu runs nothing (it
 * stays busy, not idle, until place_idle_enter), t leaves its core's
 * occupancy (COOKIES: a preempted task passes place_run_begin's check
 * again when it resumes) and its group's count on cpu's node (NUMA), and a
 * wakeup of t is no longer refused (-EALREADY). The run's length counts
 * (timed or sampled) in cpu's utilization. Then:
 *   SLEEP    t blocked: the run time since its last sleep (the runs a
 *            PREEMPT strung together) becomes a sample of t's average run
 *            between sleeps (the short-task estimate, when that interval
 *            was timed); t holds nothing and is woken by place_wakeup.
 *            Until t starts on another CPU, exits or is forgotten
 *            (place_task_forget), or another task sleeps on cpu, a new
 *            task's spread counts cpu as t's (see place_wakeup), however
 *            long t sleeps. Only t's address is kept, never read: a record
 *            freed, initialised again or copied while asleep leaves cpu
 *            counted until another task sleeps there (forget it first).
 *   EXIT     t finished: nothing of its estimate changes (the average,
 *            and the run time gathered since its last sleep, stay as they
 *            were: a last run says nothing of a next one); t holds nothing:
 *            its record may be freed, or initialised again for a new task
 *            (place_task_init; woken as it is, it would carry that run time
 *            into its next sample).
 *   PREEMPT  t stays runnable on cpu: the run goes on (its time adds up to
 *            the next sample) and t counts as queued on cpu until its next
 *            place_run_begin there or on a thief; t holds that queue slot
 *            (see place_task_forget).
 * -EINVAL p NULL, t is not the task running on cpu (it runs nothing: a
 * doubled place_run_end; it runs another task; t runs on another CPU), or
 * how unknown, each named by place_last_error(); -ENODEV cpu not usable;
 * -ENOENT no worker registered on cpu. Only the worker of cpu (a thread of
 * cpu: PLACE_WORKER_SHARED). */
PLACE_EXTERN int place_run_end(place *p, int cpu, place_task *t, unsigned how);

/* place_run_end(), which also names the SMT siblings of cpu that may retry
 * now (COOKIES): when t was the last task running on cpu's core, the
 * siblings whose place_run_begin that core's cookie refused since (-EBUSY;
 * also when one started a fitting task since; never cpu itself) are free
 * to start any cookie. Writes at most max of their OS CPU numbers
 * into retry and returns how many there are (0 when none; those beyond max
 * are not kept: size retry by place_topo_siblings()' count minus one).
 * Its runtime wakes their workers (they were left forced idle, perhaps
 * parked): forced idle has no other wake edge. A hint the other way round
 * too: a named sibling may be refused again (another cookie started
 * first). Costs nothing more than place_run_end unless a sibling was
 * refused (cores of one CPU, COOKIES off: never). A worker unregistered
 * while running names no one. -EINVAL max < 0 or retry NULL with max > 0,
 * and the errors of place_run_end; nothing changes on a failure. Only the
 * worker of cpu. */
PLACE_EXTERN int place_run_end_retry(place *p, int cpu, place_task *t, unsigned how, int *retry, int max);

/* A direct switch: prev stops and next starts on cpu, in one call that
 * costs less than the two. For runtimes that go from one task to the next
 * without their worker loop (user-level threads: yield_to, a join that
 * resumes a ready task, exit-to; coroutines): prev, the task running on
 * cpu, stops with how (as place_run_end) and next starts (as
 * place_run_begin). The same
 * effects as place_run_end(p, cpu, prev, how) then place_run_begin(p, cpu,
 * next): prev's run time up to now is charged to prev and next's from now
 * to next; statistics, queue counts (PREEMPT counts prev as queued on cpu;
 * next's claim or queue slot ends wherever it was), idle masks and NUMA
 * counts end as the two calls leave them. But cpu never is between tasks
 * on the way: no waker or scan sees it without a running task, and the
 * core's occupancy (COOKIES) changes at most its cookie, in one step, so
 * no sibling of another cookie can slip in. next may be prev (a yield
 * that runs on: PREEMPT, resume). Every error leaves everything as it was:
 * -EINVAL p NULL, prev or next NULL or not initialised, prev is not the
 * task running on cpu, or how unknown; -ENODEV cpu not usable; -ENOENT no
 * worker registered on cpu; -EXDEV next holds something of another
 * instance; -ENOSPC (NUMA) next's group is above max_groups; -EAGAIN
 * (COOKIES) the switch would pass over a sibling of cpu: the core drains,
 * a sibling refused by this cookie waits and its turn has come
 * (PLACE_COOKIE_TURN_NS) or next's cookie differs from prev's (that
 * sibling must be named), or other CPUs of the core run prev's cookie
 * while next's differs. Then the worker makes the two calls,
 * place_run_end_retry (which names the siblings to wake) and
 * place_run_begin (which may refuse next, -EBUSY). Only the worker of
 * cpu. */
PLACE_EXTERN int place_run_switch(place *p, int cpu, place_task *prev, unsigned how, place_task *next);

/* A hand-off in one call: prev, the task running on cpu, woke next to run
 * right after it on cpu, and stops; next starts. For a runtime that keeps
 * such a wakee in a slot of the worker's own (runnext) and does not call
 * place_wakeup(p, next, cpu, PLACE_WAKE_CURRENT) for it: this call leaves
 * what that wakeup (answering cpu) then place_run_switch(p, cpu, prev, how,
 * next) leave: prev's wakee flips (wake_wide), the core's cookie hint, the
 * statistics (one wakeup counted in cpu's slot: hit_target,
 * affine_wakeups, no claim, its probes), then prev's run end and next's
 * start as the switch does (run times, the short-task estimate, next's
 * previous CPU, NUMA counts, the core's cookie). But next never counts as
 * queued on cpu, and it costs less than the two calls: no enqueue and
 * delivery on cpu's state word (two atomic RMWs), one call. Until it,
 * libplace does not know next is runnable: other wakeups see one task
 * fewer queued on cpu meanwhile. Call it when prev's run ends, with the
 * wakee that prev's run woke (the flips are prev's). Every error leaves
 * everything as it was; the runtime then wakes next as it would have
 * (place_wakeup with PLACE_WAKE_CURRENT, which may answer another CPU)
 * and goes on with place_run_switch when the answer is cpu. -EINVAL p
 * NULL, prev or next NULL or not initialised, prev is not the task
 * running on cpu, or how unknown; -ENODEV cpu not usable, or not in the
 * current topology (place_set_topology: no wakeup goes there); -ENOENT no
 * worker registered on cpu; -EXDEV next holds something of another
 * instance; -ENOSPC (NUMA) next's group is above max_groups; -EALREADY
 * next is running (it is prev, or runs on another CPU); -EBUSY next holds
 * a claim, queue slot or NUMA move of an earlier wakeup on this instance
 * (it was woken already: place_run_switch to it); -EPERM next's cpu_set_t
 * does not allow cpu; -EAGAIN (COOKIES) cpu's core does not admit next's
 * cookie (a sibling runs another), or the switch would pass over a
 * sibling (see place_run_switch). Only the worker of cpu. */
PLACE_EXTERN int place_run_handoff(place *p, int cpu, place_task *prev, unsigned how, place_task *next);

/* place_run_begin(p, cpu, t) was refused (-EBUSY, COOKIES: a sibling of
 * cpu runs another cookie, or the core drains for a cookie that waited):
 * where t should wait instead of behind that cookie. t is placed again as
 * place_wakeup(p, t, PLACE_CPU_NONE, flags) places it (from its previous
 * CPU, giving up its claim or queue slot on cpu first), so the answer is a
 * CPU whose core runs and queues nothing of another cookie when one fits
 * (an idle one claimed for t, unless PLACE_WAKE_NOCLAIM), else the least
 * loaded fitting CPU, as place_wakeup's cookie fallback finds it. The runtime moves t there and wakes that
 * worker; an answer on cpu itself means nothing fits better: t waits there
 * (queued again) until a place_run_end_retry() names cpu. Counted as a
 * wakeup (hit_* of its answer). -EINVAL p or t NULL, t not initialised or
 * flags other than PLACE_WAKE_NOCLAIM; -ENODEV cpu not usable, -ENOENT no
 * worker on cpu; place_wakeup's errors (an error keeps t's slot on cpu).
 * Only the worker of cpu, between tasks. */
PLACE_EXTERN int place_run_refused(place *p, int cpu, place_task *t, unsigned flags);

/* A wakeup that claimed cpu could not be delivered: release the claim held
 * on cpu (whichever task holds it; that task's later run_begin then ends
 * nothing). If cpu is idle it is idle for new wakeups again. Works after the
 * worker was unregistered. -EINVAL p NULL, -ENODEV cpu not usable, -ENOENT
 * no claim is held on cpu. Any thread. */
PLACE_EXTERN int place_claim_release(place *p, int cpu);

/* The CPU that t's last wakeup claimed for it, while that claim is held (t
 * has not started running and the claim was not released), else
 * PLACE_CPU_NONE: a wakeup that found nothing idle, or NOCLAIM, claims
 * nothing, and its answer may even be an idle CPU claimed by another task.
 * A runtime that cannot deliver t asks this before place_claim_release().
 * -EINVAL p or t NULL, t not initialised; -EXDEV t holds something of
 * another instance (see place_task_init). Any thread that may use t. */
PLACE_EXTERN int place_task_claimed(const place *p, const place_task *t);

/* t will not run after its last wakeup (the runtime cancelled or dropped
 * it): give up what that wakeup left behind, so nothing waits for t
 * forever: its claim or queue slot on the CPU it was sent to (that CPU is
 * idle for new wakeups again when its worker is idle) and, after a NUMA
 * move, its slot under the destination's moves cap; and the CPU where it
 * last went to sleep no longer counts as its for a new task's spread (see
 * place_run_end). Its history stays (previous CPU, average run). t may be
 * woken again later (a new placement from its previous CPU). Not while t
 * runs (between place_run_begin and place_run_end) or concurrently with
 * another call on t. -EINVAL p or t NULL, t not initialised; -EXDEV t
 * holds something of another instance (forget it there; see
 * place_task_init), nothing changed. Any thread that may use t. */
PLACE_EXTERN int place_task_forget(place *p, place_task *t);

/* ------------------------------------------------------------------------ */
/* Work stealing                                                             */

/* The CPUs an idle worker on cpu should try to steal from, nearest first: its
 * SMT siblings, the rest of its LLC, the rest of its NUMA node, the rest of
 * its package, then the other nodes, nearest first by hwloc's NUMA
 * latencies (nodes as far share a ring; without latencies, one ring).
 * Within each ring the order starts just
 * after cpu and wraps, so thieves that go idle together try different victims
 * first. Only CPUs with a registered worker in the current topology
 * (place_set_topology) are listed; cpu itself never is. cpu itself needs
 * no worker: a helper thread running there, or a runtime computing its
 * orders before its workers register, gets the order of any usable CPU.
 * Writes at most max OS CPU numbers into out and returns how many there are
 * (which may exceed max). Not a hot path (O(CPUs)): compute once per worker
 * and again after registrations change.
 * -EINVAL p NULL, max < 0, or out NULL with max > 0; -ENODEV cpu not usable.
 * Any thread. */
PLACE_EXTERN int place_steal_order(const place *p, int cpu, int *out, int max);

/* An idle CPU near cpu, claimed: for a runtime that wants to wake a parked
 * thief to take work queued on cpu (no task yet, so no place_wakeup).
 * Nearest first: an SMT sibling of cpu, then its cluster (see
 * PLACE_FEAT_CLUSTER), the rest of its LLC, its NUMA node, the other
 * nodes nearest first (as PLACE_FEAT_WIDEN); cpu itself never. Inside cpu's LLC every candidate of the idle mask is
 * looked at; beyond it, only LLCs whose mask may hold an idle CPU, at most
 * 8 candidates in all with PLACE_RUNTIME_THIEVES, every one without (the
 * budget of PLACE_FEAT_WIDEN's idle-CPU pass, which does not switch this
 * call off). Returns the OS CPU, claimed like a wakeup's answer (no wakeup
 * gets it, it is not idle for anyone) unless flags has PLACE_WAKE_NOCLAIM
 * (answer only) or CLAIM is off.
 * The claim belongs to no task, so no place_run_begin ends it: the woken
 * thief (or whoever cannot wake it) ends it with place_claim_release(p,
 * returned cpu), as its first step after it wakes, before it looks for
 * work (it may find none; a task it steals then starts as any stolen task).
 * Until then no wakeup sends a task there, which is the point: the CPU is
 * spoken for. A claim never released keeps the CPU out of every search.
 * -EINVAL p NULL or flags other than PLACE_WAKE_NOCLAIM, -ENODEV cpu not
 * usable, -EAGAIN nothing idle was found (every CPU busy, claimed or
 * without a worker, or the candidates beyond cpu's LLC ran out). Any
 * thread; lock-free, allocation-free (one RCU read-side section). */
PLACE_EXTERN int place_idle_near(place *p, int cpu, unsigned flags);

/* Whether the worker of cpu may steal t (queued on another CPU) and run it
 * now. The kernel's can_migrate_task() for a thief: t's cpu_set_t allows cpu,
 * and (COOKIES) cpu's core runs nothing or tasks of t's cookie and does
 * not drain for another cookie. Ask before taking t: a task that cpu's
 * place_run_begin would refuse stays where it waits, for a thief whose core
 * fits, rather than being taken, refused and placed again
 * (place_run_refused) while the thief parks. A hint read without a lock,
 * so place_run_begin still decides (a sibling may start another cookie in
 * between). Returns 0 when t may go to cpu; -EPERM t's cpu_set_t excludes
 * cpu; -EBUSY cpu's core runs another cookie or drains; -EINVAL p NULL, t
 * NULL or not initialised; -ENODEV cpu not usable, or not in the current
 * topology (place_set_topology: its worker drains its own tasks and takes
 * no other); -ENOENT no worker on cpu. Any thread; reads only (a few
 * relaxed loads). */
PLACE_EXTERN int place_steal_check(const place *p, int cpu, const place_task *t);

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */

typedef struct place_stats {
	/* Every successful wakeup (place_wakeup, place_wakeup_ex, NOCLAIM
	 * included; place_run_refused; place_run_handoff) counts in exactly
	 * one level: hit_target, hit_prev, hit_recent, hit_idle_core,
	 * hit_idle_cpu, hit_sibling, hit_prev_smt, hit_widened or
	 * hit_fallback. A failed call counts nothing. The target is
	 * wake_affine's choice, the waker's CPU or prev; with waker
	 * PLACE_CPU_NONE it is prev. */
	uint64_t wakeups;         /* the sum of the levels (all hit_* but hit_cluster) */
	uint64_t affine_wakeups;  /* wake_affine chose the waker's CPU over prev, and
	                           * hand-offs (PLACE_WAKE_CURRENT, place_run_handoff) */
	uint64_t hit_target;      /* the target was idle and taken (claimed unless NOCLAIM);
	                           * with waker PLACE_CPU_NONE an idle prev counts here, not
	                           * in hit_prev; a new task: the CPU its placement chose;
	                           * also every hand-off (queued on the waker's CPU) */
	uint64_t hit_prev;        /* the target (the waker's CPU) was busy and prev, in
	                           * the same LLC, idle */
	uint64_t hit_recent;      /* the prev of t's wakeup before this one (the kernel's
	                           * recent_used_cpu), idle in the target's LLC */
	uint64_t hit_idle_core;   /* the idle-core scan found a whole idle core in the
	                           * target's LLC */
	uint64_t hit_idle_cpu;    /* an idle CPU from the idle-CPU scan of the target's LLC,
	                           * one of a partly idle core the idle-core scan met, or the
	                           * COOKIES fallback's choice (see cookie_fallbacks) */
	uint64_t hit_sibling;     /* SCAN_SIBLING: the idle-CPU scan of a fail-prone target
	                           * found an idle SMT sibling of a busy mask CPU */
	uint64_t hit_fallback;    /* nothing idle found: stacked (on the target, or where
	                           * COOKIES' fallback sent it) */
	uint64_t cpus_probed;     /* CPU state lines the wakeups read (prev, waker, scan
	                           * candidates and their siblings); per wakeup, the cost */
	uint64_t false_positives; /* busy CPUs cleared from idle masks */
	uint64_t lost_claims;     /* claim CAS lost to another wakeup (the scan went on) */
	uint64_t hit_prev_smt;    /* an idle SMT sibling of prev (in the target's LLC) */
	uint64_t claims;          /* wakeups that claimed the CPU they returned */
	uint64_t claims_stolen;   /* claims ended by the task starting on another CPU */
	uint64_t claims_released; /* claims ended by place_claim_release() */
	uint64_t fail_prone_marks;/* failed partial scans that marked their target fail-prone */
	uint64_t idle_enters;     /* successful place_idle_enter() calls (again while parked too) */
	uint64_t cookie_refusals; /* run_begin refused: a sibling ran another cookie */
	uint64_t forced_idle_ns;  /* from each refusal until that CPU started a task or parked */
	uint64_t cookie_fallbacks;/* COOKIES: nothing idle fit t's cookie, and t went to the least
	                           * loaded CPU whose core fits (nearest first, see place_wakeup),
	                           * else the target, other than a fitting target; also counted
	                           * in hit_fallback, or in hit_idle_cpu when that CPU was idle
	                           * (and claimed) */
	uint64_t numa_moves;      /* cross-node wakeups moved to the group's node */
	uint64_t numa_kept;       /* the group ran more on the waker's node, but the rule or
	                           * its load kept t on prev's node */
	uint64_t numa_cooldown_skips; /* a cross-node move wanted within the cool-down */
	uint64_t numa_cap_skips;  /* a NUMA move refused: the destination's cap was reached */
	uint64_t hit_widened;     /* WIDEN: nothing idle in the target's LLC, an idle CPU
	                           * beyond it (claimed unless NOCLAIM) */
	uint64_t hit_cluster;     /* CLUSTER: idle-core or idle-CPU scan hits in the target's
	                           * cluster (also counted in their own level) */
	uint64_t cookie_turns;    /* COOKIES: run_begins refused because another cookie had waited
	                           * PLACE_COOKIE_TURN_NS for the core (its turn: the core
	                           * drains; also counted in cookie_refusals) */
} place_stats;

/* Read the counters of LLC domain llc (its dense id), or of the whole instance
 * when llc is -1. Counters are summed from per-CPU slots without stopping
 * writers: each is exact, the set is not a single snapshot. A wakeup counts
 * in the waker's LLC, or, with PLACE_CPU_NONE, in the LLC it placed the task
 * in (schedstat counts on the waking CPU). hit_* add up to wakeups, but
 * hit_cluster (a share of hit_idle_core, hit_idle_cpu and hit_sibling).
 * LLC ids are those of the creation topology (place_get_topo), whatever
 * place_set_topology did: counters of CPUs that left stay in their LLC.
 * -EINVAL p or out NULL, -ERANGE llc not -1 nor a dense LLC id. Any thread. */
PLACE_EXTERN int place_stats_read(const place *p, int llc, place_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* PLACE_H */
