/*
 * pool: a small pinned thread pool that asks libplace where each woken task
 * runs. An example to copy from: one worker pinned per usable CPU, a bounded
 * lock-free queue per worker (Concurrency Kit ck_ring, MPMC so that idle
 * workers can steal), parking on a futex, idle and run edges reported to
 * libplace, stealing when idle in place_steal_order() (nearest first), a
 * runnext slot for sync wakeups to the waker's own worker, a run that ends
 * by place_run_switch to the next task the worker takes, core-scheduling
 * cookies honoured (a task refused by place_run_begin goes where
 * place_run_refused says, or waits on its worker until place_run_end_retry
 * names that CPU), and a clean shutdown.
 *
 * Tasks are actors: a task is woken (pool_wake) when it has something to
 * do; the pool runs its function on one worker; the function returns
 * POOL_SLEEP (wake me again later) or POOL_DONE (never run me again). A wake
 * while the task is queued is absorbed; a wake while it runs makes it run
 * once more afterwards. So a task never runs on two workers at once and a
 * wake is never lost. This is the state machine of Tokio's tasks, and it is
 * what lets place_task's "one wakeup or run edge at a time" hold.
 *
 * The same pool can wake the most recently parked worker instead
 * (POOL_WAKE_LIFO), the policy of Tokio, oneTBB and folly, for comparison.
 *
 * Use:
 *     struct job { pool_task task; ... };          // the pool_task first
 *     static int job_run(pool_task *t, int cpu)    // on the worker of cpu
 *     {
 *             struct job *j = (struct job *)t;
 *             ...                                  // pool_wake(p, &other->task, cpu, 0)
 *             return POOL_SLEEP;                   // or POOL_DONE
 *     }
 *     pool_create(&p, NULL);                       // one pinned worker per CPU
 *     pool_task_init(&j->task, job_run, NULL);
 *     pool_wake(p, &j->task, PLACE_CPU_NONE, 0);   // from a thread that is no worker
 *     pool_destroy(p);                             // runs what is queued, joins
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_EXAMPLE_POOL_H
#define PLACE_EXAMPLE_POOL_H

#include <stdint.h>

#include "place.h"

typedef struct pool pool;
typedef struct pool_task pool_task;

enum pool_ret { POOL_SLEEP = 0, POOL_DONE = 1 };

/* Run t on the worker of cpu. Return POOL_SLEEP or POOL_DONE. After
 * POOL_DONE the pool never touches t again: the function may free it. */
typedef int (*pool_fn)(pool_task *t, int cpu);

struct pool_task {
	place_task place;      /* libplace's record (its data field is free) */
	pool_fn fn;
	void *arg;             /* free for the caller */
	uint64_t woken_ns;     /* read-only: CLOCK_MONOTONIC of the wake that queued this run */
	/* private */
	unsigned state;        /* IDLE, QUEUED, RUNNING, NOTIFIED, DONE */
	int flags;             /* PLACE_WAKE_* of a hand-off in runnext libplace has not seen, 0 none */
	pool_task *next;       /* overflow list link */
};

enum pool_wake_mode {
	POOL_WAKE_PLACE = 0,   /* place_wakeup() decides (default) */
	POOL_WAKE_LIFO = 1     /* the most recently parked worker, else the waker's queue */
};

struct pool_config {
	const char *topology;  /* place_topo_load() source: NULL = this machine */
	int mode;              /* enum pool_wake_mode */
	const place_config *place; /* NULL = libplace's defaults; PLACE_RUNTIME_THIEVES is added */
	unsigned queue_size;   /* per-worker ring slots, a power of two >= 4 (0 = 1024) */
	int max_workers;       /* at most this many workers, the first CPUs (0 = all) */
	int no_pin;            /* do not pin workers (a modelled topology on this machine) */
};

/* Initialise a task. fn runs it; arg is the caller's. */
void pool_task_init(pool_task *t, pool_fn fn, void *arg);

/* Start the workers. cfg NULL = defaults. Returns 0, or a negative errno:
 * the errors of place_topo_load/place_create/place_worker_register, -EINVAL
 * for a bad queue_size or mode, -ENOMEM, or pthread_create's error. */
int pool_create(pool **out, const struct pool_config *cfg);

/* Make t runnable. waker_cpu: the cpu argument of the running task that
 * wakes t, or PLACE_CPU_NONE from a thread that is no worker. flags:
 * PLACE_WAKE_SYNC when the waker is about to return POOL_SLEEP;
 * PLACE_WAKE_CURRENT (a waker only) when t should run next on this CPU
 * once the waker returns (a hand-off: both go to the runnext slot);
 * PLACE_WAKE_NEW for a task the running task just created (near it; add
 * PLACE_WAKE_SPREAD for a long-lived one).
 * 0, or -EINVAL (t is done), or place_wakeup's error. Any thread, until
 * pool_destroy() starts; from tasks, also while it drains. */
int pool_wake(pool *p, pool_task *t, int waker_cpu, unsigned flags);

/* Number of workers, and the OS CPU of worker i. */
int pool_nr_workers(const pool *p);
int pool_worker_cpu(const pool *p, int i);

/* The pool's libplace instance (NULL in LIFO mode): for place_stats_read. */
place *pool_place(pool *p);

struct pool_stats {
	uint64_t runs;     /* task runs */
	uint64_t steals;   /* runs of a task taken from another worker's queue */
	uint64_t parks;    /* futex waits */
	uint64_t overflow; /* wakes that found the chosen queue full */
	uint64_t switches; /* runs begun by place_run_switch: a hand-off from the runnext slot */
	uint64_t handoffs; /* of those, begun by place_run_handoff: its wakeup told at the switch */
};

/* Sum of the workers' counters (read without stopping them). */
void pool_stats_read(const pool *p, struct pool_stats *out);

/* Wait until every woken task has run and every running one has returned,
 * then stop and join the workers and free the pool. Tasks that are still
 * runnable are run first (they may wake others: those run too). NULL ok. */
void pool_destroy(pool *p);

#endif /* PLACE_EXAMPLE_POOL_H */
