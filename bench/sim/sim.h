/*
 * place-sim: a deterministic discrete-event model of a big machine that
 * drives the real libplace through its public API with a virtual clock.
 *
 * The model, in one paragraph. Each simulated CPU has one pinned worker with
 * a FIFO run queue and runs at most one task at a time. A task alternates
 * bursts of CPU work with sleeps; the workload (hackbench, schbench, ...)
 * decides at the end of each burst whether the task continues, sleeps or
 * exits, and whom it wakes. A wakeup asks the policy (libplace, or a baseline
 * written here) for a CPU and queues the task there; an idle CPU starts it
 * after the wakeup latency, a busy one when the queue gets to it. Two busy SMT
 * siblings each run at smt_factor of full speed. A task that lands in another
 * LLC (or node) than it last ran in pays a cache-refill penalty as extra work.
 * Nothing depends on host time except the optional host-ns column, so the same
 * seed gives the same output bytes.
 *
 * Indexing: "cpu" here is a dense index 0 .. nr_cpus-1 in ascending OS CPU
 * number; only the libplace adapter converts to OS numbers.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_SIM_H
#define PLACE_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "place.h"

/* ------------------------------------------------------------------------ */
/* Machine: the topology flattened from place_topo's public accessors.       */

struct sim_machine {
	int nr_cpus, nr_cores, nr_llcs, nr_nodes;
	int cpu_limit;  /* largest OS CPU number + 1 */
	int *os;        /* [nr_cpus] dense -> OS CPU number */
	int *dense;     /* [cpu_limit] OS -> dense, -1 if not usable */
	int *core;      /* [nr_cpus] libplace's dense core id */
	int *llc;       /* [nr_cpus] dense LLC id */
	int *node;      /* [nr_cpus] dense node id */
	int *core_start, *core_cpus; /* CSR: the CPUs of each core */
	int *llc_start, *llc_cpus;   /* CSR: the CPUs of each LLC */
	int *core_llc;  /* [nr_cores] */
	int *llc_cores; /* [nr_llcs] number of cores in each LLC */
	int *steal;     /* [nr_cpus * nr_cpus] row c: c's victims, nearest first (dense) */
	int *nsteal;    /* [nr_cpus] length of each row */
	/* [nr_nodes * nr_nodes] what a move from node a to b costs, in
	 * thousandths of node_penalty_ns (the nearest other node's): hwloc's
	 * latency over local, against the nearest's (all 1000 without a matrix). */
	int *node_cost;
	bool node_scaled; /* some node_cost is not 1000: the topology has latencies */
};

/* Fill m from topo. Returns 0 or a negative errno. */
int sim_machine_init(struct sim_machine *m, const place_topo *topo);
void sim_machine_fini(struct sim_machine *m);

/* ------------------------------------------------------------------------ */
/* Deterministic PRNG (splitmix64): the same seed, the same stream.          */

static inline uint64_t sim_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0 (the modulo bias is irrelevant here). */
static inline uint32_t sim_rand_below(uint64_t *state, uint32_t n)
{
	return (uint32_t)(sim_rand(state) % n);
}

/* ------------------------------------------------------------------------ */
/* Event queue: a binary min-heap ordered by (time, insertion sequence), so
 * that simultaneous events always pop in the same order.                    */

enum sim_ev_type {
	SIM_EV_WAKE_DONE, /* a parked worker finished waking up: a = cpu */
	SIM_EV_BURST_END, /* the task running on cpu a ends its burst (gen b) */
	SIM_EV_TIMER,     /* the sleep of task a ends: a timer (no worker) wakes it */
};

struct sim_event {
	uint64_t time;
	uint64_t seq;
	int type;
	int a;
	unsigned b;
};

struct sim_heap {
	struct sim_event *ev;
	size_t len, cap;
	uint64_t seq;
};

int sim_heap_push(struct sim_heap *h, uint64_t time, int type, int a, unsigned b);
bool sim_heap_pop(struct sim_heap *h, struct sim_event *out);
void sim_heap_fini(struct sim_heap *h);

/* ------------------------------------------------------------------------ */
/* Tasks and CPUs                                                            */

enum sim_task_state { SIM_SLEEPING, SIM_QUEUED, SIM_RUNNING, SIM_EXITED };

/* What a task does when its burst ends (returned by the workload). */
enum sim_action { SIM_CONTINUE, SIM_SLEEP, SIM_EXIT };

struct sim_task {
	place_task pt;        /* libplace's record, embedded as a runtime would */
	int id;
	int wl;               /* index of its workload in sim.wl[] */
	int role;             /* workload-defined */
	int state;            /* enum sim_task_state */
	int cpu;              /* where it is queued or running, -1 when sleeping */
	int last_cpu;         /* where it last ran, -1 before its first run */
	int next;             /* run-queue link (task id), -1 at the tail */
	bool woken;           /* queued by a wakeup (not a preemption): latency counts */
	uint64_t wake_time;   /* virtual ns of the wakeup */
	uint64_t work;        /* remaining work of the current burst, milli-ns at full speed */
	uint64_t debt;        /* extra work for the next burst (refill penalty, decision cost) */
	uint64_t exit_ns;     /* when it exited (virtual ns), 0 while it lives */
	uint64_t run_ns, smt_ns; /* time it ran, and ran beside a busy SMT sibling */
	uint64_t slice_start; /* when it last got the CPU, for preemption */
	uint64_t cookie;      /* its core-scheduling cookie (the simulator's own copy) */
	uint32_t group;       /* its NUMA group, 0 = none */
	int waker_node;       /* node of the CPU that woke it last, -1 = no worker */
	/* Workload state. */
	int peer;             /* pingpong partner, schbench message thread, hackbench group */
	int idx;              /* index within its group */
	int64_t count;        /* progress counter */
	int64_t aux;
	int wait_next;        /* hackbench: next sender blocked on the same receiver */
};

struct sim_cpu {
	int cur;          /* running task, -1 when none */
	int qhead, qtail; /* FIFO of queued task ids, -1 when empty */
	int qlen;
	bool waking;      /* its parked worker is being woken (wakeup latency) */
	bool idle;        /* no task running or queued, not woken to steal */
	bool forced;      /* forced idle: tasks queued, none admitted (place_run_begin -EBUSY) */
	bool kicked;      /* waking to steal, no task delivered (--kick): its claim to release */
	uint64_t cookie;  /* cookie of cur */
	uint64_t forced_since;
	unsigned gen;     /* invalidates a stale SIM_EV_BURST_END */
	unsigned rate;    /* speed of cur, per mille of full speed */
	uint64_t since;   /* when cur's progress was last accounted */
	uint64_t burst_end; /* when cur's burst ends at the current rate */
	uint64_t parked_at; /* when its worker last parked */
};

/* ------------------------------------------------------------------------ */
/* Policies: libplace configurations and the baselines runtimes use today.   */

enum sim_pol_kind { SIM_POL_PLACE, SIM_POL_LIFO, SIM_POL_RANDOM };

struct sim_policy_spec {
	char name[48];
	int kind;          /* enum sim_pol_kind */
	int policy;        /* enum place_policy, for SIM_POL_PLACE */
	unsigned features; /* PLACE_FEAT_*, for SIM_POL_PLACE */
};

/* Parse "all" or a comma list of NAME[-feat|+feat...] with NAME one of
 * sis_core, linear, exact, lifo, random and feat one of claim, scan_sibling,
 * short_affine, wake_wide, sis_util, cookies, numa. Returns the count (<= max) or -EINVAL
 * with a message on stderr. */
int sim_policy_parse(const char *list, struct sim_policy_spec *out, int max);

struct sim;

/* A policy instance for one run. */
struct sim_pol {
	struct sim_policy_spec spec;
	struct sim *sim;
	place *place;       /* SIM_POL_PLACE */
	/* Baselines: the set of idle CPUs, as an array with positions, which
	 * gives LIFO order (top = most recently idled) and O(1) random pick
	 * and removal. */
	int *idle;          /* [nr_cpus] */
	int *pos;           /* [nr_cpus] index in idle[], -1 when absent */
	int nidle;
};

int sim_pol_init(struct sim_pol *pp, struct sim *s, const struct sim_policy_spec *spec);
void sim_pol_fini(struct sim_pol *pp);
/* The CPU for t woken by waker (dense, -1 = none). Negative errno on failure. */
int sim_pol_select(struct sim_pol *pp, struct sim_task *t, int waker, unsigned flags);
int sim_pol_idle_enter(struct sim_pol *pp, int cpu);
int sim_pol_run_begin(struct sim_pol *pp, int cpu, struct sim_task *t);
/* May cpu's thief take t (place_steal_check): 0, or why not. */
int sim_pol_steal_check(struct sim_pol *pp, int cpu, struct sim_task *t);
/* run_begin refused t on cpu: where t waits instead (place_run_refused),
 * cpu itself when nothing fits better. */
int sim_pol_run_refused(struct sim_pol *pp, int cpu, struct sim_task *t);
/* The run of t on cpu ended: the SMT siblings of cpu that a cookie left
 * forced idle and that may retry now (libplace's place_run_end_retry), at
 * most max of them into retry (dense); returns their count or an error. */
int sim_pol_run_end(struct sim_pol *pp, int cpu, struct sim_task *t, unsigned how, int *retry, int max);
/* libplace's counters (zeros for the baselines). */
void sim_pol_stats(const struct sim_pol *pp, place_stats *out);
/* A parked worker near cpu to wake as a thief, its CPU spoken for (libplace:
 * place_idle_near, claimed; the baselines: their own pick from their idle
 * list), -EAGAIN none; sim_pol_kicked() when it wakes (the claim given back). */
int sim_pol_kick(struct sim_pol *pp, int cpu);
int sim_pol_kicked(struct sim_pol *pp, int cpu);

/* ------------------------------------------------------------------------ */
/* Parameters                                                                */

enum sim_wl_kind {
	SIM_WL_HACKBENCH, SIM_WL_SCHBENCH, SIM_WL_PINGPONG, SIM_WL_STREAM, SIM_WL_TENANTS, SIM_WL_GROUPS,
	SIM_WL_NR
};

struct sim_params {
	/* Machine model. */
	unsigned smt_permille;     /* speed of each of two busy siblings, per mille */
	uint64_t wake_ns;          /* latency to wake a parked worker */
	uint64_t deep_idle_ns;     /* parked this long: a deep idle state (0 = no such state) */
	uint64_t deep_wake_ns;     /* ... which adds this to the wakeup latency */
	uint64_t llc_penalty_ns;   /* refill after a cross-LLC migration */
	uint64_t node_penalty_ns;  /* refill after a cross-node migration (instead) */
	uint64_t probe_ns;         /* simulated cost per CPU probed by a decision */
	uint64_t decision_ns;      /* simulated base cost of a decision */
	uint64_t slice_ns;         /* preempt a task after this when others wait */
	uint64_t max_time_ns;      /* stop a run at this virtual time (0 = none) */
	unsigned jitter_pct;       /* +- random spread of burst lengths */
	bool steal;                /* an idle worker steals nearest-first before parking */
	bool kick;                 /* with steal: a wakeup queued behind a running task wakes a
	                            * parked worker near it to steal (sim_pol_kick) */
	uint64_t seed;
	/* Workloads (enabled[] says which run together). */
	bool enabled[SIM_WL_NR];
	int hb_groups, hb_senders, hb_receivers, hb_loops, hb_pipe;
	uint64_t hb_send_ns, hb_recv_ns;
	int sb_msg_threads, sb_workers, sb_rounds;
	uint64_t sb_work_ns, sb_msg_ns;
	int pp_pairs, pp_rounds;
	uint64_t pp_run_ns;
	int st_threads, st_iters;
	uint64_t st_burst_ns;
	int tn_tenants, tn_tasks, tn_rounds;  /* tenants: cookies 1..tn_tenants */
	uint64_t tn_work_ns, tn_sleep_ns;
	int gr_groups, gr_tasks, gr_tokens, gr_hops; /* groups: NUMA groups 1..gr_groups */
	uint64_t gr_work_ns;
	uint64_t gr_xnode_ns;      /* a grouped task started on another node than its waker's
				    * refills the group's shared data from there */
	uint64_t numa_cooldown_ns; /* place_config's, passed as they are (0 = no cool-down) */
	int numa_move_cap;
};

void sim_params_default(struct sim_params *p);
/* Enable the workloads that name stands for (hackbench, schbench, pingpong,
 * stream, mix, tenants, groups) and say which parameter a load sweep varies.
 * -EINVAL when the name is unknown. */
int sim_workload_select(struct sim_params *p, const char *name, const char **load_name);
/* Set or get the parameter named by load_name (groups, workers, pairs,
 * threads, tenant-tasks, numa-groups). */
void sim_set_load(struct sim_params *p, const char *load_name, int value);
int sim_get_load(struct sim_params *p, const char *load_name);

/* ------------------------------------------------------------------------ */
/* Results of one run (one load level, one policy).                          */

struct sim_result {
	char policy[48];
	int load;
	int nr_cpus;
	bool ok;                   /* false: the run stopped early (max time) */
	uint64_t makespan_ns;      /* virtual time when the last task exited */
	uint64_t units;            /* work units completed (messages, requests, hops, iterations) */
	uint64_t tasks, exited;
	uint64_t sent, delivered;  /* messages (conservation check) */
	uint64_t wakeups, run_starts;
	uint64_t lat_p50, lat_p99, lat_p999, lat_max; /* virtual ns */
	double util;               /* busy CPU time / (cpus * makespan) */
	/* Exit times of roles 0 and 1 (hackbench: senders, receivers; schbench:
	 * message threads, workers), virtual ns: [role][k], k = EXIT_TASKS (how
	 * many exited), then the first, 10th, 50th, 90th percentile and last;
	 * how often their tasks went to sleep, how long they ran (all of them),
	 * and beside a busy SMT sibling; how many ran so more than half the time. */
	uint64_t exits[2][6];
	uint64_t sleeps[2], run_ns[2], smt_ns[2], paired[2];
	/* The last exit of the role that finished last over that of the role
	 * that finished first (tenants: the slowest tenant against the
	 * fastest; 1.0 when every tenant got its share), 0 when fewer than two
	 * roles had a task exit. */
	double role_spread;
	uint64_t idle_core_misses; /* started beside a busy sibling while an idle core existed in the LLC */
	uint64_t stack_llc;        /* queued behind another while a CPU of that LLC was idle
				    * (a sync wakeup onto the sleeping waker's CPU is not) */
	uint64_t stack_any;        /* ... while any CPU of the machine was idle */
	uint64_t cross_llc, cross_node;
	uint64_t steals;
	uint64_t kicks;            /* parked workers woken to steal (--kick) */
	/* Core scheduling, as the simulator sees it (not libplace's counters). */
	uint64_t refusals;         /* place_run_begin -EBUSY */
	uint64_t forced_ns;        /* CPU time forced idle: tasks queued, none admitted */
	uint64_t replaced;         /* refused tasks that place_run_refused moved to another CPU */
	uint64_t violations;       /* run starts beside a sibling running another cookie */
	uint64_t violation_ns;     /* core time with two cookies running at once */
	/* NUMA. */
	uint64_t xnode_wakeups;    /* woken by a worker of one node, started on another */
	double node_imbalance;     /* busiest node's CPU time / the nodes' mean - 1 */
	uint64_t host_ns;          /* host time inside policy decisions */
	uint64_t decisions;
	uint64_t events;
	place_stats st;
};

/* ------------------------------------------------------------------------ */
/* The simulation                                                            */

struct sim_wl;

struct sim {
	const place_topo *topo;
	const struct sim_machine *m;
	const struct sim_params *prm;
	struct sim_pol pol;
	struct sim_heap heap;
	struct sim_cpu *cpu;     /* [nr_cpus] */
	struct sim_task *task;   /* [nr_tasks] */
	int nr_tasks, live;
	uint64_t now;
	uint64_t rng;            /* the workloads' stream (burst jitter) */
	uint64_t pol_rng;        /* the RANDOM baseline's own stream, so that it does
				  * not shift the workloads' (common random numbers) */
	/* Idle accounting, for the misses and stacking metrics. */
	int *core_busy;          /* [nr_cores] non-idle CPUs of each core */
	int *core_running;       /* [nr_cores] CPUs of each core running a task */
	int *llc_idle_cpus;      /* [nr_llcs] */
	int *llc_idle_cores;     /* [nr_llcs] */
	int idle_cpus;
	uint64_t busy_ns;        /* CPU time spent running */
	uint64_t *node_busy_ns;  /* [nr_nodes] */
	uint64_t *mixed_since;   /* [nr_cores] since when two cookies run on it, UINT64_MAX = not now */
	uint64_t probed;         /* libplace's cpus_probed at the last decision */
	/* Latency samples. */
	uint64_t *lat;
	size_t nlat, lat_cap;
	/* Workloads. */
	struct sim_wl *wl[SIM_WL_NR];
	int nr_wl;
	struct sim_result res;
	bool host_time;
	int error;               /* first failure, negative errno */
	/* Progress on stderr (NULL = none). */
	void (*progress)(void *arg, const struct sim *s);
	void *progress_arg;
};

/* A workload: creates its tasks, reacts to burst ends. */
struct sim_wl_ops {
	const char *name;
	/* Count the tasks it needs. */
	int (*nr_tasks)(const struct sim_params *p);
	/* Initialise tasks [first, first+n) and wake the initial ones. */
	int (*start)(struct sim *s, struct sim_wl *w);
	/* t's burst ended on cpu: set t->work for a next burst and return what t does. */
	int (*burst_end)(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu);
	void (*fini)(struct sim_wl *w);
};

struct sim_wl {
	const struct sim_wl_ops *ops;
	int first, n;            /* its task ids */
	void *priv;
};

extern const struct sim_wl_ops sim_wl_hackbench, sim_wl_schbench, sim_wl_pingpong, sim_wl_stream,
	sim_wl_tenants, sim_wl_groups;

/* Run one simulation: params, one policy, fill *res. 0 or a negative errno. */
int sim_run(const place_topo *topo, const struct sim_machine *m, const struct sim_params *prm,
	    const struct sim_policy_spec *spec, bool host_time, struct sim_result *res,
	    void (*progress)(void *, const struct sim *), void *progress_arg);

/* For workloads. */
/* Make t runnable: ask the policy for a CPU and queue it there. waker is
 * the dense CPU of the waking task, -1 for none. */
int sim_wake(struct sim *s, struct sim_task *t, int waker, unsigned flags);
/* A burst length of base ns with the configured jitter, in milli-ns. */
uint64_t sim_burst(struct sim *s, uint64_t base_ns);
/* t, which is going to sleep, is woken by a timer (waker none) after
 * base_ns with the configured jitter. */
int sim_sleep_for(struct sim *s, struct sim_task *t, uint64_t base_ns);

/* ------------------------------------------------------------------------ */
/* Reports                                                                   */

/* COOKIES and NUMA are tables of their own columns (core scheduling, NUMA
 * groups), what "table" means for the tenants and groups workloads. */
enum sim_format {
	SIM_FMT_TABLE, SIM_FMT_TSV, SIM_FMT_JSON, SIM_FMT_BRIEF, SIM_FMT_NONE, SIM_FMT_COOKIES, SIM_FMT_NUMA,
	SIM_FMT_EXITS
};
enum { EXIT_TASKS, EXIT_FIRST, EXIT_P10, EXIT_P50, EXIT_P90, EXIT_LAST };

/* The readable tables' policy column: as wide as the longest name, at least 22. */
int sim_report_name_width(const struct sim_policy_spec *pol, int np);
void sim_report_header(FILE *f, int fmt, const char *what, int name_w);
void sim_report_row(FILE *f, int fmt, int name_w, const struct sim_result *r, const struct sim_result *ref,
		    bool first);
void sim_report_footer(FILE *f, int fmt);
/* What the columns of a readable table mean; load_what names the load. */
void sim_report_legend(FILE *f, int fmt, const char *load_what);

#endif /* PLACE_SIM_H */
