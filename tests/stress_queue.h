/*
 * Shared by the threaded engine suites (test_engine_stress,
 * test_cookie_stress, test_reconf_stress): the test's own task queues, a
 * bounded stack of task indexes behind a mutex (only libplace's paths are
 * lock-free; the queues are the runtime the tests pretend to be), the
 * per-thread random numbers and the wall clock that bounds a run. Include
 * after defining NTASK, the capacity.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_TEST_STRESS_QUEUE_H
#define PLACE_TEST_STRESS_QUEUE_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#ifndef NTASK
#error "define NTASK (the number of tasks, each queue's capacity) before stress_queue.h"
#endif

struct queue {
	pthread_mutex_t lock;
	int n, item[NTASK];
};

static inline void push(struct queue *q, int i)
{
	pthread_mutex_lock(&q->lock);
	q->item[q->n++] = i;
	pthread_mutex_unlock(&q->lock);
}

/* The last task pushed, or -1 when q is empty. */
static inline int pop(struct queue *q)
{
	int i = -1;

	pthread_mutex_lock(&q->lock);
	if (q->n)
		i = q->item[--q->n];
	pthread_mutex_unlock(&q->lock);
	return i;
}

/* A per-thread linear congruential generator (seeded per thread, so runs
 * differ only by their interleavings). */
static inline unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245 + 12345;
	return *s >> 16;
}

/* CLOCK_MONOTONIC in ns: how long a run has hammered. */
static inline uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
