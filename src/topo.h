/*
 * The flattened topology, as src/topo.c builds it from hwloc and the rest of
 * libplace reads it. Immutable after place_topo_load(): readers need no
 * synchronisation. Nothing here refers to hwloc.
 *
 * Indexing. "cpu" in this file is a dense index 0 .. nr_cpus-1, in ascending
 * OS CPU number (dense i is place_topo_cpu(topo, i)). os_of[] and dense_of[]
 * convert. Cores, LLCs, nodes and packages have dense ids too, numbered in
 * order of their first CPU in hwloc's logical order.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_TOPO_H
#define PLACE_TOPO_H

#include "place.h"

struct place_topo_cpu {
	int core;       /* dense core id */
	int llc;        /* dense LLC domain id */
	int node;       /* dense node id */
	int package;    /* dense package id, -1 when the machine has none */
	int llc_pos;    /* position of this CPU in its LLC's llc_cpus[] slice */
	int core_pos;   /* position of this CPU in its core's core_cpus[] slice */
	int llc_level;  /* see place_cpu_info */
	int llc_kind;   /* enum place_llc_kind */
	int hw_core;    /* hwloc identifiers, see place_cpu_info */
	int hw_llc;
	int hw_node_os;
	int hw_package;
	int cluster;    /* dense cluster id, -1 when none (see below) */
};

struct place_topo {
	char *source;           /* what was loaded, for messages */
	int nr_cpus;            /* usable CPUs */
	int cpu_limit;          /* largest usable OS number + 1 */
	int nr_cores;
	int nr_llcs;
	int nr_nodes;
	int nr_packages;
	/* Clusters (the kernel's SD_CLUSTER): a cache below the LLC (or an hwloc
	 * Group, as ARM's "Cluster") shared by more than one core of the LLC
	 * and not by all of them; a CPU's cluster is the lowest such object
	 * above its core. CPUs in none have cluster -1. */
	int nr_clusters;
	int *os_of;             /* [nr_cpus]   dense cpu -> OS number, ascending */
	int *dense_of;          /* [cpu_limit] OS number -> dense cpu, -1 if unusable */
	struct place_topo_cpu *cpu; /* [nr_cpus] */
	/* CSR layouts: the CPUs of core c are core_cpus[core_start[c] .. core_start[c+1]-1],
	 * ascending OS number; the CPUs of LLC l are llc_cpus[llc_start[l] .. llc_start[l+1]-1],
	 * grouped core by core (SMT siblings adjacent), cores in dense order. */
	int *core_start;        /* [nr_cores + 1] */
	int *core_cpus;         /* [nr_cpus] */
	int *core_llc;          /* [nr_cores] LLC of each core */
	int *llc_start;         /* [nr_llcs + 1] */
	int *llc_cpus;          /* [nr_cpus] */
	int *node_os;           /* [nr_nodes] OS index of each node, -1 for a stand-in node */
	/* hwloc's NUMA latency matrix (NUMALatency: 10 local, as ACPI SLIT),
	 * from node a to node b at [a * nr_nodes + b], 0 where hwloc has no
	 * value; NULL when it has none (every other node as far). */
	int *node_dist;
};

/* Deep copy (for an instance that outlives the caller's topology). NULL on ENOMEM. */
struct place_topo *place__topo_dup(const struct place_topo *t);

/* Number of CPUs of core c / LLC l. */
static inline int place__core_weight(const struct place_topo *t, int c)
{
	return t->core_start[c + 1] - t->core_start[c];
}

static inline int place__llc_weight(const struct place_topo *t, int l)
{
	return t->llc_start[l + 1] - t->llc_start[l];
}

/* Thread-local error detail (src/error.c). printf-like; returns err. */
int place__fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void place__clear_error(void);

/* A hot path's failure detail, kept as a code and two numbers and formatted
 * only by place_last_error() (src/error.c): the error path pays two
 * thread-local stores, success nothing. Returns err. */
enum place_why {
	PLACE_WHY_NONE,
	PLACE_WHY_RUNNING,        /* run_begin: cpu still runs a task */
	PLACE_WHY_COOKIE,         /* run_begin: cpu's core runs another cookie, or drains */
	PLACE_WHY_SWITCH,         /* run_switch: the core's siblings decide (two calls) */
	PLACE_WHY_END_NONE,       /* run_end: cpu runs nothing */
	PLACE_WHY_END_OTHER,      /* run_end: cpu runs another task */
	PLACE_WHY_END_ELSEWHERE,  /* run_end: cpu runs another task, t runs on arg */
	PLACE_WHY_END_HOW,        /* run_end: unknown how (arg) */
	PLACE_WHY_WOKEN_RUNNING,  /* wakeup: t still runs on cpu */
	PLACE_WHY_NO_WORKER,      /* wakeup: no worker registered on the instance */
	PLACE_WHY_NONE_ALLOWED    /* wakeup: no registered worker allowed for t */
};
int place__why(int err, int why, int cpu, int arg) __attribute__((cold, noinline));

#endif /* PLACE_TOPO_H */
