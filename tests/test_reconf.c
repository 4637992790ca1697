/*
 * Reconfiguration (place_set_topology, DESIGN.md mechanism 12), the
 * deterministic cases: a shrink never lets a wakeup return a removed CPU;
 * what was queued or claimed on a removed CPU still runs there and its
 * worker can drain and leave; growing back republishes idle CPUs;
 * anything that is not a restriction is refused with the instance
 * unchanged; per-CPU state, statistics, cookie occupancy and NUMA counts
 * survive a swap and stay balanced. The threaded swap stress with its
 * oracle is tests/test_reconf_stress.c.
 *
 * The universe: 2 packages x 2 L3 x 4 cores x 2 threads, CPUs numbered in
 * order (LLC l is CPUs 8l .. 8l+7, siblings 2k and 2k+1). Restrictions are
 * synthetic strings naming the same OS numbers (pu indexes=).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdlib.h>

#include "cookie.h"
#include "numa.h"
#include "test_engine.h"
#include "testlib.h"

#define U32 "synthetic:pack:2 l3:2 core:4 pu:2"
#define U32_NUMA "synthetic:pack:2 [numa] l3:2 core:4 pu:2"
#define NCPU 32

/* The first package (CPUs 0-15): a cpuset shrink, or a socket going away. */
#define R_PACK0 "synthetic:pack:1 l3:2 core:4 pu:2"
#define R_PACK0_NUMA "synthetic:pack:1 [numa] l3:2 core:4 pu:2"

/* One thread per core (the even CPUs): SMT switched off by hotplug. */
static const char *r_smt_off(char *buf, size_t size)
{
	int n = snprintf(buf, size, "synthetic:pack:2 l3:2 core:4 pu:1(indexes=");

	for (int cpu = 0; cpu < NCPU; cpu += 2)
		n += snprintf(buf + n, size - (size_t)n, "%s%d", cpu ? "," : "", cpu);
	snprintf(buf + n, size - (size_t)n, ")");
	return buf;
}

static place_topo *load(const char *source)
{
	place_topo *t;
	int err = place_topo_load(&t, source);

	ck_assert_msg(err == 0, "%s: %s", source, place_last_error());
	return t;
}

/* Swap e's instance to source (which must succeed). */
static void swap_to(struct env *e, const char *source)
{
	place_topo *t = load(source);
	int err = place_set_topology(e->p, t);

	ck_assert_msg(err == 0, "place_set_topology(%s): %d %s", source, err, place_last_error());
	place_topo_free(t);
}

static bool offline(struct env *e, int cpu)
{
	return (env_state(e, cpu) & PLACE_ST_OFFLINE) != 0;
}

static uint64_t nr_registered(struct env *e, int l)
{
	return env_llc(e, l)->nr_registered;
}

START_TEST(t_print_topology)
{
	char buf[256];

	printf("universe %s; restrictions %s, %s, %s\n", U32, R_PACK0, r_smt_off(buf, sizeof(buf)),
	       "the universe itself");
}
END_TEST

/* A mix of busy and idle CPUs; after the shrink no wakeup, from any waker
 * and any previous CPU, claiming or not, returns a CPU of package 1. */
START_TEST(t_shrink_never_returns_removed)
{
	static const int policies[] = { PLACE_POLICY_SIS_CORE, PLACE_POLICY_LINEAR, PLACE_POLICY_EXACT };
	struct env e;
	place_task busy[NCPU];
	unsigned seed = 7;

	env_open(&e, U32, policies[_i], PLACE_FEAT_DEFAULT, true);
	for (int cpu = 0; cpu < NCPU; cpu += 3) { /* a third of the CPUs busy, both packages */
		place_task_init(&busy[cpu], 0, 0);
		env_run(&e, cpu, &busy[cpu]);
	}
	swap_to(&e, R_PACK0);
	for (int cpu = 0; cpu < NCPU; cpu++)
		ck_assert_int_eq(offline(&e, cpu), cpu >= 16);
	for (int k = 0; k < 2000; k++) {
		place_task *t = &e.task[k % NR_TASKS];
		int prev = (int)((seed = seed * 1103515245u + 12345u) >> 16) % NCPU;
		int waker = k % 3 == 0 ? PLACE_CPU_NONE : (k * 7) % NCPU; /* offline wakers too */
		unsigned flags = k % 5 == 0 ? PLACE_WAKE_NOCLAIM : k % 7 == 0 ? PLACE_WAKE_SYNC : 0;
		int cpu;

		place__rec(t)->prev_cpu = prev;
		cpu = env_wake(&e, t, waker, flags);
		ck_assert_msg(cpu < 16, "wakeup %d (prev %d, waker %d) returned removed CPU %d", k, prev,
			      waker, cpu);
		if (place_task_claimed(e.p, t) >= 0)
			ck_assert_int_eq(place_claim_release(e.p, cpu), 0);
	}
	for (int cpu = 16; cpu < NCPU; cpu++) /* nothing was claimed nor queued there */
		ck_assert_uint_eq(env_state(&e, cpu) & (PLACE_ST_CLAIMED | PLACE_ST_QUEUED_MASK), 0);
	env_close(&e);
}
END_TEST

/* A task claimed on CPU 20 before the shrink still runs there; the worker
 * of an offline CPU parks without entering the masks, registers nowhere,
 * can release claims and unregister; stealing never proposes it. */
START_TEST(t_removed_cpu_drains)
{
	struct env e;
	place_task *t = env_task_on(&e, 0, 20), *u;
	int order[NCPU], n;

	env_open(&e, U32, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	t = env_task_on(&e, 0, 20);
	u = env_task_on(&e, 1, 22);
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, 0), 20);
	ck_assert_int_eq(env_wake(&e, u, PLACE_CPU_NONE, 0), 22);
	ck_assert_int_eq(place_task_claimed(e.p, t), 20);
	swap_to(&e, R_PACK0);
	ck_assert_uint_eq(nr_registered(&e, 2), 0);
	ck_assert_uint_eq(nr_registered(&e, 0), 8);
	/* the claim survived; the task runs where it was sent */
	ck_assert_int_eq(place_task_claimed(e.p, t), 20);
	env_run(&e, 20, t);
	ck_assert_int_eq(place_run_end(e.p, 20, t, PLACE_RUN_PREEMPT), 0);
	env_run(&e, 20, t);
	env_park(&e, 20, t);
	ck_assert(!env_available(&e, 20)); /* idle, but not for wakeups */
	ck_assert_uint_eq(env_mask(&e, 2) & (UINT64_C(3) << 4), 0); /* core of 20-21: no bit */
	/* the other claim is given up from anywhere */
	ck_assert_int_eq(place_claim_release(e.p, 22), 0);
	ck_assert_int_eq(place_steal_order(e.p, 20, order, NCPU), 16); /* the online ones */
	ck_assert_int_eq(place_steal_check(e.p, 20, u), -ENODEV); /* it drains, takes nothing */
	ck_assert_int_eq(place_steal_check(e.p, 0, u), 0);
	n = place_steal_order(e.p, 0, order, NCPU);
	ck_assert_int_eq(n, 15);
	for (int i = 0; i < n; i++)
		ck_assert_int_lt(order[i], 16);
	ck_assert_int_eq(place_worker_unregister(e.p, 20), 0);
	ck_assert_int_eq(place_worker_register(e.p, 20, 0), -ENODEV);
	ck_assert_uint_eq(nr_registered(&e, 2), 0);
	ck_assert_uint_eq(env_state(&e, 20) & ~(~UINT64_C(0) << PLACE_ST_GEN_SHIFT), PLACE_ST_OFFLINE);
	env_close(&e);
}
END_TEST

/* Back to the universe: idle workers of package 1 are available and in the
 * masks again (a wakeup around them finds them at once), the unregistered
 * one registers again, and the scan bound's weight is whole again. */
START_TEST(t_grow_back_republishes)
{
	static const int policies[] = { PLACE_POLICY_SIS_CORE, PLACE_POLICY_LINEAR, PLACE_POLICY_EXACT };
	struct env e;
	place_topo *cur;

	env_open(&e, U32, policies[_i], PLACE_FEAT_DEFAULT, true);
	swap_to(&e, R_PACK0);
	ck_assert_int_eq(place_worker_unregister(e.p, 31), 0);
	ck_assert_int_eq(place_idle_enter(e.p, 24), 0); /* parks while offline: not published */
	ck_assert_int_eq(place_set_topology(e.p, place_get_topo(e.p)), 0);
	ck_assert_int_eq(place_topo_current(e.p, &cur), 0);
	ck_assert_int_eq(place_topo_nr_cpus(cur), NCPU);
	place_topo_free(cur);
	ck_assert_int_eq(place_worker_register(e.p, 31, 0), 0);
	for (int l = 0; l < 4; l++)
		ck_assert_uint_eq(nr_registered(&e, l), 8);
	for (int cpu = 16; cpu < NCPU; cpu++) {
		ck_assert(!offline(&e, cpu));
		ck_assert(env_available(&e, cpu));
	}
	if (policies[_i] == PLACE_POLICY_EXACT)
		ck_assert_uint_eq(env_mask(&e, 3), 0xff);
	else if (policies[_i] == PLACE_POLICY_SIS_CORE)
		for (int core = 0; core < 4; core++) /* one bit per core at least */
			ck_assert_uint_ne(env_mask(&e, 2) & (UINT64_C(3) << (2 * core)), 0);
	for (int i = 0; i < 4; i++) { /* four wakeups into LLC 3 claim one CPU of each core */
		place_task *t = env_task_on(&e, i, 24);
		int cpu = env_wake(&e, t, PLACE_CPU_NONE, 0);

		ck_assert_int_ge(cpu, 24);
		ck_assert_int_eq(place_task_claimed(e.p, t), cpu);
	}
	env_close(&e);
}
END_TEST

/* What is not a restriction is refused, -EXDEV, naming the CPU, and changes
 * nothing. */
START_TEST(t_not_a_restriction)
{
	static const char *const bad[] = {
		"synthetic:pack:2 l3:2 core:4 pu:1",   /* CPU 1 is a core of its own here: SMT differs */
		"synthetic:pack:1 l3:1 core:8 pu:2",   /* CPUs 0-15 in one LLC instead of two */
		"synthetic:pack:2 l3:2 core:4 pu:2",   /* no NUMA node where the universe has two */
		"synthetic:pack:1 l3:2 core:4 pu:2(indexes=16,17,18,19,20,21,22,23,0,1,2,3,4,5,6,7)"
		/* the same groups, but LLC 2 before LLC 0: a restriction after all */
	};
	struct env e;
	place_stats before, after;

	env_open(&e, U32_NUMA, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	swap_to(&e, R_PACK0_NUMA);
	before = env_stats(&e);
	for (size_t k = 0; k < 3; k++) {
		place_topo *t = load(bad[k]);
		place_topo *cur;

		ck_assert_int_eq(place_set_topology(e.p, t), -EXDEV);
		printf("%s: %s\n", bad[k], place_last_error());
		ck_assert_ptr_nonnull(strstr(place_last_error(), "cpu "));
		for (int cpu = 0; cpu < NCPU; cpu++)
			ck_assert_int_eq(offline(&e, cpu), cpu >= 16);
		ck_assert_int_eq(place_topo_current(e.p, &cur), 0);
		ck_assert_int_eq(place_topo_nr_cpus(cur), 16);
		place_topo_free(cur);
		place_topo_free(t);
	}
	/* CPUs 32-47 are not the instance's */
	{
		place_topo *t = load("synthetic:pack:3 [numa] l3:2 core:4 pu:2");

		ck_assert_int_eq(place_set_topology(e.p, t), -EXDEV);
		ck_assert_str_eq(place_last_error(),
				 "place_set_topology: cpu 32 is not a CPU of the instance's topology");
		place_topo_free(t);
	}
	after = env_stats(&e);
	ck_assert_mem_eq(&before, &after, sizeof(before));
	ck_assert_uint_eq(nr_registered(&e, 0), 8);
	ck_assert_uint_eq(nr_registered(&e, 2), 0);
	env_close(&e);
	/* the last string keeps the groups: accepted (ids need not match) */
	env_open(&e, U32, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	swap_to(&e, bad[3]);
	for (int cpu = 0; cpu < NCPU; cpu++)
		ck_assert_int_eq(offline(&e, cpu), !(cpu < 8 || (cpu >= 16 && cpu < 24)));
	env_close(&e);
}
END_TEST

/* SMT off: the odd CPUs leave; a wakeup never returns one, and their
 * siblings stand for their cores in the SIS_CORE mask. */
START_TEST(t_smt_off)
{
	struct env e;
	char buf[256];
	place_task busy;

	env_open(&e, U32, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	place_task_init(&busy, 0, 0);
	swap_to(&e, r_smt_off(buf, sizeof(buf)));
	for (int l = 0; l < 4; l++) {
		ck_assert_uint_eq(nr_registered(&e, l), 4);
		ck_assert_uint_eq(env_mask(&e, l) & 0xaa, 0); /* no odd position stands for a core */
		ck_assert_uint_eq(env_mask(&e, l) & 0x55, 0x55);
	}
	for (int k = 0; k < NR_TASKS; k++) {
		int cpu = env_wake(&e, env_task_on(&e, k, (2 * k + 1) % NCPU), k % 2 ? 3 : PLACE_CPU_NONE, 0);

		ck_assert_msg(cpu % 2 == 0, "wakeup %d returned the offline SMT thread %d", k, cpu);
	}
	env_close(&e);
}
END_TEST

/* Per-CPU state and statistics survive a swap out and back: the queued
 * count and claim generation of an offline CPU, and every counter. */
START_TEST(t_state_survives)
{
	struct env e;
	place_task busy;
	place_stats before, after;
	uint64_t s20;

	/* WIDEN off: it would send them to another LLC's idle CPU */
	env_open(&e, U32, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT & ~PLACE_FEAT_WIDEN, true);
	place_task_init(&busy, 0, 0);
	env_run(&e, 20, &busy);
	for (int i = 0; i < 3; i++) /* 20 busy, its LLC busy too: tasks stack on it */
		place__rec(env_task_on(&e, i, 20))->prev_cpu = 20;
	for (int cpu = 16; cpu < 24; cpu++)
		if (cpu != 20)
			env_run(&e, cpu, &e.task[40 + cpu - 16]);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(env_wake(&e, &e.task[i], PLACE_CPU_NONE, 0), 20);
	s20 = env_state(&e, 20);
	ck_assert_uint_eq(place__st_queued(s20), 3);
	before = env_stats(&e);
	swap_to(&e, R_PACK0);
	ck_assert_uint_eq(env_state(&e, 20), s20 | PLACE_ST_OFFLINE);
	swap_to(&e, U32);
	ck_assert_uint_eq(env_state(&e, 20), s20);
	after = env_stats(&e);
	ck_assert_mem_eq(&before, &after, sizeof(before));
	/* the queued tasks run where they were sent */
	ck_assert_int_eq(place_run_end(e.p, 20, &busy, PLACE_RUN_SLEEP), 0);
	for (int i = 0; i < 3; i++) {
		env_run(&e, 20, &e.task[i]);
		ck_assert_int_eq(place_run_end(e.p, 20, &e.task[i], PLACE_RUN_SLEEP), 0);
	}
	ck_assert_uint_eq(place__st_queued(env_state(&e, 20)), 0);
	env_close(&e);
}
END_TEST

/* Cookies and NUMA groups of tasks that run on a CPU while it goes offline
 * come back to zero (run_end on the offline CPU, or its unregister). */
START_TEST(t_cookie_numa_balanced)
{
	struct env e;
	place_task *a, *b;
	uint64_t *occ;
	int node1;

	env_open(&e, U32_NUMA, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	ck_assert_int_eq(place_topo_nr_nodes(e.topo), 2);
	a = &e.task[0];
	b = &e.task[1];
	place_task_init(a, 42, 3);
	place_task_init(b, 42, 3);
	env_run(&e, 20, a); /* node 1, core of 20-21 */
	env_run(&e, 21, b);
	node1 = e.p->map[20].node;
	occ = e.p->core[e.p->map[20].core].occ;
	ck_assert_uint_eq(occ[PLACE_OCC_COUNT], 2);
	ck_assert_uint_eq(*place__numa_slot(e.p, node1, 3), 2);
	swap_to(&e, R_PACK0_NUMA);
	ck_assert_int_eq(place_run_end(e.p, 20, a, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_worker_unregister(e.p, 21), 0); /* leaves while b runs */
	ck_assert_uint_eq(occ[PLACE_OCC_COUNT], 0);
	ck_assert_uint_eq(occ[PLACE_OCC_COOKIE], 0);
	ck_assert_uint_eq(*place__numa_slot(e.p, node1, 3), 0);
	/* a grouped wakeup from node 0 of a task whose prev is offline stays
	 * in the topology */
	place__rec(a)->prev_cpu = 20;
	ck_assert_int_lt(env_wake(&e, a, 3, 0), 16);
	env_close(&e);
}
END_TEST

/* The "machine" source holds the live topology as a restriction: an
 * instance over it can shrink to "live" and grow back. */
START_TEST(t_machine_source)
{
	place_topo *m, *live;
	place *p;

	if (getenv("PLACE_TOPOLOGY")) {
		printf("PLACE_TOPOLOGY is set: \"live\" is not this machine, case skipped\n");
		return;
	}
	m = load("machine");
	live = load("live");
	printf("machine: %d CPUs, live: %d CPUs\n", place_topo_nr_cpus(m), place_topo_nr_cpus(live));
	ck_assert_int_ge(place_topo_nr_cpus(m), place_topo_nr_cpus(live));
	ck_assert_str_eq(place_topo_source(m), "machine");
	ck_assert_int_eq(place_create(&p, m, NULL), 0);
	ck_assert_int_eq(place_set_topology(p, live), 0);
	ck_assert_int_eq(place_set_topology(p, place_get_topo(p)), 0);
	place_destroy(p);
	place_topo_free(live);
	place_topo_free(m);
}
END_TEST

/* Issue 14.2: a CPU that leaves (SMT off) and comes back with time passed
 * must not bring its past run time into one utilization sample. CPU 1 ran
 * for 10 periods long ago; the LLC has been idle since. Before, the busy
 * total skipped OFFLINE CPUs: on CPU 1's return its whole-life busy time
 * landed in one sample, the LLC read fully busy and the bound fell to 0. */
START_TEST(t_grow_after_shrink_keeps_util)
{
	char buf[256];
	struct env e;
	uint64_t period;

	env_open(&e, U32, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	period = e.p->util_period_ns;
	env_run(&e, 1, &e.task[33]);
	e.now += 10 * period;
	env_park(&e, 1, &e.task[33]);
	for (int k = 0; k < 16; k++) { /* quiet: one short run per period on CPU 0 */
		e.now += period;
		env_run(&e, 0, &e.task[32]);
		e.now += 100000; /* 100 us: a timed run, whose run_end recomputes */
		env_park(&e, 0, &e.task[32]);
	}
	ck_assert_uint_ge(env_bound(&e, 0), 7); /* 100 us per period: 0.3% busy */
	swap_to(&e, r_smt_off(buf, sizeof(buf)));
	ck_assert(offline(&e, 1));
	for (int k = 0; k < 3; k++) {
		e.now += period;
		env_run(&e, 0, &e.task[32]);
		e.now += 100000; /* 100 us: a timed run, whose run_end recomputes */
		env_park(&e, 0, &e.task[32]);
	}
	swap_to(&e, U32);
	ck_assert(!offline(&e, 1));
	e.now += period;
	env_run(&e, 0, &e.task[32]);
	e.now += 100000;
	env_park(&e, 0, &e.task[32]); /* the first recompute with CPU 1 back */
	ck_assert_msg(env_llc(&e, 0)->util_avg < 1024 / 10, "util %lu/1024 after CPU 1 came back",
		      (unsigned long)env_llc(&e, 0)->util_avg);
	ck_assert_uint_ge(env_bound(&e, 0), 7); /* 100 us per period: 0.3% busy */
	env_close(&e);
}
END_TEST

static Suite *reconf_suite(void)
{
	Suite *s = suite_create("reconf");
	TCase *tc = tcase_create("deterministic");

	tcase_add_test(tc, t_print_topology);
	tcase_add_loop_test(tc, t_shrink_never_returns_removed, 0, 3);
	tcase_add_test(tc, t_removed_cpu_drains);
	tcase_add_loop_test(tc, t_grow_back_republishes, 0, 3);
	tcase_add_test(tc, t_not_a_restriction);
	tcase_add_test(tc, t_smt_off);
	tcase_add_test(tc, t_state_survives);
	tcase_add_test(tc, t_cookie_numa_balanced);
	tcase_add_test(tc, t_machine_source);
	tcase_add_test(tc, t_grow_after_shrink_keeps_util);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(reconf_suite());
}
