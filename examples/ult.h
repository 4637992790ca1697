/*
 * ult: a small user-level-thread runtime on libplace. An example to copy
 * from, beside examples/pool.c (which runs actors to completion): here a
 * task is a ULT with its own stack (ucontext) that blocks and resumes.
 *
 * - One worker thread per usable CPU (pinned), each with a pool (a queue
 *   under a mutex) and a runnext slot; an idle worker steals from the
 *   others in place_steal_order() (nearest first), then parks.
 * - A woken ULT (blocked, then set free) goes where place_wakeup() says. A
 *   ULT spawned by a ULT is work-first, as in Argobots or TBB: it waits in
 *   the spawner's pool (its first place_run_begin, wherever it runs, needs
 *   no wakeup) while the parent runs on; place_wakeup with PLACE_WAKE_NEW
 *   placed it on the other CPU and cost fork-join 15-20% (place-ultbench
 *   fib, 2 CPUs). A worker whose pool holds a second ULT wakes a parked
 *   thief near it (place_idle_near).
 * - Futures: a ULT blocks on one (ult_future_get) and is woken by its set;
 *   ult_join is a future. A set with ULT_HANDOFF hands the CPU over: the
 *   waiter is woken with PLACE_WAKE_CURRENT into the setter's runnext, and
 *   when the setter blocks, yields or exits, the worker goes straight to it
 *   with place_run_switch() and swapcontext(), without the worker loop.
 * - ULT_MODE_LIFO: the same runtime without libplace: a woken ULT goes to
 *   the waker's pool (or worker 0's from outside) and the most recently
 *   parked worker is woken, the policy of Tokio and others (for comparison).
 *
 * Use:
 *     static void child(ult *self, void *arg) { ... }
 *     static void root(ult *self, void *arg)
 *     {
 *             ult *c = ult_spawn(self, rt, child, arg);    // fork
 *             ...
 *             ult_join(self, c);                           // join: blocks this ULT
 *     }
 *     ult_rt_create(&rt, NULL);
 *     ult *r = ult_spawn(NULL, rt, root, NULL);            // from a thread that is no ULT
 *     ult_join(NULL, r);                                   // that thread waits
 *     ult_rt_destroy(rt);
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_EXAMPLE_ULT_H
#define PLACE_EXAMPLE_ULT_H

#include <pthread.h>
#include <stdint.h>

#include "place.h"

typedef struct ult_rt ult_rt;
typedef struct ult ult;

/* A ULT's body. self is the ULT (pass it to the calls below). */
typedef void (*ult_fn)(ult *self, void *arg);

enum ult_mode { ULT_MODE_PLACE = 0, ULT_MODE_LIFO = 1 };

struct ult_config {
	const char *topology;  /* place_topo_load() source: NULL = this machine */
	int mode;              /* enum ult_mode */
	int max_workers;       /* at most this many workers, the first CPUs (0 = all) */
	int no_pin;            /* do not pin workers */
	size_t stack_size;     /* per ULT (0 = 64 KiB) */
};

/* A value set once, awaited by at most one waiter (a ULT or a thread). */
typedef struct ult_future {
	pthread_mutex_t lock;
	pthread_cond_t cond;   /* a waiter that is no ULT */
	int done;
	void *value;
	ult *waiter;           /* a blocked ULT, published after its run ended */
} ult_future;

#define ULT_HANDOFF 1u /* ult_future_set: the waiter runs next on this CPU */

int ult_rt_create(ult_rt **out, const struct ult_config *cfg);

/* Start fn(new, arg). self: the spawning ULT, or NULL from a thread that is
 * no ULT. Returns the ULT (join it exactly once), NULL when out of memory. */
ult *ult_spawn(ult *self, ult_rt *rt, ult_fn fn, void *arg);

/* Wait until u returned, then free it. self as for ult_spawn. */
void ult_join(ult *self, ult *u);

/* Let the other ULTs of this worker run (self stays runnable here). */
void ult_yield(ult *self);

void ult_future_init(ult_future *f);
void ult_future_destroy(ult_future *f);
/* self NULL: from a thread that is no ULT (flags are ignored). */
void ult_future_set(ult *self, ult_future *f, void *value, unsigned flags);
void *ult_future_get(ult *self, ult_future *f);

/* The CPU that runs self now. */
int ult_cpu(const ult *self);

struct ult_stats {
	uint64_t runs;      /* ULT resumes (worker loop and direct switches) */
	uint64_t switches;  /* of those, direct switches (place_run_switch) */
	uint64_t steals;    /* ULTs taken from another worker's pool */
	uint64_t parks;
};

void ult_stats_read(ult_rt *rt, struct ult_stats *out);
place *ult_place(ult_rt *rt); /* NULL in LIFO mode */

/* Wait until every ULT has returned, stop and join the workers, free rt. */
void ult_rt_destroy(ult_rt *rt);

#endif /* PLACE_EXAMPLE_ULT_H */
