/*
 * Shared by the engine suites: an instance on a synthetic topology with an
 * injected clock, every CPU registered, a pool of task records, and a look
 * inside (the suites link libplace statically and read internal.h) so that
 * tests can check masks and states, not only answers.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_TEST_ENGINE_H
#define PLACE_TEST_ENGINE_H

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "place.h"

/* 1 package, 1 L3, 4 cores of 2 SMT threads: siblings are 2k and 2k+1. */
#define TOPO_4C8T "synthetic:pack:1 l3:1 core:4 pu:2"
/* 2 L3s of 2 cores of 2 threads: LLC 0 is CPUs 0-3, LLC 1 is 4-7. */
#define TOPO_2LLC "synthetic:pack:1 l3:2 core:2 pu:2"

#define NR_TASKS 64

struct env {
	place_topo *topo;
	place *p;
	uint64_t now; /* the injected clock, ns */
	int nr_cpus;
	place_task task[NR_TASKS];
};

static inline uint64_t env_clock(void *arg)
{
	return *(const uint64_t *)arg;
}

/* The injected clock, counting its reads (env_count_clock). */
struct counted_clock {
	uint64_t *now;
	unsigned long reads;
};

static inline uint64_t counted_read(void *arg)
{
	struct counted_clock *k = arg;

	k->reads++;
	return *k->now;
}

/* From here on, e's clock counts its reads in k (from 0). */
static inline void env_count_clock(struct env *e, struct counted_clock *k)
{
	k->now = &e->now;
	k->reads = 0;
	e->p->clock = counted_read;
	e->p->clock_arg = k;
}

/* An instance over source with cfg (its clock replaced by the injected
 * one); register_all: every CPU gets a (pretend) worker. */
static inline void env_open_cfg(struct env *e, const char *source, const place_config *cfg,
				bool register_all)
{
	place_config c = *cfg;
	int err;

	memset(e, 0, sizeof(*e));
	err = place_topo_load(&e->topo, source);
	ck_assert_msg(err == 0, "%s: %s", source, place_last_error());
	c.clock = env_clock;
	c.clock_arg = &e->now;
	e->now = 1000000;
	err = place_create(&e->p, e->topo, &c);
	ck_assert_msg(err == 0, "place_create: %d %s", err, place_last_error());
	e->nr_cpus = place_topo_nr_cpus(e->topo);
	for (int i = 0; register_all && i < e->nr_cpus; i++)
		ck_assert_int_eq(place_worker_register(e->p, place_topo_cpu(e->topo, i), 0), 0);
	for (int i = 0; i < NR_TASKS; i++)
		place_task_init(&e->task[i], 0, 0);
}

/* The same with the default config but for policy and features. */
static inline void env_open(struct env *e, const char *source, int policy, unsigned feat,
			    bool register_all)
{
	place_config cfg;

	place_config_init(&cfg);
	cfg.policy = policy;
	cfg.features = feat;
	env_open_cfg(e, source, &cfg, register_all);
}

static inline void env_close(struct env *e)
{
	place_destroy(e->p);
	place_topo_free(e->topo);
}

/* The synthetic topologies here number CPUs 0..n-1: dense == OS. */
static inline struct place_llc *env_llc(struct env *e, int l)
{
	return &e->p->llc[l];
}

/* LLC l's SIS_UTIL scan bound (without its RECHECK flag) */
static inline uint32_t env_bound(struct env *e, int l)
{
	return env_llc(e, l)->nr_idle_scan & PLACE_SCAN_NR;
}

static inline uint64_t env_mask(struct env *e, int l)
{
	return env_llc(e, l)->icpus[0];
}

static inline uint64_t env_state(struct env *e, int cpu)
{
	return e->p->cpu[cpu].state;
}

static inline bool env_available(struct env *e, int cpu)
{
	return place__st_available(env_state(e, cpu));
}

static inline place_stats env_stats(struct env *e)
{
	place_stats s;

	ck_assert_int_eq(place_stats_read(e->p, -1, &s), 0);
	return s;
}

/* The worker of cpu starts running t (which must succeed). */
static inline void env_run(struct env *e, int cpu, place_task *t)
{
	int err = place_run_begin(e->p, cpu, t);

	ck_assert_msg(err == 0, "run_begin(%d): %d", cpu, err);
}

/* The worker of cpu stops t (slept) and parks. */
static inline void env_park(struct env *e, int cpu, place_task *t)
{
	ck_assert_int_eq(place_run_end(e->p, cpu, t, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_idle_enter(e->p, cpu), 0);
}

/* A task that last ran on cpu (run and slept there). The CPU is left as it
 * was before: busy with its task, or idle. */
static inline place_task *env_task_on(struct env *e, int i, int cpu)
{
	place_task *t = &e->task[i];

	place__rec(t)->prev_cpu = cpu;
	return t;
}

static inline int env_wake(struct env *e, place_task *t, int waker, unsigned flags)
{
	int cpu = place_wakeup(e->p, t, waker, flags);

	ck_assert_msg(cpu >= 0, "place_wakeup: %d (%s)", cpu, place_strerror(cpu));
	return cpu;
}

static inline int env_core_of(struct env *e, int cpu)
{
	return e->p->map[cpu].core;
}

#endif /* PLACE_TEST_ENGINE_H */
