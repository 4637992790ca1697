/*
 * NUMA groups (issue 5 "NUMA groups", seed 003), case by case: the
 * per-(node, group) running counts follow run_begin and run_end, a
 * cross-node wakeup moves towards the node where its group runs when the
 * seed's rule holds and stays when the destination is busier, the
 * cool-down stops a second move, the cap stops a burst of moves, the
 * feature off (or no group) leaves the kernel's answers unchanged, a group
 * above max_groups is refused with -ENOSPC and nothing changes, and a
 * threaded random run leaves every count at zero. Two models: 2 packages x
 * 1 node x 2 L3 x 4 cores x 2 threads, and 8 nodes of one L3 (Zen3 NPS4
 * style, 2 packages x 4 nodes).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "numa.h"
#include "test_engine.h"
#include "testlib.h"

#define TOPO_2N "synthetic:pack:2 [numa] l3:2 core:4 pu:2"
#define TOPO_8N "synthetic:pack:2 group:4 [numa] l3:1 core:4 pu:2"

#define FEAT_NO_NUMA (PLACE_FEAT_DEFAULT & ~PLACE_FEAT_NUMA)
#define COOLDOWN_NS UINT64_C(10000000)

static const char *const topos[] = { TOPO_2N, TOPO_8N };
static const int nodes_of[] = { 2, 8 };
static const int dst_of[] = { 1, 5 }; /* the node the group runs on in the cases */

/* An instance like env_open's, with the NUMA knobs (0 = the defaults). */
static void numa_open(struct env *e, const char *source, unsigned feat, uint32_t max_groups,
		      uint32_t cap, uint64_t cooldown_ns)
{
	place_config cfg;

	place_config_init(&cfg);
	cfg.features = feat;
	if (max_groups)
		cfg.max_groups = max_groups;
	if (cap)
		cfg.numa_move_cap = cap;
	cfg.numa_cooldown_ns = cooldown_ns;
	env_open_cfg(e, source, &cfg, true);
}

static int npc(const struct env *e) /* CPUs per node */
{
	return e->nr_cpus / place_topo_nr_nodes(e->topo);
}

static int node_of(const struct env *e, int cpu)
{
	return e->p->map[cpu].node;
}

static uint64_t running(const struct env *e, int node, uint32_t g)
{
	return *place__numa_slot(e->p, node, g);
}

static uint64_t moving(const struct env *e, int node)
{
	return e->p->numa_node[node].moving;
}

/* Every (node, group) count and every moving count is zero. */
static void assert_all_zero(const struct env *e)
{
	for (int n = 0; n < place_topo_nr_nodes(e->topo); n++) {
		for (uint32_t g = 1; g <= e->p->max_groups; g++)
			ck_assert_msg(running(e, n, g) == 0, "node %d group %u: %llu running", n, g,
				      (unsigned long long)running(e, n, g));
		ck_assert_msg(moving(e, n) == 0, "node %d: %llu moving", n,
			      (unsigned long long)moving(e, n));
	}
}

/* Task i of group g, last run on prev (-1: none). */
static place_task *task_g(struct env *e, int i, uint32_t g, int prev)
{
	place_task *t = &e->task[i];

	ck_assert_int_eq(place_task_set_group(t, g), 0);
	if (prev >= 0)
		place__rec(t)->prev_cpu = prev;
	return t;
}

START_TEST(t_print_topology)
{
	struct env e;

	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 0, 0, COOLDOWN_NS);
	ck_assert_int_eq(place_topo_nr_nodes(e.topo), nodes_of[_i]);
	printf("topology %s: %d CPUs, %d nodes:", place_topo_source(e.topo), e.nr_cpus, nodes_of[_i]);
	for (int cpu = 0; cpu < e.nr_cpus; cpu++) {
		if (cpu % npc(&e) == 0)
			printf(" node%d=%d-%d", node_of(&e, cpu), cpu, cpu + npc(&e) - 1);
		ck_assert_int_eq(node_of(&e, cpu), cpu / npc(&e)); /* the cases rely on this */
	}
	printf("\n");
	ck_assert(PLACE_FEAT_DEFAULT & PLACE_FEAT_NUMA);
	ck_assert(e.p->numa_count);
	ck_assert_uint_eq(e.p->max_groups, 64);
	ck_assert_uint_eq(e.p->numa_move_cap, 4);
	env_close(&e);
}
END_TEST

/* The counts follow the run edges of every how, count the group captured at
 * run_begin (a set_group during the run changes the next run), nothing for
 * group 0, and unregister while running gives the count back. */
START_TEST(t_counts_follow_edges)
{
	struct env e;
	int d = 0, o; /* node 0, and another node o */

	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 0, 0, COOLDOWN_NS);
	o = dst_of[_i];
	env_run(&e, 0, task_g(&e, 0, 3, -1));
	ck_assert_uint_eq(running(&e, d, 3), 1);
	env_run(&e, 2, task_g(&e, 1, 3, -1));
	env_run(&e, o * npc(&e), task_g(&e, 2, 3, -1));
	env_run(&e, 4, task_g(&e, 3, 0, -1)); /* no group: counts nothing */
	ck_assert_uint_eq(running(&e, d, 3), 2);
	ck_assert_uint_eq(running(&e, o, 3), 1);
	for (uint32_t g = 1; g <= 64; g++)
		if (g != 3)
			ck_assert_uint_eq(running(&e, d, g) + running(&e, o, g), 0);
	ck_assert_int_eq(place_run_end(e.p, 0, &e.task[0], PLACE_RUN_SLEEP), 0);
	ck_assert_uint_eq(running(&e, d, 3), 1);
	ck_assert_int_eq(place_run_end(e.p, 2, &e.task[1], PLACE_RUN_PREEMPT), 0);
	ck_assert_uint_eq(running(&e, d, 3), 0);
	env_run(&e, 2, &e.task[1]); /* resumes: counted again */
	ck_assert_uint_eq(running(&e, d, 3), 1);
	/* the group changes during the run: run_end gives back group 3 */
	ck_assert_int_eq(place_task_set_group(&e.task[1], 7), 0);
	ck_assert_int_eq(place_run_end(e.p, 2, &e.task[1], PLACE_RUN_EXIT), 0);
	ck_assert_uint_eq(running(&e, d, 3), 0);
	ck_assert_uint_eq(running(&e, d, 7), 0);
	env_run(&e, 2, &e.task[1]);
	ck_assert_uint_eq(running(&e, d, 7), 1);
	ck_assert_int_eq(place_run_end(e.p, 2, &e.task[1], PLACE_RUN_SLEEP), 0);
	/* unregister while running */
	ck_assert_int_eq(place_worker_unregister(e.p, o * npc(&e)), 0);
	ck_assert_uint_eq(running(&e, o, 3), 0);
	ck_assert_int_eq(place_run_end(e.p, 4, &e.task[3], PLACE_RUN_SLEEP), 0);
	assert_all_zero(&e);
	env_close(&e);
}
END_TEST

/*
 * The group runs on dst (three tasks, one of them the waker's); t last ran
 * on an idle CPU of node 0, where nothing of the group runs. The kernel
 * would keep t on its idle prev; NUMA moves it to an idle CPU of the
 * waker's node and LLC. The move holds a slot under dst's cap until t
 * starts. With NUMA off, prev.
 */
START_TEST(t_move_when_rule_holds)
{
	int topo = _i / 2;
	bool on = _i % 2 == 0;
	struct env e;
	int D, waker, cpu;
	place_stats s;

	numa_open(&e, topos[topo], on ? PLACE_FEAT_DEFAULT : FEAT_NO_NUMA, 0, 0, COOLDOWN_NS);
	D = dst_of[topo] * npc(&e);
	waker = D + 4;
	env_run(&e, D, task_g(&e, 0, 5, -1));
	env_run(&e, D + 2, task_g(&e, 1, 5, -1));
	env_run(&e, waker, task_g(&e, 2, 5, -1));
	env_run(&e, 8 % npc(&e), task_g(&e, 9, 0, -1)); /* load on node 0, no group */
	cpu = env_wake(&e, task_g(&e, 3, 5, 2), waker, 0);
	s = env_stats(&e);
	if (!on) {
		ck_assert_int_eq(cpu, 2);
		ck_assert_uint_eq(s.numa_moves, 0);
		env_close(&e);
		return;
	}
	ck_assert_msg(node_of(&e, cpu) == dst_of[topo], "woke on CPU %d (node %d), expected node %d", cpu,
		      node_of(&e, cpu), dst_of[topo]);
	ck_assert_int_eq(e.p->map[cpu].llc, e.p->map[waker].llc);
	ck_assert(cpu != D && cpu != D + 2 && cpu != waker); /* an idle CPU there */
	ck_assert_uint_eq(s.numa_moves, 1);
	ck_assert_uint_eq(s.numa_kept + s.numa_cap_skips + s.numa_cooldown_skips, 0);
	ck_assert_uint_eq(moving(&e, dst_of[topo]), 1);
	ck_assert_uint_eq(place__rec(&e.task[3])->numa_pending, (uint32_t)dst_of[topo] + 1);
	if (_i % 4 == 2) { /* the runtime drops t instead: nothing stays held */
		ck_assert_int_eq(place_task_forget(e.p, &e.task[3]), 0);
		ck_assert_uint_eq(moving(&e, dst_of[topo]), 0);
		ck_assert_uint_eq(place__rec(&e.task[3])->numa_pending, 0);
		ck_assert(env_available(&e, cpu));
		ck_assert_int_eq(place_task_forget(e.p, &e.task[3]), 0); /* holds nothing: a no-op */
		env_close(&e);
		return;
	}
	env_run(&e, cpu, &e.task[3]);
	ck_assert_uint_eq(moving(&e, dst_of[topo]), 0);
	ck_assert_uint_eq(place__rec(&e.task[3])->numa_pending, 0);
	ck_assert_uint_eq(running(&e, dst_of[topo], 5), 4);
	ck_assert_uint_eq(running(&e, 0, 5), 0);
	env_close(&e);
}
END_TEST

/*
 * The group runs more on the waker's node, but t stays on prev's node:
 * (a) the destination is full (every CPU runs a task) while node 0 has
 * room; (b) the share rule fails: the group is 1 of 1 tasks on node 0
 * but 2 of 8 on dst. Counted in numa_kept. And (c) the group runs more on
 * prev's node: t stays there, although wake_affine would have taken it to
 * the waker (sync, the waker runs one task).
 */
START_TEST(t_stays_when_dst_busier)
{
	struct env e;
	int D, waker, cpu, n, k = 10;

	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 0, 0, COOLDOWN_NS);
	n = npc(&e);
	D = dst_of[_i] * n;
	waker = D + 1;
	/* (a) dst full: one group-5 task on the waker, the rest no group */
	env_run(&e, waker, task_g(&e, 0, 5, -1));
	for (int c = D; c < D + n; c++)
		if (c != waker)
			env_run(&e, c, task_g(&e, k++, 0, -1));
	cpu = env_wake(&e, task_g(&e, 1, 5, 3), waker, 0);
	ck_assert_msg(node_of(&e, cpu) == 0, "woke on CPU %d (node %d), expected node 0", cpu, node_of(&e, cpu));
	ck_assert_uint_eq(env_stats(&e).numa_kept, 1);
	ck_assert_uint_eq(env_stats(&e).numa_moves, 0);
	ck_assert_uint_eq(moving(&e, dst_of[_i]), 0);
	ck_assert_uint_eq(place__rec(&e.task[1])->numa_pending, 0);
	env_close(&e);

	/* (b) the rule: rd * nr_src >= rs * nr_dst is 2 * 1 >= 1 * 8: false */
	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 0, 0, COOLDOWN_NS);
	k = 10;
	env_run(&e, 0, task_g(&e, 0, 5, -1));
	env_run(&e, D, task_g(&e, 1, 5, -1));
	env_run(&e, waker, task_g(&e, 2, 5, -1));
	for (int c = D + 2; c < D + 8; c++)
		env_run(&e, c, task_g(&e, k++, 0, -1));
	cpu = env_wake(&e, task_g(&e, 3, 5, 3), waker, 0);
	ck_assert_int_eq(node_of(&e, cpu), 0);
	ck_assert_uint_eq(env_stats(&e).numa_kept, 1);
	ck_assert_uint_eq(env_stats(&e).numa_moves, 0);
	/* the others on dst go and one more group task comes: now 3 of 3
	 * there, against 1 running and t queued on node 0: 3 * 2 >= 1 * 3 */
	for (int c = D + 2; c < D + 8; c++)
		ck_assert_int_eq(place_run_end(e.p, c, &e.task[10 + c - D - 2], PLACE_RUN_SLEEP), 0);
	env_run(&e, D + 2, task_g(&e, 4, 5, -1));
	cpu = env_wake(&e, task_g(&e, 5, 5, 3), waker, 0);
	ck_assert_int_eq(node_of(&e, cpu), 0); /* the node loads sampled by the first decision */
	e.now += e.p->util_period_ns;
	cpu = env_wake(&e, task_g(&e, 5, 5, 3), waker, 0);
	ck_assert_int_eq(node_of(&e, cpu), dst_of[_i]);
	ck_assert_uint_eq(env_stats(&e).numa_moves, 1);
	env_close(&e);

	/* (c) the group runs more on prev's node than on the waker's */
	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 0, 0, COOLDOWN_NS);
	env_run(&e, 0, task_g(&e, 0, 5, -1));
	env_run(&e, 2, task_g(&e, 1, 5, -1));
	env_run(&e, waker, task_g(&e, 2, 5, -1));
	cpu = env_wake(&e, task_g(&e, 3, 5, 4), waker, PLACE_WAKE_SYNC);
	ck_assert_int_eq(node_of(&e, cpu), 0);
	ck_assert_uint_eq(env_stats(&e).affine_wakeups, 0);
	env_close(&e);
	/* the control: without a group, sync wake_affine takes it to the waker */
	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 0, 0, COOLDOWN_NS);
	env_run(&e, waker, task_g(&e, 2, 5, -1));
	cpu = env_wake(&e, task_g(&e, 3, 0, 4), waker, PLACE_WAKE_SYNC);
	ck_assert_int_eq(node_of(&e, cpu), dst_of[_i]);
	ck_assert_uint_eq(env_stats(&e).affine_wakeups, 1);
	env_close(&e);
}
END_TEST

/*
 * t moves to dst, runs and sleeps there. Then the group gathers on node 0
 * and a worker of node 0 wakes t: within the cool-down t stays on dst
 * (numa_cooldown_skips), even for a sync wakeup wake_affine would take;
 * after it, t moves back. A NOCLAIM answer within the cool-down changes
 * and counts nothing.
 */
START_TEST(t_cooldown)
{
	struct env e;
	int D, waker, cpu, back;
	place_task *t;
	uint8_t rec[sizeof(struct place_task_rec)];

	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 0, 0, COOLDOWN_NS);
	D = dst_of[_i] * npc(&e);
	waker = D + 4;
	env_run(&e, waker, task_g(&e, 0, 5, -1));
	t = task_g(&e, 1, 5, 2);
	cpu = env_wake(&e, t, waker, 0);
	ck_assert_int_eq(node_of(&e, cpu), dst_of[_i]);
	ck_assert_uint_eq(place__rec(t)->numa_moved_ns, e.now);
	env_run(&e, cpu, t);
	e.now += 1000;
	env_park(&e, cpu, t);
	ck_assert_int_eq(place_run_end(e.p, waker, &e.task[0], PLACE_RUN_SLEEP), 0);
	/* the group now runs on node 0 only */
	back = 6;
	env_run(&e, back, task_g(&e, 2, 5, -1));
	env_run(&e, 0, task_g(&e, 3, 5, -1));
	e.now += COOLDOWN_NS / 2;
	memcpy(rec, t->priv, sizeof(rec));
	cpu = place_wakeup(e.p, t, back, PLACE_WAKE_NOCLAIM);
	ck_assert_int_eq(node_of(&e, cpu), dst_of[_i]);
	ck_assert(memcmp(rec, t->priv, sizeof(rec)) == 0);
	ck_assert_uint_eq(env_stats(&e).numa_cooldown_skips, 0);
	cpu = env_wake(&e, t, back, PLACE_WAKE_SYNC);
	ck_assert_msg(node_of(&e, cpu) == dst_of[_i], "within the cool-down: CPU %d (node %d)", cpu,
		      node_of(&e, cpu));
	ck_assert_uint_eq(env_stats(&e).numa_cooldown_skips, 1);
	ck_assert_uint_eq(env_stats(&e).numa_moves, 1);
	ck_assert_int_eq(place_claim_release(e.p, cpu), 0);
	/* after the cool-down: moves back to the group */
	e.now += COOLDOWN_NS;
	cpu = env_wake(&e, t, back, 0);
	ck_assert_msg(node_of(&e, cpu) == 0, "after the cool-down: CPU %d (node %d)", cpu, node_of(&e, cpu));
	ck_assert_uint_eq(env_stats(&e).numa_moves, 2);
	ck_assert_uint_eq(env_stats(&e).numa_cooldown_skips, 1);
	ck_assert_uint_eq(moving(&e, 0), 1);
	env_run(&e, cpu, t);
	ck_assert_uint_eq(moving(&e, 0), 0);
	env_close(&e);
}
END_TEST

/*
 * A burst: ten tasks of the group, all last run on node 0, woken one after
 * the other by a worker of dst, where the group runs; none starts. Only cap
 * of them move (numa_cap_skips for the others); once a moved one starts,
 * one more may move. Default cap (4) and a configured one (2).
 */
START_TEST(t_cap)
{
	uint32_t cap = _i % 2 ? 2 : 4;
	int topo = _i / 2;
	struct env e;
	int D, waker, moved = 0, first = -1, cpu;

	numa_open(&e, topos[topo], PLACE_FEAT_DEFAULT, 0, _i % 2 ? cap : 0, COOLDOWN_NS);
	ck_assert_uint_eq(e.p->numa_move_cap, cap);
	D = dst_of[topo] * npc(&e);
	waker = D + 3;
	env_run(&e, waker, task_g(&e, 0, 5, -1));
	for (int i = 1; i <= 10; i++) {
		cpu = env_wake(&e, task_g(&e, i, 5, i % npc(&e)), waker, 0);
		if (node_of(&e, cpu) == dst_of[topo]) {
			moved++;
			if (first < 0)
				first = i;
		}
	}
	ck_assert_int_eq(moved, (int)cap);
	ck_assert_uint_eq(moving(&e, dst_of[topo]), cap);
	ck_assert_uint_eq(env_stats(&e).numa_moves, cap);
	ck_assert_uint_eq(env_stats(&e).numa_cap_skips, 10 - cap);
	/* the first moved task starts (on its claimed CPU): one slot frees */
	cpu = place_task_claimed(e.p, &e.task[first]);
	ck_assert_int_ge(cpu, 0);
	env_run(&e, cpu, &e.task[first]);
	ck_assert_uint_eq(moving(&e, dst_of[topo]), cap - 1);
	cpu = env_wake(&e, task_g(&e, 11, 5, 1), waker, 0);
	ck_assert_int_eq(node_of(&e, cpu), dst_of[topo]);
	ck_assert_uint_eq(moving(&e, dst_of[topo]), cap);
	env_close(&e);
}
END_TEST

/*
 * A burst within one util period: wakeups of other and other tasks of the
 * group (no cool-down), all last run on node 0, by a worker of dst, where
 * the group runs; each moved task starts where it was placed. Once dst's
 * CPUs are all busy the moves stop, within the decisions that one node load
 * sample answers (a node's CPUs / 8 + 1). A sample held for the whole
 * period answered every decision with the room dst had at the first, and
 * every task of the burst moved. A cap above the burst: only loads stop it.
 */
START_TEST(t_burst_sees_its_moves)
{
	struct env e;
	int n, D, waker, on_dst = 1; /* the waker's task */

	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 0, 64, COOLDOWN_NS);
	n = npc(&e);
	D = dst_of[_i] * n;
	waker = D + 1;
	env_run(&e, waker, task_g(&e, 0, 5, -1));
	for (int i = 1; i <= 2 * n; i++) {
		int cpu = env_wake(&e, task_g(&e, i, 5, i % n), waker, 0);

		if (node_of(&e, cpu) != dst_of[_i])
			continue;
		on_dst++;
		if (place_task_claimed(e.p, &e.task[i]) == cpu)
			env_run(&e, cpu, &e.task[i]);
	}
	ck_assert_msg(on_dst >= n && on_dst <= n + n / 8 + 1, "%d tasks sent to dst's %d CPUs", on_dst, n);
	ck_assert_uint_eq(env_stats(&e).numa_moves, (uint64_t)on_dst - 1);
	ck_assert_uint_eq(env_stats(&e).numa_kept, (uint64_t)(2 * n - on_dst + 1));
	env_close(&e);
}
END_TEST

/*
 * The same random script of wakeups and run edges, one task per call, on
 * four instances: NUMA off with grouped tasks, NUMA on and off without
 * groups, and NUMA on with groups. The first three must answer exactly
 * alike (the feature off, or no group, is the kernel's behaviour); the
 * last must differ somewhere, or the script never exercised a cross-node
 * decision and proves nothing.
 */
#define SCRIPT_STEPS 4000
static int run_script(const char *topo, unsigned feat, bool groups, int *answers)
{
	struct env e;
	place_task *cur_t[128];
	unsigned seed = 12345;

	numa_open(&e, topo, feat, 0, 0, COOLDOWN_NS);
	for (int c = 0; c < e.nr_cpus; c++)
		cur_t[c] = NULL;
	for (int i = 0; i < NR_TASKS; i++)
		place_task_set_group(&e.task[i], groups ? (uint32_t)(i % 3) + 1 : 0);
	for (int step = 0; step < SCRIPT_STEPS; step++) {
		int i = rand_r(&seed) % NR_TASKS, c = rand_r(&seed) % e.nr_cpus;
		place_task *t = &e.task[i];
		bool busy = false;

		e.now += 20000;
		for (int k = 0; k < e.nr_cpus; k++)
			busy |= cur_t[k] == t;
		if (busy) {
			answers[step] = -2;
			continue;
		}
		if (!cur_t[c]) {
			/* the worker of c starts t (it may have been woken anywhere) */
			int err = place_run_begin(e.p, c, t);

			ck_assert_int_eq(err, 0);
			cur_t[c] = t;
			answers[step] = -3;
		} else if (rand_r(&seed) % 3 == 0) {
			ck_assert_int_eq(place_run_end(e.p, c, cur_t[c], PLACE_RUN_SLEEP), 0);
			cur_t[c] = NULL;
			ck_assert_int_eq(place_idle_enter(e.p, c), 0);
			answers[step] = -4;
		} else {
			answers[step] = place_wakeup(e.p, t, c, rand_r(&seed) % 4 == 0 ? PLACE_WAKE_SYNC : 0);
			ck_assert_int_ge(answers[step], 0);
		}
	}
	{
		place_stats s = env_stats(&e);
		int moves = (int)s.numa_moves;

		env_close(&e);
		return moves;
	}
}

START_TEST(t_feature_off_unchanged)
{
	static int a[4][SCRIPT_STEPS];
	int diffs = 0, moves;

	ck_assert_int_eq(run_script(topos[_i], FEAT_NO_NUMA, true, a[0]), 0);
	ck_assert_int_eq(run_script(topos[_i], PLACE_FEAT_DEFAULT, false, a[1]), 0);
	ck_assert_int_eq(run_script(topos[_i], FEAT_NO_NUMA, false, a[2]), 0);
	moves = run_script(topos[_i], PLACE_FEAT_DEFAULT, true, a[3]);
	for (int s = 0; s < SCRIPT_STEPS; s++) {
		ck_assert_msg(a[0][s] == a[2][s] && a[1][s] == a[2][s], "step %d: %d %d %d", s, a[0][s],
			      a[1][s], a[2][s]);
		diffs += a[3][s] != a[2][s];
	}
	printf("%s: NUMA on with groups: %d numa moves, %d of %d answers differ\n", topos[_i], moves, diffs,
	       SCRIPT_STEPS);
	ck_assert_int_gt(moves, 0);
	ck_assert_int_gt(diffs, 0);
}
END_TEST

/* A group above max_groups: -ENOSPC at place_wakeup and place_run_begin,
 * and nothing changed (record, CPU lines, counts); max_groups itself is
 * fine; with NUMA off nothing is refused. Bad input. */
START_TEST(t_group_limit)
{
	struct env e;
	struct place_cpu cpus[16];
	uint8_t rec[sizeof(struct place_task_rec)];
	place_task *t;
	place_config cfg;
	place *q = NULL;

	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 8, 0, COOLDOWN_NS);
	ck_assert_uint_eq(e.p->max_groups, 8);
	t = task_g(&e, 0, 9, 2);
	memcpy(rec, t->priv, sizeof(rec));
	memcpy(cpus, e.p->cpu, sizeof(cpus));
	ck_assert_int_eq(place_wakeup(e.p, t, 3, 0), -ENOSPC);
	ck_assert_int_eq(place_wakeup(e.p, t, PLACE_CPU_NONE, PLACE_WAKE_NOCLAIM), -ENOSPC);
	ck_assert_int_eq(place_run_begin(e.p, 2, t), -ENOSPC);
	ck_assert(memcmp(rec, t->priv, sizeof(rec)) == 0);
	ck_assert(memcmp(cpus, e.p->cpu, sizeof(cpus)) == 0);
	ck_assert_str_eq(place_strerror(-ENOSPC), "limit reached");
	assert_all_zero(&e);
	ck_assert_uint_eq(env_stats(&e).wakeups, 0);
	/* the largest group is fine */
	ck_assert_int_eq(place_task_set_group(t, 8), 0);
	ck_assert_int_ge(place_wakeup(e.p, t, 3, 0), 0);
	env_run(&e, 2, t);
	ck_assert_uint_eq(running(&e, 0, 8), 1);
	ck_assert_int_eq(place_run_end(e.p, 2, t, PLACE_RUN_EXIT), 0);
	assert_all_zero(&e);
	env_close(&e);

	numa_open(&e, topos[_i], FEAT_NO_NUMA, 8, 0, COOLDOWN_NS);
	ck_assert(!e.p->numa_count);
	ck_assert_ptr_null(e.p->numa_running);
	t = task_g(&e, 0, 1000, 2);
	ck_assert_int_ge(place_wakeup(e.p, t, 3, 0), 0);
	env_run(&e, 2, t);
	ck_assert_int_eq(place_run_end(e.p, 2, t, PLACE_RUN_EXIT), 0);
	place_config_init(&cfg);
	cfg.max_groups = 65537;
	ck_assert_int_eq(place_create(&q, e.topo, &cfg), -EINVAL);
	ck_assert_ptr_null(q);
	env_close(&e);

	ck_assert_int_eq(place_task_set_group(NULL, 1), -EINVAL);
	{
		place_task junk;

		memset(&junk, 0xa5, sizeof(junk));
		ck_assert_int_eq(place_task_set_group(&junk, 1), -EINVAL);
	}
}
END_TEST

/* One node: nothing is counted or allocated, grouped tasks place as the
 * kernel does. */
START_TEST(t_one_node)
{
	struct env e;

	numa_open(&e, TOPO_4C8T, PLACE_FEAT_DEFAULT, 0, 0, COOLDOWN_NS);
	ck_assert(!e.p->numa_count);
	ck_assert_ptr_null(e.p->numa_running);
	env_run(&e, 0, task_g(&e, 0, 5, -1));
	ck_assert_uint_eq(e.p->slot[0].curr_group, 0);
	ck_assert_int_eq(place_run_end(e.p, 0, &e.task[0], PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_run_begin(e.p, 0, task_g(&e, 1, 65, -1)), -ENOSPC);
	env_close(&e);
}
END_TEST

/*
 * Threads: each owns the CPUs c with c % NR_THREADS == its index (it is
 * their worker) and a pool of tasks (one call per task at a time), and
 * loops: wake one of its tasks from one of its CPUs, start it on a free
 * CPU of its own (often a steal of the claim), end it (sleep, exit or
 * preempt, then resume), change groups while running. Then every thread
 * stops: the counts must equal what the threads know runs where, no node
 * has more moves in flight than the cap (1, so that wakers race for it);
 * once all tasks end, every count is zero.
 */
#define NR_THREADS 4
#define TASKS_PER_THREAD 12
#define ITERS 20000

struct mt {
	struct env *e;
	int id;
	place_task tasks[TASKS_PER_THREAD];
	place_task *cur[128];          /* what runs on each of its CPUs */
	uint32_t cur_group[128];       /* the group its run_begin saw */
	atomic_int errors;
};

static pthread_barrier_t mt_start;
static atomic_uint_fast64_t mt_now;

/* The threads' clock: every read moves it 1 us on, so cool-downs expire. */
static uint64_t mt_clock(void *arg)
{
	(void)arg;
	return (uint64_t)atomic_fetch_add(&mt_now, 1000) + 1000;
}

static void *mt_worker(void *arg)
{
	struct mt *m = arg;
	struct env *e = m->e;
	unsigned seed = 777u + (unsigned)m->id;
	int mine[128], nr_mine = 0;

	for (int c = m->id; c < e->nr_cpus; c += NR_THREADS)
		mine[nr_mine++] = c;
	pthread_barrier_wait(&mt_start);
	for (int it = 0; it < ITERS; it++) {
		int ti = rand_r(&seed) % TASKS_PER_THREAD;
		place_task *t = &m->tasks[ti];
		int c = mine[rand_r(&seed) % nr_mine], free_c = -1, running_on = -1, err;

		for (int k = 0; k < nr_mine; k++) {
			if (m->cur[mine[k]] == t)
				running_on = mine[k];
			if (!m->cur[mine[k]] && free_c < 0 && rand_r(&seed) % 2)
				free_c = mine[k];
		}
		if (running_on >= 0) {
			unsigned how = (unsigned)(rand_r(&seed) % 3);

			if (rand_r(&seed) % 4 == 0)
				place_task_set_group(t, (uint32_t)(rand_r(&seed) % 9)); /* 0..8 */
			if (place_run_end(e->p, running_on, t, how))
				atomic_fetch_add(&m->errors, 1);
			m->cur[running_on] = NULL;
			if (how == PLACE_RUN_PREEMPT && !place_run_begin(e->p, running_on, t)) {
				m->cur[running_on] = t; /* resumed */
				m->cur_group[running_on] = place__rec(t)->group;
			} else if (place_idle_enter(e->p, running_on)) {
				atomic_fetch_add(&m->errors, 1);
			}
			continue;
		}
		err = place_wakeup(e->p, t, c, rand_r(&seed) % 2 ? PLACE_WAKE_SYNC : 0);
		if (err < 0) {
			atomic_fetch_add(&m->errors, 1);
			continue;
		}
		if (free_c >= 0) {
			uint32_t g = place__rec(t)->group; /* only this thread sets it */

			if (place_run_begin(e->p, free_c, t)) {
				atomic_fetch_add(&m->errors, 1);
				continue;
			}
			m->cur[free_c] = t;
			m->cur_group[free_c] = g;
		}
	}
	return NULL;
}

START_TEST(t_threads_no_leak)
{
	struct env e;
	static struct mt m[NR_THREADS];
	pthread_t th[NR_THREADS];
	uint64_t want[8][9];
	long moves;

	numa_open(&e, topos[_i], PLACE_FEAT_DEFAULT, 8, 1, 200000); /* cap 1: the CAS is contended */
	atomic_store(&mt_now, e.now);
	e.p->clock = mt_clock; /* before any thread: the instance's clock is read-only after */
	memset(m, 0, sizeof(m));
	memset(want, 0, sizeof(want));
	pthread_barrier_init(&mt_start, NULL, NR_THREADS);
	for (int k = 0; k < NR_THREADS; k++) {
		m[k].e = &e;
		m[k].id = k;
		for (int i = 0; i < TASKS_PER_THREAD; i++)
			place_task_init(&m[k].tasks[i], 0, (uint32_t)(i % 9));
		ck_assert_int_eq(pthread_create(&th[k], NULL, mt_worker, &m[k]), 0);
	}
	for (int k = 0; k < NR_THREADS; k++)
		ck_assert_int_eq(pthread_join(th[k], NULL), 0);
	pthread_barrier_destroy(&mt_start);
	for (int k = 0; k < NR_THREADS; k++) {
		ck_assert_int_eq(atomic_load(&m[k].errors), 0);
		for (int c = 0; c < e.nr_cpus; c++)
			if (m[k].cur[c] && m[k].cur_group[c])
				want[node_of(&e, c)][m[k].cur_group[c]]++;
	}
	for (int n = 0; n < nodes_of[_i]; n++)
		for (uint32_t g = 1; g <= 8; g++)
			ck_assert_msg(running(&e, n, g) == want[n][g], "node %d group %u: %llu, expected %llu", n,
				      g, (unsigned long long)running(&e, n, g), (unsigned long long)want[n][g]);
	for (int n = 0; n < nodes_of[_i]; n++)
		ck_assert_msg(moving(&e, n) <= 1, "node %d: %llu moves in flight, cap 1", n,
			      (unsigned long long)moving(&e, n));
	/* end everything; tasks woken but never started start and end once */
	for (int k = 0; k < NR_THREADS; k++)
		for (int c = 0; c < e.nr_cpus; c++)
			if (m[k].cur[c])
				ck_assert_int_eq(place_run_end(e.p, c, m[k].cur[c], PLACE_RUN_EXIT), 0);
	for (int k = 0; k < NR_THREADS; k++)
		for (int i = 0; i < TASKS_PER_THREAD; i++)
			if (place__rec(&m[k].tasks[i])->queued_cpu >= 0) {
				env_run(&e, 0, &m[k].tasks[i]);
				ck_assert_int_eq(place_run_end(e.p, 0, &m[k].tasks[i], PLACE_RUN_EXIT), 0);
			}
	moves = (long)env_stats(&e).numa_moves;
	printf("%s: %d threads x %d iterations, %ld numa moves, %llu kept, %llu cap skips, "
	       "%llu cool-down skips\n",
	       topos[_i], NR_THREADS, ITERS, moves, (unsigned long long)env_stats(&e).numa_kept,
	       (unsigned long long)env_stats(&e).numa_cap_skips,
	       (unsigned long long)env_stats(&e).numa_cooldown_skips);
	ck_assert_int_gt(moves, 0);
	assert_all_zero(&e);
	env_close(&e);
}
END_TEST

static Suite *numa_suite(void)
{
	Suite *s = suite_create("numa");
	TCase *tc = tcase_create("cases");
	TCase *mt = tcase_create("threads");

	tcase_add_loop_test(tc, t_print_topology, 0, 2);
	tcase_add_loop_test(tc, t_counts_follow_edges, 0, 2);
	tcase_add_loop_test(tc, t_move_when_rule_holds, 0, 4);
	tcase_add_loop_test(tc, t_stays_when_dst_busier, 0, 2);
	tcase_add_loop_test(tc, t_cooldown, 0, 2);
	tcase_add_loop_test(tc, t_cap, 0, 4);
	tcase_add_loop_test(tc, t_burst_sees_its_moves, 0, 2);
	tcase_add_loop_test(tc, t_feature_off_unchanged, 0, 2);
	tcase_add_loop_test(tc, t_group_limit, 0, 2);
	tcase_add_test(tc, t_one_node);
	suite_add_tcase(s, tc);
	tcase_set_timeout(mt, 120);
	tcase_add_loop_test(mt, t_threads_no_leak, 0, 2);
	suite_add_tcase(s, mt);
	return s;
}

int main(void)
{
	return place_test_run(numa_suite());
}
