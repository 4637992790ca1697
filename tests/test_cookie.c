/*
 * Core-scheduling cookies (issue 5 "Cookies"), case by case: run_begin's
 * refusal changes nothing, tasks of one cookie share a core, cookie 0 is a
 * cookie like the others and cookies are compared whole, wakeups avoid
 * cores running another cookie and count the compatible fallback, a cookie
 * changed while its task runs or is queued, the feature off, a worker that
 * leaves while running, and bad input. Deterministic: an injected clock,
 * synthetic topologies (SMT2 and SMT4), no threads.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdlib.h>

#include "cookie.h"
#include "test_engine.h"
#include "testlib.h"

/* 1 package, 1 L3, 2 cores of 4 SMT threads: cores are CPUs 0-3 and 4-7. */
#define TOPO_2C8T "synthetic:pack:1 l3:1 core:2 pu:4"
/* No SMT: 4 cores of 1 thread. */
#define TOPO_4C4T "synthetic:pack:1 l3:1 core:4 pu:1"

#define FEAT_NO_COOKIES (PLACE_FEAT_DEFAULT & ~PLACE_FEAT_COOKIES)

static const char *const topos[] = { TOPO_4C8T, TOPO_2C8T };
static const int smt_of[] = { 2, 4 };
static const int policies[] = { PLACE_POLICY_SIS_CORE, PLACE_POLICY_LINEAR, PLACE_POLICY_EXACT };
static const char *const policy_name[] = { "SIS_CORE", "LINEAR", "EXACT" };

/* The occupancy word of cpu's core, {cookie, count}. */
static void occ(struct env *e, int cpu, uint64_t *cookie, uint64_t *count)
{
	const uint64_t *w = e->p->core[e->p->map[cpu].core].occ;

	*cookie = w[PLACE_OCC_COOKIE];
	*count = place__occ_count(w[PLACE_OCC_COUNT]); /* without the forced-idle bits */
}

#define ASSERT_OCC(e, cpu, want_cookie, want_count)                                                \
	do {                                                                                       \
		uint64_t c_, n_;                                                                   \
		occ((e), (cpu), &c_, &n_);                                                         \
		ck_assert_msg(c_ == (uint64_t)(want_cookie) && n_ == (uint64_t)(want_count),       \
			      "core of CPU %d: {%#llx, %llu}, expected {%#llx, %llu}", (cpu),         \
			      (unsigned long long)c_, (unsigned long long)n_,                      \
			      (unsigned long long)(want_cookie), (unsigned long long)(want_count));  \
	} while (0)

/* Task i with cookie c, run and slept on cpu before (its prev). */
static place_task *task_c(struct env *e, int i, uint64_t cookie, int prev)
{
	place_task *t = &e->task[i];

	ck_assert_int_eq(place_task_set_cookie(t, cookie), 0);
	if (prev >= 0)
		place__rec(t)->prev_cpu = prev;
	return t;
}

START_TEST(t_print_topology)
{
	struct env e;

	env_open(&e, topos[_i], PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	printf("topology %s:", place_topo_source(e.topo));
	for (int i = 0; i < e.nr_cpus; i++) {
		place_cpu_info ci;

		ck_assert_int_eq(place_topo_cpu_info(e.topo, i, &ci), 0);
		printf(" cpu%d(core %d)", ci.cpu, ci.core);
		ck_assert_int_eq(ci.core, i / smt_of[_i]); /* the cases below rely on this numbering */
		ck_assert_int_eq(ci.smt, smt_of[_i]);
	}
	printf("\n");
	ck_assert(PLACE_FEAT_DEFAULT & PLACE_FEAT_COOKIES); /* isolation is on unless turned off */
	env_close(&e);
}
END_TEST

/* Everything a refused run_begin could have changed. */
struct snap {
	struct place_cpu cpu[8];
	uint64_t occ[2][2];
	uint64_t icpus, icores, has_idle_cores;
	struct place_task_rec rec;
};

static void take_snap(struct env *e, const place_task *t, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->cpu, e->p->cpu, sizeof(s->cpu));
	for (int c = 0; c < 2; c++) { /* a refusal sets its CPU's forced-idle bit: checked apart */
		memcpy(s->occ[c], e->p->core[c].occ, sizeof(s->occ[c]));
		s->occ[c][PLACE_OCC_COUNT] = place__occ_count(s->occ[c][PLACE_OCC_COUNT]);
	}
	s->icpus = env_llc(e, 0)->icpus[0];
	s->icores = env_llc(e, 0)->icores[0];
	s->has_idle_cores = env_llc(e, 0)->has_idle_cores;
	memcpy(&s->rec, t->priv, sizeof(s->rec));
}

/*
 * A (cookie 5) runs on CPU 0; B, claimed on CPU 1 (a sibling) while it still
 * had cookie 5, gets cookie 7 while queued. B's run_begin on CPU 1 is
 * refused with nothing changed: B keeps its claim, CPU 1 is between tasks.
 * Once A ends, B starts with cookie 7; the forced idle lasted from the
 * refusal to that start. Both topologies, every policy.
 */
START_TEST(t_refusal_changes_nothing)
{
	struct env e;
	struct snap before, after;
	place_task *a, *b;
	place_stats st;

	env_open(&e, topos[_i / 3], policies[_i % 3], PLACE_FEAT_DEFAULT, true);
	a = task_c(&e, 0, 5, -1);
	b = task_c(&e, 1, 5, 1);
	env_run(&e, 0, a);
	ASSERT_OCC(&e, 0, 5, 1);
	ck_assert_int_eq(env_wake(&e, b, PLACE_CPU_NONE, 0), 1); /* fits: same cookie */
	ck_assert_int_eq(place_task_claimed(e.p, b), 1);
	ck_assert_int_eq(place_task_set_cookie(b, 7), 0); /* queued: takes effect at run_begin */

	take_snap(&e, b, &before);
	ck_assert_int_eq(place_run_begin(e.p, 1, b), -EBUSY);
	take_snap(&e, b, &after);
	ck_assert_msg(memcmp(&before, &after, sizeof(before)) == 0, "%s/%s: a refusal changed state",
		      topos[_i / 3], policy_name[_i % 3]);
	ck_assert_int_eq(place_task_claimed(e.p, b), 1);
	ck_assert_int_eq(place_run_end(e.p, 1, b, PLACE_RUN_SLEEP), -EINVAL); /* it never ran */
	st = env_stats(&e);
	ck_assert_uint_eq(st.cookie_refusals, 1);
	ck_assert_uint_eq(st.forced_idle_ns, 0); /* still forced idle */

	e.now += 1000;
	ck_assert_int_eq(place_run_begin(e.p, 1, b), -EBUSY); /* a retry keeps the first stamp */
	ck_assert_int_eq(place_run_end(e.p, 0, a, PLACE_RUN_SLEEP), 0);
	ASSERT_OCC(&e, 0, 0, 0);
	e.now += 500;
	env_run(&e, 1, b);
	ASSERT_OCC(&e, 1, 7, 1);
	ck_assert_int_eq(place_task_claimed(e.p, b), PLACE_CPU_NONE); /* its claim ended by running */
	st = env_stats(&e);
	ck_assert_uint_eq(st.cookie_refusals, 2);
	ck_assert_uint_eq(st.forced_idle_ns, 1500);
	/* now A (cookie 5) is the one refused, on CPU 0 */
	ck_assert_int_eq(place_run_begin(e.p, 0, a), -EBUSY);
	env_close(&e);
}
END_TEST

/* Tasks of one cookie fill a core; another cookie waits until the count is
 * back to zero. Cookie 0 is a cookie like the others. */
START_TEST(t_same_cookie_shares_core)
{
	int smt = smt_of[_i];
	struct env e;

	env_open(&e, topos[_i], PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	for (int k = 0; k < smt; k++) {
		env_run(&e, k, task_c(&e, k, 9, -1));
		ASSERT_OCC(&e, 0, 9, k + 1);
	}
	ASSERT_OCC(&e, smt, 0, 0); /* the other core is untouched */
	for (int k = 0; k < smt; k++) {
		ck_assert_int_eq(place_run_end(e.p, k, &e.task[k], k % 2 ? PLACE_RUN_PREEMPT : PLACE_RUN_SLEEP), 0);
		ASSERT_OCC(&e, 0, k + 1 < smt ? 9 : 0, smt - k - 1);
		if (k + 1 < smt) /* the core still runs 9 */
			ck_assert_int_eq(place_run_begin(e.p, k, task_c(&e, 20, 3, -1)), -EBUSY);
	}
	env_run(&e, 0, &e.task[20]);
	ASSERT_OCC(&e, 0, 3, 1);
	ck_assert_uint_eq(env_stats(&e).cookie_refusals, (uint64_t)smt - 1);

	/* untagged (0) and tagged (5) never share a core either */
	env_run(&e, smt, task_c(&e, 30, 0, -1));
	ASSERT_OCC(&e, smt, 0, 1);
	ck_assert_int_eq(place_run_begin(e.p, smt + 1, task_c(&e, 31, 5, -1)), -EBUSY);
	env_run(&e, smt + 1, task_c(&e, 32, 0, -1));
	ASSERT_OCC(&e, smt, 0, 2);
	env_close(&e);
}
END_TEST

/* Cookies are compared whole: values that differ only in the high half, or
 * only in bit 0, are different cookies. A core with one CPU never refuses. */
START_TEST(t_cookies_exact)
{
	static const uint64_t pairs[][2] = {
		{ UINT64_C(0x100000005), 5 },
		{ UINT64_C(0x8000000000000000), 0 },
		{ UINT64_MAX, UINT64_MAX - 1 },
	};
	struct env e;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	for (int k = 0; k < 3; k++) {
		int a = 2 * k, b = 2 * k + 1;

		env_run(&e, a, task_c(&e, a, pairs[k][0], -1));
		ASSERT_OCC(&e, a, pairs[k][0], 1);
		ck_assert_int_eq(place_run_begin(e.p, b, task_c(&e, b, pairs[k][1], -1)), -EBUSY);
		env_run(&e, b, task_c(&e, 40 + k, pairs[k][0], -1));
		ASSERT_OCC(&e, a, pairs[k][0], 2);
	}
	env_close(&e);

	env_open(&e, TOPO_4C4T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	for (int cpu = 0; cpu < 4; cpu++) {
		env_run(&e, cpu, task_c(&e, cpu, (uint64_t)cpu + 1, -1));
		ASSERT_OCC(&e, cpu, 0, 0); /* never looked at */
	}
	ck_assert_uint_eq(env_stats(&e).cookie_refusals, 0);
	env_close(&e);
}
END_TEST

/*
 * No SMT: a core of one CPU admits every cookie, even with work queued on
 * it, since nothing can run beside that work. Every CPU runs a task of its
 * own cookie; a cookie-5 task queues on one of them; a cookie-9 wakeup is
 * no fallback and the CPU with the queue still admits 9.
 */
START_TEST(t_one_cpu_core_admits_every_cookie)
{
	struct env e;
	int queued;

	env_open(&e, TOPO_4C4T, policies[_i], PLACE_FEAT_DEFAULT, true);
	for (int cpu = 0; cpu < 4; cpu++)
		env_run(&e, cpu, task_c(&e, cpu, (uint64_t)cpu + 1, -1));
	queued = env_wake(&e, task_c(&e, 5, 5, 0), PLACE_CPU_NONE, 0);
	ck_assert(place__cookie_waiting(e.p, queued));
	ck_assert_msg(place__cookie_admits(e.p, queued, 9), "%s: CPU %d refuses cookie 9",
		      policy_name[_i], queued);
	ck_assert_int_eq(place_steal_check(e.p, queued, &e.task[5]), 0); /* a thief's core of one */
	env_wake(&e, task_c(&e, 6, 9, queued), PLACE_CPU_NONE, 0);
	ck_assert_uint_eq(env_stats(&e).cookie_fallbacks, 0);
	env_close(&e);
}
END_TEST

/*
 * SMT2: cookie 5 runs on one CPU of cores 0, 1 and 2; core 3 is idle. A
 * cookie-7 task whose prev is CPU 1 (idle, but its sibling runs 5) goes to
 * core 3, and a second one to its sibling; a cookie-5 task still gets CPU 1.
 * SMT4: core 0 runs 5 on CPU 0; a cookie-7 task from prev 1 goes to core 1.
 */
START_TEST(t_wakeups_avoid_incompatible_cores)
{
	struct env e;
	int cpu, cpu2;

	env_open(&e, TOPO_4C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
	for (int c = 0; c < 3; c++)
		env_run(&e, 2 * c, task_c(&e, 40 + c, 5, -1));
	cpu = env_wake(&e, task_c(&e, 1, 7, 1), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 6 || cpu == 7, "%s: cookie 7 placed on CPU %d", policy_name[_i], cpu);
	env_run(&e, cpu, &e.task[1]);
	cpu2 = env_wake(&e, task_c(&e, 2, 7, 1), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu2 == (cpu ^ 1), "%s: second cookie 7 on CPU %d", policy_name[_i], cpu2);
	ck_assert_int_eq(env_wake(&e, task_c(&e, 3, 5, 1), PLACE_CPU_NONE, 0), 1);
	ck_assert_uint_eq(env_stats(&e).cookie_fallbacks, 0);
	env_close(&e);

	env_open(&e, TOPO_2C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
	env_run(&e, 0, task_c(&e, 40, 5, -1));
	for (int k = 0; k < 4; k++) {
		cpu = env_wake(&e, task_c(&e, k, 7, 1), PLACE_CPU_NONE, 0);
		ck_assert_msg(cpu >= 4, "%s SMT4: cookie 7 wakeup %d on CPU %d", policy_name[_i], k, cpu);
		env_run(&e, cpu, &e.task[k]);
	}
	ASSERT_OCC(&e, 4, 7, 4);
	env_close(&e);
}
END_TEST

/*
 * Nothing idle. Every CPU busy: cores 0, 1 and 3 run cookie 5, core 2
 * cookie 8. A cookie-8 wakeup from prev 0 stacks on core 2 (a compatible
 * fallback, counted); cookie 9 fits nowhere and stays on its target; cookie
 * 5 fits its target and is an ordinary fallback.
 */
START_TEST(t_fallback_compatible)
{
	struct env e;
	place_stats st;
	int cpu;

	env_open(&e, TOPO_4C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
	for (int k = 0; k < 8; k++)
		env_run(&e, k, task_c(&e, 40 + k, k / 2 == 2 ? 8 : 5, -1));
	cpu = env_wake(&e, task_c(&e, 1, 8, 0), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 4 || cpu == 5, "%s: cookie 8 stacked on CPU %d", policy_name[_i], cpu);
	st = env_stats(&e);
	ck_assert_uint_eq(st.cookie_fallbacks, 1);
	ck_assert_uint_eq(st.hit_fallback, 1);
	/* the second goes to the other CPU of core 2: the first one's queue counts */
	ck_assert_int_eq(env_wake(&e, task_c(&e, 2, 8, 0), PLACE_CPU_NONE, 0), cpu ^ 1);
	ck_assert_int_eq(env_wake(&e, task_c(&e, 3, 9, 0), PLACE_CPU_NONE, 0), 0);
	ck_assert_int_eq(env_wake(&e, task_c(&e, 4, 5, 2), PLACE_CPU_NONE, 0), 2);
	st = env_stats(&e);
	ck_assert_uint_eq(st.cookie_fallbacks, 3);
	ck_assert_uint_eq(st.hit_fallback, 4);
	ck_assert_uint_eq(st.hit_target + st.hit_prev + st.hit_recent + st.hit_idle_core + st.hit_idle_cpu +
				  st.hit_sibling + st.hit_prev_smt + st.hit_fallback + st.hit_widened,
			  st.wakeups);
	env_close(&e);
}
END_TEST

/*
 * The fitting fallback may be an idle CPU that the scan did not reach (here
 * the SIS_UTIL bound says "overloaded"): it is claimed like any idle CPU.
 * Core 0 runs 5 on CPU 0, core 1 runs 8 on CPU 2, cores 2-3 run 5; a
 * cookie-8 task from prev 1 gets CPU 3, claimed.
 */
START_TEST(t_fallback_idle_is_claimed)
{
	struct env e;
	place_stats st;
	place_task *t;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	for (int k = 0; k < 8; k++)
		if (k != 1 && k != 3)
			env_run(&e, k, task_c(&e, 40 + k, k == 2 ? 8 : 5, -1));
	env_llc(&e, 0)->nr_idle_scan = 0;
	env_llc(&e, 0)->has_idle_cores = 0;
	t = task_c(&e, 1, 8, 1);
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, 0), 3);
	ck_assert_int_eq(place_task_claimed(e.p, t), 3);
	st = env_stats(&e);
	ck_assert_uint_eq(st.cookie_fallbacks, 1);
	ck_assert_uint_eq(st.hit_idle_cpu, 1);
	ck_assert_uint_eq(st.hit_fallback, 0);
	env_run(&e, 3, t);
	ASSERT_OCC(&e, 3, 8, 2);
	env_close(&e);
}
END_TEST

/*
 * The fitting fallback looks beyond the target's LLC. Two LLCs of two SMT2
 * cores, every CPU busy, cookies mixed: core {0,1} (LLC 0) and core {4,5}
 * (LLC 1) run cookie 5, the others cookie 8. Cookie-5 wakeups from prev 0
 * stack in LLC 0 while core {4,5} is not two tasks a CPU lighter (target
 * first on a tie, then its LLC; a move between CPUs one task apart would
 * only change the task's cache), then go there. Asked for the target's LLC
 * only (as stack_cpu asks when the target is the waker), the fallback
 * stays in LLC 0 all the same.
 */
START_TEST(t_fallback_other_llc)
{
	static const int want[] = { 0, 1, 0, 1 };
	struct env e;
	uint64_t probes = 0;
	int cpu;

	env_open(&e, "synthetic:pack:1 l3:2 core:2 pu:2", policies[_i], PLACE_FEAT_DEFAULT, true);
	for (int k = 0; k < 8; k++)
		env_run(&e, k, task_c(&e, 40 + k, k / 2 % 2 ? 8 : 5, -1));
	e.p->cookie_mixed = 1; /* as once two cookies met on a core */
	for (int k = 0; k < 4; k++)
		ck_assert_int_eq(env_wake(&e, task_c(&e, k, 5, 0), PLACE_CPU_NONE, 0), want[k]);
	ck_assert_int_lt(place__cookie_fallback(e.p, task_c(&e, 4, 5, 0), 0, PLACE_FIT_LLC, &probes), 2);
	cpu = env_wake(&e, &e.task[4], PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 4 || cpu == 5, "%s: fifth cookie-5 task stacked on CPU %d", policy_name[_i], cpu);
	ck_assert_int_eq(env_wake(&e, task_c(&e, 5, 5, 0), PLACE_CPU_NONE, 0), cpu ^ 1);
	ck_assert_uint_eq(env_stats(&e).cookie_fallbacks, 4); /* all but the two on the target */
	env_close(&e);
}
END_TEST

/*
 * ... but a task of a NUMA group stays on its node, as WIDEN keeps it: two
 * nodes of one LLC, the same cores and cookies; once node 0's cookie-5
 * CPUs carry three tasks each, a grouped task still stacks on node 0, an
 * ungrouped one goes to node 1.
 */
START_TEST(t_fallback_grouped_stays_on_node)
{
	struct env e;

	env_open(&e, "synthetic:pack:2 [numa] l3:1 core:2 pu:2", PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	for (int k = 0; k < 8; k++)
		env_run(&e, k, task_c(&e, 40 + k, k / 2 % 2 ? 8 : 5, -1));
	e.p->cookie_mixed = 1;
	for (int k = 0; k < 4; k++)
		ck_assert_int_lt(env_wake(&e, task_c(&e, k, 5, 0), PLACE_CPU_NONE, 0), 2);
	ck_assert_int_eq(place_task_set_group(task_c(&e, 4, 5, 0), 1), 0);
	ck_assert_int_lt(env_wake(&e, &e.task[4], PLACE_CPU_NONE, 0), 4);
	ck_assert_int_ge(env_wake(&e, task_c(&e, 5, 5, 0), PLACE_CPU_NONE, 0), 4);
	env_close(&e);
}
END_TEST

/*
 * Beyond the target's node, the nearest node first on a tie: hwloc's
 * latencies in the 4-node fixture (one LLC of two SMT2 cores a node, node
 * n the CPUs 4n .. 4n + 3) put node 2 at 20 from node 0 and node 1 at 30.
 * Cookie 5 runs on cores {4, 5} and {8, 9} alone, one task a CPU: a
 * cookie-5 task whose prev, CPU 0, runs cookie 8 goes to node 2's core,
 * not to node 1's that comes first in LLC order.
 */
START_TEST(t_fallback_nearest_node)
{
	static const int cookie_of[16] = { 8, 8, 8, 8, 5, 5, 8, 8, 5, 5, 8, 8, 8, 8, 8, 8 };
	char source[4200];
	uint64_t probes = 0;
	struct env e;

	env_open(&e, place_test_fixture(source, sizeof(source), "fixtures/numa-distances-smt.xml"),
		 PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	for (int k = 0; k < 16; k++)
		env_run(&e, k, task_c(&e, 40 + k, (uint64_t)cookie_of[k], -1));
	ck_assert_int_eq(place__cookie_fallback(e.p, task_c(&e, 0, 5, 0), 0, PLACE_FIT_MACHINE, &probes), 8);
	ck_assert_int_eq(env_wake(&e, &e.task[0], PLACE_CPU_NONE, 0), 8);
	ck_assert_uint_eq(env_stats(&e).cookie_fallbacks, 1);
	env_close(&e);
}
END_TEST

/*
 * An LLC may span NUMA nodes (one L3 over two nodes, as with sub-NUMA
 * clustering): limited to the target's LLC, the fallback still looks at
 * all of it, the other node's half too; limited to the node, only at its
 * own half. Cores [0 1] and [4 5] run cookie 5, the others 8; CPUs 0 and
 * 1 carry two tasks each, CPU 4 one.
 */
START_TEST(t_fallback_llc_spans_nodes)
{
	struct env e;
	uint64_t probes = 0;
	place_task *t;

	env_open(&e, "synthetic:pack:1 l3:1 group:2 [numa] core:2 pu:2", PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT,
		 true);
	for (int k = 0; k < 8; k++)
		env_run(&e, k, task_c(&e, 40 + k, k / 2 % 2 ? 8 : 5, -1));
	e.p->cookie_mixed = 1;
	ck_assert_int_eq(env_wake(&e, task_c(&e, 0, 5, 0), PLACE_CPU_NONE, 0), 0);
	ck_assert_int_eq(env_wake(&e, task_c(&e, 1, 5, 0), PLACE_CPU_NONE, 0), 1);
	t = task_c(&e, 2, 5, 0);
	ck_assert_int_ge(place__cookie_fallback(e.p, t, 0, PLACE_FIT_LLC, &probes), 4);
	ck_assert_int_lt(place__cookie_fallback(e.p, t, 0, PLACE_FIT_NODE, &probes), 2);
	env_close(&e);
}
END_TEST

/*
 * A cookie changed while its task runs takes effect at its next run_begin:
 * the run keeps the cookie it started with (a sibling of the old cookie is
 * admitted, of the new one refused), and run_end gives back exactly that.
 * PREEMPT ends the task's place on the core too.
 */
START_TEST(t_cookie_change_while_running)
{
	struct env e;
	place_task *a;

	env_open(&e, topos[_i], PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	a = task_c(&e, 0, 5, -1);
	env_run(&e, 0, a);
	ck_assert_int_eq(place_task_set_cookie(a, 7), 0);
	ck_assert_int_eq(place_run_begin(e.p, 1, task_c(&e, 1, 7, -1)), -EBUSY);
	env_run(&e, 1, task_c(&e, 2, 5, -1));
	ASSERT_OCC(&e, 0, 5, 2);
	ck_assert_int_eq(place_run_end(e.p, 0, a, PLACE_RUN_PREEMPT), 0);
	ASSERT_OCC(&e, 0, 5, 1);
	ck_assert_int_eq(place_run_begin(e.p, 0, a), -EBUSY); /* it resumes as cookie 7 */
	ck_assert_int_eq(place_run_end(e.p, 1, &e.task[2], PLACE_RUN_EXIT), 0);
	ASSERT_OCC(&e, 0, 0, 0);
	env_run(&e, 0, a);
	ASSERT_OCC(&e, 0, 7, 1);
	ck_assert_int_eq(place_task_set_cookie(a, 0), 0);
	ck_assert_int_eq(place_run_end(e.p, 0, a, PLACE_RUN_SLEEP), 0);
	ASSERT_OCC(&e, 0, 0, 0);
	env_close(&e);
}
END_TEST

/* With COOKIES off nothing is refused, steered or counted. */
START_TEST(t_feature_off)
{
	struct env e;
	place_stats st;

	env_open(&e, topos[_i], PLACE_POLICY_SIS_CORE, FEAT_NO_COOKIES, true);
	env_run(&e, 0, task_c(&e, 0, 5, -1));
	ck_assert_int_eq(env_wake(&e, task_c(&e, 1, 7, 1), PLACE_CPU_NONE, 0), 1);
	ck_assert_int_eq(place_steal_check(e.p, 1, task_c(&e, 2, 7, -1)), 0);
	env_run(&e, 1, &e.task[1]);
	ASSERT_OCC(&e, 0, 0, 0);
	st = env_stats(&e);
	ck_assert_uint_eq(st.cookie_refusals, 0);
	ck_assert_uint_eq(st.cookie_fallbacks, 0);
	ck_assert_uint_eq(st.forced_idle_ns, 0);
	env_close(&e);
}
END_TEST

/* A forced-idle CPU that parks stays forced idle while the other cookie
 * runs (issue 14.6: forced_idle_ns counted 0 after a 10 s wait); a worker
 * unregistered while its task runs gives the core back, and the forced idle
 * ends when the refused CPU starts. */
START_TEST(t_park_and_unregister)
{
	struct env e;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	env_run(&e, 0, task_c(&e, 0, 5, -1));
	e.now += 100;
	ck_assert_int_eq(place_run_begin(e.p, 1, task_c(&e, 1, 6, -1)), -EBUSY);
	e.now += 250;
	ck_assert_int_eq(place_idle_enter(e.p, 1), 0);
	e.now += 1000;
	ck_assert_int_eq(place_idle_enter(e.p, 1), 0); /* parked again: still forced idle */
	ck_assert_uint_eq(env_stats(&e).forced_idle_ns, 0);
	ck_assert_int_eq(place_worker_unregister(e.p, 0), 0);
	ASSERT_OCC(&e, 0, 0, 0);
	ck_assert_uint_eq(e.p->core[0].occ[PLACE_OCC_COUNT], 0); /* the bit went with the leave */
	e.now += 50;
	env_run(&e, 1, &e.task[1]);
	ck_assert_uint_eq(env_stats(&e).forced_idle_ns, 1300);
	ASSERT_OCC(&e, 0, 6, 1);
	ck_assert_int_eq(place_worker_register(e.p, 0, 0), 0);
	ck_assert_int_eq(place_run_begin(e.p, 0, &e.task[0]), -EBUSY);
	env_close(&e);
}
END_TEST

/*
 * Issue 14.6, the wake edge of forced idle: B (cookie 6) is refused on CPU 1
 * while A (cookie 5) runs on its sibling 0, and B's worker parks. The
 * place_run_end_retry of A names CPU 1; B then starts there. forced_idle_ns
 * counts from the refusal to that retry, the park notwithstanding. A
 * plain place_run_end would have named nobody, and a second run_end names
 * nobody again.
 */
START_TEST(t_retry_names_sibling)
{
	struct env e;
	place_task *a, *b;
	int retry[4] = { -1, -1, -1, -1 };

	env_open(&e, TOPO_4C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
	a = task_c(&e, 0, 5, -1);
	b = task_c(&e, 1, 6, -1);
	env_run(&e, 0, a);
	e.now += 100;
	ck_assert_int_eq(place_run_begin(e.p, 1, b), -EBUSY);
	e.now += 100;
	ck_assert_int_eq(place_idle_enter(e.p, 1), 0); /* parks, forced idle */
	e.now += 400;
	ck_assert_uint_eq(env_stats(&e).forced_idle_ns, 0);
	ck_assert_int_eq(place_run_end_retry(e.p, 0, a, PLACE_RUN_SLEEP, retry, 4), 1);
	ck_assert_int_eq(retry[0], 1);
	ck_assert_int_eq(retry[1], -1);
	env_run(&e, 1, b);
	ck_assert_uint_eq(env_stats(&e).forced_idle_ns, 500);
	ASSERT_OCC(&e, 0, 6, 1);
	/* nobody was refused since: nobody named */
	ck_assert_int_eq(place_run_end_retry(e.p, 1, b, PLACE_RUN_SLEEP, retry, 4), 0);
	env_close(&e);
}
END_TEST

/*
 * SMT4: A and A2 (cookie 5) on CPUs 0 and 2; B and C (cookie 6) refused on
 * 1 and 3. A's end leaves A2 running: nobody named. A2's end names 1 and 3
 * (max 1: the count says 2, one written). A CPU refused, then started on a
 * fitting task, is named too; never the CPU whose run_end it is. Errors
 * change nothing.
 */
START_TEST(t_retry_smt4)
{
	struct env e;
	place_task *a, *a2;
	int retry[4] = { -1, -1, -1, -1 };

	env_open(&e, TOPO_2C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	a = task_c(&e, 0, 5, -1);
	a2 = task_c(&e, 1, 5, -1);
	env_run(&e, 0, a);
	env_run(&e, 2, a2);
	ck_assert_int_eq(place_run_begin(e.p, 1, task_c(&e, 2, 6, -1)), -EBUSY);
	ck_assert_int_eq(place_run_begin(e.p, 3, task_c(&e, 3, 6, -1)), -EBUSY);
	ck_assert_int_eq(place_run_end_retry(e.p, 0, a, PLACE_RUN_SLEEP, NULL, 1), -EINVAL);
	ck_assert_int_eq(place_run_end_retry(e.p, 0, a, PLACE_RUN_SLEEP, retry, -1), -EINVAL);
	ck_assert_int_eq(place_run_end_retry(e.p, 0, a2, PLACE_RUN_SLEEP, retry, 4), -EINVAL);
	ASSERT_OCC(&e, 0, 5, 2);
	ck_assert_int_eq(place_run_end_retry(e.p, 0, a, PLACE_RUN_SLEEP, retry, 4), 0);
	ck_assert_int_eq(place_run_end_retry(e.p, 2, a2, PLACE_RUN_SLEEP, retry, 1), 2);
	ck_assert_int_eq(retry[0], 1);
	ck_assert_int_eq(retry[1], -1);
	ASSERT_OCC(&e, 0, 0, 0);
	/* refused, then started on a fitting task: named all the same (a hint;
	 * its deferred task may fit now); the run_end that empties the core
	 * never names its own CPU */
	env_run(&e, 0, a);
	ck_assert_int_eq(place_run_begin(e.p, 1, &e.task[2]), -EBUSY);
	env_run(&e, 1, a2);
	ck_assert_int_eq(place_run_end_retry(e.p, 1, a2, PLACE_RUN_SLEEP, retry, 4), 0);
	ck_assert_int_eq(place_run_end_retry(e.p, 0, a, PLACE_RUN_SLEEP, retry, 4), 1);
	ck_assert_int_eq(retry[0], 1);
	env_run(&e, 0, a);
	ck_assert_int_eq(place_run_begin(e.p, 1, &e.task[2]), -EBUSY);
	env_run(&e, 1, a2);
	ck_assert_int_eq(place_run_end_retry(e.p, 0, a, PLACE_RUN_SLEEP, retry, 4), 0);
	ck_assert_int_eq(place_run_end_retry(e.p, 1, a2, PLACE_RUN_SLEEP, retry, 4), 0); /* itself */
	/* a core of one CPU and COOKIES off never name anyone */
	env_close(&e);
	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, FEAT_NO_COOKIES, true);
	env_run(&e, 0, task_c(&e, 0, 5, -1));
	env_run(&e, 1, task_c(&e, 1, 6, -1));
	ck_assert_int_eq(place_run_end_retry(e.p, 0, &e.task[0], PLACE_RUN_EXIT, retry, 4), 0);
	env_close(&e);
}
END_TEST

/*
 * Work waiting on a core counts (issue 15): A (cookie 5) is claimed on CPU 0
 * and has not started, so nothing runs on core 0. A cookie-7 task whose
 * prev is CPU 1, idle, goes to another core (whole idle cores exist): core
 * 0 would refuse it once A starts. A cookie-5 task from prev 1 goes where
 * it runs too (not beside cookie 7). Every policy.
 */
START_TEST(t_queued_work_counts)
{
	struct env e;
	place_task *a;
	int cpu, cpu5;

	env_open(&e, TOPO_4C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
	a = task_c(&e, 0, 5, 0);
	ck_assert_int_eq(env_wake(&e, a, PLACE_CPU_NONE, 0), 0);
	ASSERT_OCC(&e, 0, 0, 0);
	cpu = env_wake(&e, task_c(&e, 1, 7, 1), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu >= 2, "%s: cookie 7 sent to CPU %d, beside a claimed cookie 5",
		      policy_name[_i], cpu);
	cpu5 = env_wake(&e, task_c(&e, 2, 5, 1), PLACE_CPU_NONE, 0);
	ck_assert_int_ne(env_core_of(&e, cpu5), env_core_of(&e, cpu));
	env_run(&e, 0, a);
	env_run(&e, cpu5, &e.task[2]);
	env_run(&e, cpu, &e.task[1]);
	ck_assert_uint_eq(env_stats(&e).cookie_refusals, 0);
	env_close(&e);
}
END_TEST

/*
 * place_run_refused: B (cookie 6) was claimed on CPU 1 as a cookie-5 task;
 * A (5) runs on CPU 0, so B's run_begin there is refused. Asked where B
 * should go, libplace gives up B's claim on CPU 1 (idle for wakeups again)
 * and claims a CPU of another core for it, where B starts. Bad input
 * changes nothing.
 */
START_TEST(t_refused_replaced)
{
	struct env e;
	place_task *a, *b;
	int cpu;

	env_open(&e, TOPO_4C8T, policies[_i], PLACE_FEAT_DEFAULT, true);
	a = task_c(&e, 0, 5, -1);
	b = task_c(&e, 1, 5, 1);
	env_run(&e, 0, a);
	ck_assert_int_eq(env_wake(&e, b, PLACE_CPU_NONE, 0), 1);
	ck_assert_int_eq(place_task_set_cookie(b, 6), 0);
	ck_assert_int_eq(place_run_begin(e.p, 1, b), -EBUSY);
	ck_assert_int_eq(place_run_refused(e.p, 1, b, 1u << 30), -EINVAL);
	ck_assert_int_eq(place_run_refused(NULL, 1, b, 0), -EINVAL);
	ck_assert_int_eq(place_run_refused(e.p, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(place_run_refused(e.p, 99, b, 0), -ENODEV);
	ck_assert_int_eq(place_worker_unregister(e.p, 7), 0);
	ck_assert_int_eq(place_run_refused(e.p, 7, b, 0), -ENOENT);
	ck_assert_int_eq(place_task_claimed(e.p, b), 1); /* the errors changed nothing */
	cpu = place_run_refused(e.p, 1, b, 0);
	ck_assert_msg(cpu >= 2, "%s: refused task re-placed on CPU %d", policy_name[_i], cpu);
	ck_assert_int_eq(place_task_claimed(e.p, b), cpu);
	ck_assert(env_available(&e, 1)); /* its claim there was given up */
	env_run(&e, cpu, b);
	ASSERT_OCC(&e, cpu, 6, 1);
	env_close(&e);
}
END_TEST

/*
 * The core-wide turn (SMT4): A and A2 (cookie 5) run on CPUs 0 and 2; B
 * (cookie 6) is refused on CPU 1. Within PLACE_COOKIE_TURN_NS cookie 5
 * still starts beside A2 (CPU 3); after it, the next cookie-5 run_begin is
 * refused (cookie_turns) and so is every one until the core is empty; the
 * last run_end names CPU 1 (and the drained CPUs), and B starts.
 */
START_TEST(t_turn_drains_core)
{
	struct env e;
	place_task *a, *a2, *a3, *b;
	int retry[4] = { -1, -1, -1, -1 }, n;
	place_stats st;

	env_open(&e, TOPO_2C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	a = task_c(&e, 0, 5, -1);
	a2 = task_c(&e, 1, 5, -1);
	a3 = task_c(&e, 2, 5, -1);
	b = task_c(&e, 3, 6, -1);
	env_run(&e, 0, a);
	env_run(&e, 2, a2);
	ck_assert_int_eq(place_run_begin(e.p, 1, b), -EBUSY);
	e.now += PLACE_COOKIE_TURN_NS / 2;
	env_run(&e, 3, a3); /* not yet its turn */
	ck_assert_int_eq(place_run_end(e.p, 3, a3, PLACE_RUN_SLEEP), 0);
	e.now += PLACE_COOKIE_TURN_NS / 2;
	ck_assert_int_eq(place_run_end(e.p, 0, a, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_run_begin(e.p, 0, a), -EBUSY); /* B's turn: the core drains */
	ck_assert_int_eq(place_run_begin(e.p, 3, a3), -EBUSY);
	ck_assert_int_eq(place_steal_check(e.p, 3, a3), -EBUSY); /* draining: no thief of 5 either */
	st = env_stats(&e);
	ck_assert_uint_eq(st.cookie_turns, 1);
	ck_assert_uint_eq(st.cookie_refusals, 3);
	ASSERT_OCC(&e, 2, 5, 1);
	n = place_run_end_retry(e.p, 2, a2, PLACE_RUN_SLEEP, retry, 4);
	ck_assert_int_eq(n, 3); /* 1, and the drained 0 and 3 */
	ck_assert_int_eq(retry[0], 0);
	ck_assert_int_eq(retry[1], 1);
	ck_assert_int_eq(retry[2], 3);
	env_run(&e, 1, b);
	ASSERT_OCC(&e, 1, 6, 1);
	ck_assert_int_eq(place_run_begin(e.p, 0, a), -EBUSY); /* now cookie 5 waits */
	env_close(&e);
}
END_TEST

/* place_steal_check, a thief's question: a sibling of the thief running
 * another cookie says no (-EBUSY), one running the task's cookie yes, and
 * another core yes; with the other cookie gone, yes. The check is a read:
 * nothing is refused or counted. */
START_TEST(t_steal_check)
{
	struct env e;
	place_task *a, *a2, *b;
	int other = smt_of[_i]; /* the first CPU of core 1 */

	env_open(&e, topos[_i], PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	a = task_c(&e, 0, 5, -1);
	a2 = task_c(&e, 1, 5, -1);
	b = task_c(&e, 2, 6, -1);
	env_run(&e, 0, a);
	ck_assert_int_eq(place_steal_check(e.p, 1, b), -EBUSY);
	ck_assert_int_eq(place_steal_check(e.p, 1, a2), 0);
	ck_assert_int_eq(place_steal_check(e.p, other, b), 0);
	ck_assert_uint_eq(env_stats(&e).cookie_refusals, 0);
	ASSERT_OCC(&e, 0, 5, 1);
	ck_assert_int_eq(place_run_end(e.p, 0, a, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_steal_check(e.p, 1, b), 0);
	env_close(&e);
}
END_TEST

/* place_task_set_cookie refuses NULL and uninitialised records; a refused
 * run_begin leaves the CPU able to take a fitting task at once. */
START_TEST(t_bad_input)
{
	struct env e;
	place_task junk;

	memset(&junk, 0xa5, sizeof(junk));
	ck_assert_int_eq(place_task_set_cookie(NULL, 1), -EINVAL);
	ck_assert_int_eq(place_task_set_cookie(&junk, 1), -EINVAL);
	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	ck_assert_int_eq(place_run_begin(e.p, 0, &junk), -EINVAL);
	ck_assert_int_eq(place_run_begin(NULL, 0, &e.task[0]), -EINVAL);
	ASSERT_OCC(&e, 0, 0, 0);
	env_run(&e, 0, task_c(&e, 0, 5, -1));
	ck_assert_int_eq(place_run_begin(e.p, 0, task_c(&e, 1, 5, -1)), -EBUSY); /* already runs one */
	ck_assert_int_eq(place_run_end(e.p, 1, &e.task[0], PLACE_RUN_SLEEP), -EINVAL); /* not there */
	ASSERT_OCC(&e, 0, 5, 1);
	ck_assert_int_eq(place_run_begin(e.p, 1, task_c(&e, 2, 6, -1)), -EBUSY);
	env_run(&e, 1, &e.task[1]);
	ASSERT_OCC(&e, 0, 5, 2);
	ck_assert_uint_eq(env_stats(&e).cookie_refusals, 1); /* "already runs" is not a refusal */
	env_close(&e);
}
END_TEST

static Suite *cookie_suite(void)
{
	Suite *s = suite_create("cookie");
	TCase *tc = tcase_create("cases");

	tcase_add_loop_test(tc, t_print_topology, 0, 2);
	tcase_add_loop_test(tc, t_refusal_changes_nothing, 0, 6);
	tcase_add_loop_test(tc, t_same_cookie_shares_core, 0, 2);
	tcase_add_test(tc, t_cookies_exact);
	tcase_add_loop_test(tc, t_one_cpu_core_admits_every_cookie, 0, 3);
	tcase_add_loop_test(tc, t_wakeups_avoid_incompatible_cores, 0, 3);
	tcase_add_loop_test(tc, t_fallback_compatible, 0, 3);
	tcase_add_test(tc, t_fallback_idle_is_claimed);
	tcase_add_loop_test(tc, t_fallback_other_llc, 0, 3);
	tcase_add_test(tc, t_fallback_grouped_stays_on_node);
	tcase_add_test(tc, t_fallback_llc_spans_nodes);
	tcase_add_test(tc, t_fallback_nearest_node);
	tcase_add_loop_test(tc, t_cookie_change_while_running, 0, 2);
	tcase_add_loop_test(tc, t_feature_off, 0, 2);
	tcase_add_test(tc, t_park_and_unregister);
	tcase_add_loop_test(tc, t_retry_names_sibling, 0, 3);
	tcase_add_test(tc, t_retry_smt4);
	tcase_add_loop_test(tc, t_queued_work_counts, 0, 3);
	tcase_add_loop_test(tc, t_refused_replaced, 0, 3);
	tcase_add_loop_test(tc, t_steal_check, 0, 2);
	tcase_add_test(tc, t_turn_drains_core);
	tcase_add_test(tc, t_bad_input);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(cookie_suite());
}
