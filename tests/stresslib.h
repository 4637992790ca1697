/*
 * Shared by the threaded stress suites (test_cookie_stress, test_engine_stress,
 * test_reconf_stress, test_invariants): the oracle's task queues, the
 * suites' random numbers, a wall clock, and the first-failure-wins message
 * a worker thread leaves for the main thread to assert on.
 *
 * None of this is what the suites test: the queues take a mutex on purpose,
 * so that only libplace's paths are lock-free. Everything here is static
 * inline, as in testlib.h.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_STRESSLIB_H
#define PLACE_STRESSLIB_H

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "place.h"

/*
 * A bounded stack of task indexes behind a mutex. Any thread may push and
 * pop concurrently; n and item[] are written and read under lock only,
 * except by the main thread once every worker has been joined (pthread_join
 * orders the workers' last writes before those reads). cap is fixed at init.
 */
struct stress_queue {
	pthread_mutex_t lock;
	int n, cap;
	int *item; /* [cap] */
};

/* An empty queue for up to cap tasks; false if out of memory. */
static inline bool stress_queue_init(struct stress_queue *q, int cap)
{
	pthread_mutex_init(&q->lock, NULL);
	q->n = 0;
	q->cap = cap;
	q->item = calloc((size_t)cap, sizeof(int));
	return q->item != NULL;
}

/* Not concurrently with any other call on q. */
static inline void stress_queue_free(struct stress_queue *q)
{
	pthread_mutex_destroy(&q->lock);
	free(q->item);
	q->item = NULL;
}

/* Push task i; false (and q unchanged) when q is full, which a suite that
 * keeps each task in one queue at most, with cap = its task count, never sees. */
static inline bool stress_queue_push(struct stress_queue *q, int i)
{
	bool ok;

	pthread_mutex_lock(&q->lock);
	ok = q->n < q->cap;
	if (ok)
		q->item[q->n++] = i;
	pthread_mutex_unlock(&q->lock);
	return ok;
}

/* Pop the task pushed last, or -1 when q is empty. */
static inline int stress_queue_pop(struct stress_queue *q)
{
	int i = -1;

	pthread_mutex_lock(&q->lock);
	if (q->n)
		i = q->item[--q->n];
	pthread_mutex_unlock(&q->lock);
	return i;
}

/* The next of a per-thread linear congruential sequence (15 bits): cheap,
 * and the same seed gives the same operation mix on every run. */
static inline unsigned stress_rand(unsigned *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 16;
}

/* A non-worker waker's loop (PLACE_CPU_NONE): until *stop, wake whatever
 * the workers put to sleep in *sleeping, with the suite's own wake(). */
static inline void stress_wake_sleepers(atomic_int *stop, struct stress_queue *sleeping,
					void (*wake)(int i, int waker, unsigned *seed), unsigned seed)
{
	while (!atomic_load(stop)) {
		int i = stress_queue_pop(sleeping);

		if (i < 0)
			sched_yield();
		else
			wake(i, PLACE_CPU_NONE, &seed);
	}
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t stress_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Record a failure from any thread: the first caller (the seq_cst exchange
 * on *failed elects exactly one) formats the message into why[size]; later
 * ones only find *failed set. Workers poll *failed to stop early; the main
 * thread reads why only after joining them.
 */
__attribute__((format(printf, 4, 5))) static inline void
stress_fail(atomic_int *failed, char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(failed, 1) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
}

#endif
