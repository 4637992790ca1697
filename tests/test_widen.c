/*
 * WIDEN (an idle CPU beyond the target's LLC), CLUSTER (the target's cluster
 * first) and place_idle_near() (the thief query). Each case fails on the
 * code before them: it stacked, scanned the LLC from target + 1 whatever the
 * clusters, and had no thief query.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc.h>

#include "test_engine.h"
#include "testlib.h"
#include "widen.h"

/* 2 nodes x 2 LLCs x 2 cores x SMT2: LLC l holds CPUs 4l .. 4l+3, node n
 * the LLCs 2n, 2n+1; cores {0,1}, {2,3}, ... */
#define TOPO_2N4L "synthetic:pack:2 [numa] l3:2 core:2 pu:2"
/* One LLC of 4 clusters (L2) of 4 cores, no SMT: cluster k = CPUs 4k .. 4k+3. */
#define TOPO_CLU "synthetic:pack:1 l3:1 l2:4 core:4 pu:1"
/* The same with SMT2: cluster k = CPUs 4k .. 4k+3, cores {4k, 4k+1}, {4k+2, 4k+3}. */
#define TOPO_CLU_SMT "synthetic:pack:1 l3:1 l2:4 core:2 pu:2"

static const int policies[] = { PLACE_POLICY_SIS_CORE, PLACE_POLICY_EXACT };
static const char *const policy_name[] = { "SIS_CORE", "EXACT" };

static void busy(struct env *e, int lo, int hi)
{
	for (int cpu = lo; cpu <= hi; cpu++)
		env_run(e, cpu, &e->task[32 + cpu]);
}

static int llc_of(struct env *e, int cpu)
{
	return e->p->map[cpu].llc;
}

/* LLC 0 full: the wakeup takes a whole idle core of the node's other LLC
 * (claimed, hit_widened), not a half-busy one, and never stacks on prev.
 * WIDEN off: it stacks on prev, as before. */
START_TEST(t_widen_takes_idle_core_in_node)
{
	for (int on = 0; on < 2; on++) {
		struct env e;
		int cpu;

		env_open(&e, TOPO_2N4L, policies[_i],
			 on ? PLACE_FEAT_DEFAULT : PLACE_FEAT_DEFAULT & ~PLACE_FEAT_WIDEN, true);
		busy(&e, 0, 4); /* LLC 0, and CPU 4: core {4,5} half busy, {6,7} idle */
		busy(&e, 8, 15); /* node 1 full */
		cpu = env_wake(&e, env_task_on(&e, 0, 1), PLACE_CPU_NONE, 0);
		if (!on) {
			ck_assert_int_eq(cpu, 1);
			ck_assert_uint_eq(env_stats(&e).hit_fallback, 1);
		} else {
			ck_assert_msg(cpu == 6 || cpu == 7, "%s: got %d, wanted the idle core {6,7}",
				      policy_name[_i], cpu);
			ck_assert(env_state(&e, cpu) & PLACE_ST_CLAIMED);
			ck_assert_uint_eq(env_stats(&e).hit_widened, 1);
			ck_assert_uint_eq(env_stats(&e).claims, 1);
			ck_assert_uint_eq(env_stats(&e).wakeups, 1);
		}
		env_close(&e);
	}
}
END_TEST

/* sched_ext's order: a whole idle core anywhere before an idle CPU in the
 * node; an idle CPU in the node before one on the other node. */
START_TEST(t_widen_order)
{
	struct env e;
	int cpu;

	env_open(&e, TOPO_2N4L, policies[_i], PLACE_FEAT_DEFAULT, true);
	busy(&e, 0, 6);  /* node 0: only CPU 7 idle (its sibling 6 busy) */
	busy(&e, 8, 11); /* node 1: LLC 3 (12-15) idle */
	cpu = env_wake(&e, env_task_on(&e, 0, 0), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu >= 12, "%s: got %d, wanted a whole idle core of LLC 3", policy_name[_i], cpu);
	busy(&e, 12, 15);
	/* everything but CPU 7 busy; a second idle CPU, 9, on the other node */
	place_run_end(e.p, 9, &e.task[32 + 9], PLACE_RUN_SLEEP);
	place_idle_enter(e.p, 9);
	cpu = env_wake(&e, env_task_on(&e, 1, 0), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 7, "%s: got %d, wanted 7 (the node's)", policy_name[_i], cpu);
	cpu = env_wake(&e, env_task_on(&e, 2, 0), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 9, "%s: got %d, wanted 9 (the other node)", policy_name[_i], cpu);
	ck_assert_uint_eq(env_stats(&e).hit_widened, 3);
	env_close(&e);
}
END_TEST

/* 4 nodes of one LLC of 2 cores (CPUs 2n, 2n + 1 on node n) whose hwloc
 * latency matrix puts node 2 nearest node 0 (20) and nodes 1 and 3 at 30;
 * node 3 nearest node 1. */
#define FIXTURE_NUMA_DIST "fixtures/numa-distances.xml"

static void open_fixture(struct env *e, const char *fixture, int policy)
{
	char source[4200];

	env_open(e, place_test_fixture(source, sizeof(source), fixture), policy, PLACE_FEAT_DEFAULT, true);
}

/* Beyond the target's node, the nearest node by hwloc's latencies first,
 * not the next in LLC order (node 1 comes first there: the code before
 * took CPU 2); nodes as far (1 and 3) in LLC order from the target's.
 * The thief query goes the same way. */
START_TEST(t_widen_nearest_node)
{
	struct env e;
	int cpu;

	open_fixture(&e, FIXTURE_NUMA_DIST, policies[_i]);
	ck_assert_ptr_nonnull(e.p->topo->node_dist);
	ck_assert_int_eq(e.p->topo->node_dist[0 * 4 + 2], 20);
	ck_assert_int_eq(e.p->topo->node_dist[0 * 4 + 1], 30);
	busy(&e, 0, 1); /* node 0 full; CPU 2, 3 (node 1), 4, 5 (node 2), 6, 7 idle */
	cpu = env_wake(&e, env_task_on(&e, 0, 0), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 4 || cpu == 5, "%s: got %d, wanted node 2 (20 away, not 30)", policy_name[_i], cpu);
	busy(&e, 4, 5); /* nodes 0 and 2 full */
	cpu = env_wake(&e, env_task_on(&e, 1, 1), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 2 || cpu == 3, "%s: got %d, wanted node 1 (a tie with 3: LLC order)", policy_name[_i],
		      cpu);
	cpu = place_idle_near(e.p, 4, 0); /* from node 2: nodes 1 and 3 both 30 away, LLC order from 2 */
	ck_assert_msg(cpu == 6 || cpu == 7, "%s: thief query got %d, wanted node 3", policy_name[_i], cpu);
	ck_assert_int_eq(place_claim_release(e.p, cpu), 0);
	env_close(&e);
	open_fixture(&e, FIXTURE_NUMA_DIST, policies[_i]);
	busy(&e, 2, 3); /* node 1 full: node 3 is nearest it, node 0 (first in LLC order) is not */
	cpu = place_idle_near(e.p, 2, 0);
	ck_assert_msg(cpu == 6 || cpu == 7, "%s: thief query got %d, wanted node 3 (20 away)", policy_name[_i], cpu);
	env_close(&e);
}
END_TEST

/* A task of a NUMA group stays on its node (node_only): with node 0 full
 * it stacks on prev, though the nearest node has idle CPUs; without a
 * group it goes to that node. */
START_TEST(t_widen_grouped_with_distances)
{
	struct env e;
	int cpu;

	open_fixture(&e, FIXTURE_NUMA_DIST, policies[_i]);
	busy(&e, 0, 1);
	ck_assert_int_eq(place_task_set_group(env_task_on(&e, 0, 0), 1), 0);
	ck_assert_int_eq(env_wake(&e, &e.task[0], PLACE_CPU_NONE, 0), 0);
	ck_assert_uint_eq(env_stats(&e).hit_fallback, 1);
	cpu = env_wake(&e, env_task_on(&e, 1, 1), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 4 || cpu == 5, "%s: got %d, wanted node 2", policy_name[_i], cpu);
	env_close(&e);
}
END_TEST

/* Without a latency matrix (synthetic): every other node is as far. */
START_TEST(t_widen_no_distances)
{
	place_topo *t;

	ck_assert_int_eq(place_topo_load(&t, TOPO_2N4L), 0);
	ck_assert_ptr_null(t->node_dist);
	place_topo_free(t);
}
END_TEST

/* A full scan of an LLC that finds no whole idle core clears its bit in
 * WIDEN's idle-core summary (SIS_CORE: with has_idle_cores); a core of it
 * going idle afterwards sets it again, and the next wakeup that widens
 * takes that whole core, not the idle CPU beside a busy sibling that the
 * idle-CPU pass meets first. */
START_TEST(t_widen_core_summary)
{
	struct env e;
	int cpu;

	env_open(&e, TOPO_2N4L, policies[_i], PLACE_FEAT_DEFAULT, true);
	busy(&e, 0, 4);
	busy(&e, 6, 6);  /* LLC 1: CPUs 5 and 7 idle, no whole idle core */
	busy(&e, 8, 15); /* node 1 full */
	cpu = env_wake(&e, env_task_on(&e, 0, 0), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 5 || cpu == 7, "%s: got %d", policy_name[_i], cpu);
	ck_assert(!(*place__llc_cores_word(e.p, env_llc(&e, 1)) & env_llc(&e, 1)->summary_bit));
	ck_assert_int_eq(place_claim_release(e.p, cpu), 0);
	env_park(&e, 6, &e.task[32 + 6]); /* core {6,7} idle again */
	cpu = env_wake(&e, env_task_on(&e, 1, 0), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu == 6 || cpu == 7, "%s: got %d, wanted the idle core {6,7}", policy_name[_i], cpu);
	ck_assert_uint_eq(env_stats(&e).hit_widened, 2);
	env_close(&e);
}
END_TEST

/* More LLCs than a summary word holds (72: LLCs 0-35 on node 0, 36-71 on
 * node 1, one core of SMT2 each): the rings run over both words in order,
 * from the target's LLC on and wrapping, its node first. Whole idle cores
 * in LLCs 2, 33, 40 and 70, every other CPU busy. */
START_TEST(t_widen_many_llcs)
{
	static place_task dummy[144];
	static const struct {
		int target_llc, want_llc;
	} cases[] = { { 65, 70 }, { 71, 40 }, { 30, 33 }, { 34, 2 } };
	struct env e;

	env_open(&e, "synthetic:pack:2 [numa] l3:36 core:1 pu:2", policies[_i], PLACE_FEAT_DEFAULT, true);
	ck_assert_int_eq(e.p->llc_words, 2);
	for (int cpu = 0; cpu < e.nr_cpus; cpu++) {
		int l = llc_of(&e, cpu);

		place_task_init(&dummy[cpu], 0, 0);
		if (l != 2 && l != 33 && l != 40 && l != 70)
			env_run(&e, cpu, &dummy[cpu]);
	}
	for (int k = 0; k < 4; k++) {
		int prev = -1, cpu;

		for (int c = 0; c < e.nr_cpus && prev < 0; c++)
			prev = llc_of(&e, c) == cases[k].target_llc ? c : -1;
		cpu = env_wake(&e, env_task_on(&e, k, prev), PLACE_CPU_NONE, 0);
		ck_assert_msg(llc_of(&e, cpu) == cases[k].want_llc, "%s: from LLC %d got CPU %d of LLC %d, wanted LLC %d",
			      policy_name[_i], cases[k].target_llc, cpu, llc_of(&e, cpu), cases[k].want_llc);
		ck_assert_int_eq(place_claim_release(e.p, cpu), 0);
	}
	env_close(&e);
}
END_TEST

#if HWLOC_API_VERSION >= 0x00020500
/* Export synthetic with the nodes' latency matrix lat (row: from) to a
 * temporary XML file, whose "xml:" source goes into source; the file's
 * path into path (the caller unlinks it). hwloc's synthetic strings carry
 * no distances: its API adds them. */
static void export_with_latencies(const char *synthetic, const hwloc_uint64_t *lat, unsigned nn, char *path,
				  char *source, size_t size)
{
	hwloc_topology_t t;
	hwloc_obj_t nodes[8];
	hwloc_distances_add_handle_t h;
	hwloc_uint64_t values[64];
	int fd;

	ck_assert_uint_le(nn, 8);
	memcpy(values, lat, nn * nn * sizeof(*lat)); /* hwloc's argument is not const */
	ck_assert_int_eq(hwloc_topology_init(&t), 0);
	ck_assert_int_eq(hwloc_topology_set_synthetic(t, synthetic), 0);
	ck_assert_int_eq(hwloc_topology_load(t), 0);
	for (unsigned i = 0; i < nn; i++)
		ck_assert_ptr_nonnull(nodes[i] = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i));
	h = hwloc_distances_add_create(t, "NUMALatency",
				       HWLOC_DISTANCES_KIND_FROM_USER | HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(hwloc_distances_add_values(t, h, nn, nodes, values, 0), 0);
	ck_assert_int_eq(hwloc_distances_add_commit(t, h, 0), 0);
	strcpy(path, "/tmp/place-widen-XXXXXX");
	ck_assert_int_ge(fd = mkstemp(path), 0);
	close(fd);
	ck_assert_int_eq(hwloc_topology_export_xml(t, path, 0), 0);
	hwloc_topology_destroy(t);
	snprintf(source, size, "xml:%s", path);
}

/* Four nodes of 18 one-CPU LLCs (72 LLCs: two summary words; node n holds
 * LLCs 18n .. 18n+17, node 3 across the words) and an asymmetric matrix
 * with three rings from node 0: node 2 (20), node 1 (40 from 0, 20 back:
 * 30), node 3 (34 and 30: 32). Read from node 0's row alone, node 3 would
 * come before node 1. Wakeups from node 0 with nodes 0 and 2 full, and
 * from node 3 itself (its ring 0, across the word boundary). */
START_TEST(t_widen_rings_asymmetric)
{
	static const hwloc_uint64_t lat[16] = { 10, 40, 20, 34, 20, 10, 30, 20, 20, 30, 10, 30, 30, 20, 30, 10 };
	static const int ring_from0[4] = { 0, 2, 1, 3 }, ring_from1[4] = { 2, 0, 2, 1 };
	static place_task dummy[72];
	char path[64], source[96];
	struct env e;
	int cpu;

	export_with_latencies("pack:4 [numa] l3:18 core:1 pu:1", lat, 4, path, source, sizeof(source));
	env_open(&e, source, policies[_i], PLACE_FEAT_DEFAULT, true);
	unlink(path);
	ck_assert_int_eq(e.p->llc_words, 2);
	ck_assert_int_eq(e.p->nr_rings, 4);
	for (int n = 0; n < 4; n++) {
		ck_assert_int_eq(e.p->node_ring[0 * 4 + n], ring_from0[n]);
		ck_assert_int_eq(e.p->node_ring[1 * 4 + n], ring_from1[n]);
	}
	for (cpu = 0; cpu < e.nr_cpus; cpu++) {
		int l = llc_of(&e, cpu);

		place_task_init(&dummy[cpu], 0, 0);
		if (l != 20 && l != 60 && l != 70)
			env_run(&e, cpu, &dummy[cpu]);
	}
	cpu = env_wake(&e, env_task_on(&e, 0, 5), PLACE_CPU_NONE, 0);
	ck_assert_msg(llc_of(&e, cpu) == 20, "%s: got LLC %d, wanted 20 (node 1, 30 away both ways)",
		      policy_name[_i], llc_of(&e, cpu));
	cpu = place_idle_near(e.p, 5, PLACE_WAKE_NOCLAIM);
	ck_assert_msg(llc_of(&e, cpu) == 60, "%s: thief query got LLC %d, wanted 60 (node 3, word 0 first)",
		      policy_name[_i], llc_of(&e, cpu));
	cpu = env_wake(&e, env_task_on(&e, 1, 66), PLACE_CPU_NONE, 0);
	ck_assert_msg(llc_of(&e, cpu) == 70, "%s: from LLC 66 got LLC %d, wanted 70 (after 66, word 1)",
		      policy_name[_i], llc_of(&e, cpu));
	cpu = env_wake(&e, env_task_on(&e, 2, 66), PLACE_CPU_NONE, 0);
	ck_assert_msg(llc_of(&e, cpu) == 60, "%s: from LLC 66 got LLC %d, wanted 60 (wrapping to word 0)",
		      policy_name[_i], llc_of(&e, cpu));
	env_close(&e);
}
END_TEST
#endif

/* A task with a NUMA group is widened within its target's node only; its
 * cpu_set_t is honoured; a cookie too (a core running another cookie is
 * not taken). */
START_TEST(t_widen_group_cpus_cookie)
{
	struct env e;
	cpu_set_t set;
	place_task *t;

	env_open(&e, TOPO_2N4L, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	busy(&e, 0, 7); /* node 0 full, node 1 idle */
	t = env_task_on(&e, 0, 0);
	ck_assert_int_eq(place_task_set_group(t, 1), 0);
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, 0), 0); /* stacked on prev, in its node */
	ck_assert_uint_eq(env_stats(&e).hit_widened, 0);
	ck_assert_int_eq(place_task_set_group(t, 0), 0);
	ck_assert_int_ge(env_wake(&e, t, PLACE_CPU_NONE, 0), 8); /* no group: anywhere */
	t = env_task_on(&e, 1, 0);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CPU_SET(13, &set);
	t->cpus = &set;
	t->cpus_size = sizeof(set);
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, 0), 13);
	env_close(&e);

	/* cookies: node 1's cores each run a task of cookie 7 on one sibling */
	env_open(&e, TOPO_2N4L, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	busy(&e, 0, 7);
	for (int cpu = 8; cpu < 16; cpu += 2) {
		place_task_set_cookie(&e.task[32 + cpu], 7);
		env_run(&e, cpu, &e.task[32 + cpu]);
	}
	t = env_task_on(&e, 2, 0);
	place_task_set_cookie(t, 9);
	ck_assert_int_lt(env_wake(&e, t, PLACE_CPU_NONE, PLACE_WAKE_NOCLAIM), 8);
	place_task_set_cookie(t, 7);
	ck_assert_int_ge(env_wake(&e, t, PLACE_CPU_NONE, PLACE_WAKE_NOCLAIM), 8);
	env_close(&e);
}
END_TEST

/* Saturated: nothing idle anywhere. The first wakeup repairs the stale
 * masks and clears the LLC summary; the next pays nothing beyond the
 * target's LLC. An idle CPU publishing sets its LLC's summary bit again. */
START_TEST(t_widen_saturated_is_cheap)
{
	struct env e;
	place_stats s0, s1;

	env_open(&e, TOPO_2N4L, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	busy(&e, 0, 15);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(env_wake(&e, env_task_on(&e, i, 0), PLACE_CPU_NONE, 0), 0);
	ck_assert_uint_eq(e.p->llc_idle[0] & ~UINT64_C(1), 0); /* only the target's may stay */
	s0 = env_stats(&e);
	ck_assert_int_eq(env_wake(&e, env_task_on(&e, 4, 0), PLACE_CPU_NONE, 0), 0);
	s1 = env_stats(&e);
	ck_assert_uint_le(s1.cpus_probed - s0.cpus_probed, 2); /* prev and its sibling */
	place_run_end(e.p, 13, &e.task[32 + 13], PLACE_RUN_SLEEP);
	place_idle_enter(e.p, 13);
	ck_assert(e.p->llc_idle[0] & (UINT64_C(1) << llc_of(&e, 13)));
	ck_assert_int_eq(env_wake(&e, env_task_on(&e, 5, 0), PLACE_CPU_NONE, 0), 13);
	env_close(&e);
}
END_TEST

/* Overloaded LLC 0 (bound 0 after a burst) where an idle CPU flagged the
 * bound (RECHECK), LLC 1 idle: every wakeup of a task whose prev is busy in
 * LLC 0 widens to LLC 1. The bound's age is looked at on one such wakeup in
 * PLACE_RECHECK_EVERY (a clock read), not on each: the throttle counts
 * widened wakeups as well as stacked ones, in the slot that the wakeup
 * counts in (the waker's, or LLC 0's external one). Before, it counted
 * stacked wakeups only, and every widened one read the clock. No SMT, so
 * no idle-core hint hides the bound; SIS_CORE (EXACT keeps no bound). */
START_TEST(t_widen_recheck_throttled)
{
	static const int wakers[] = { PLACE_CPU_NONE, 3 };
	const int n = 4 * PLACE_RECHECK_EVERY;
	struct counted_clock k;
	struct env e;

	env_open(&e, "synthetic:pack:1 l3:2 core:8 pu:1", PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	for (int round = 0; round < 8; round++) { /* LLC 0 busy for 8 periods */
		busy(&e, 0, 7);
		e.now += e.p->util_period_ns;
		for (int cpu = 0; cpu < 8; cpu++)
			ck_assert_int_eq(place_run_end(e.p, cpu, &e.task[32 + cpu], PLACE_RUN_SLEEP), 0);
	}
	busy(&e, 0, 6);
	ck_assert_int_eq(place_idle_enter(e.p, 7), 0);
	for (int cpu = 8; cpu < 16; cpu++)
		ck_assert_int_eq(place_idle_enter(e.p, cpu), 0);
	ck_assert_uint_eq(env_llc(&e, 0)->nr_idle_scan, PLACE_SCAN_RECHECK);
	env_count_clock(&e, &k);
	for (int i = 0; i < n; i++) {
		int waker = wakers[i % 2], cpu = env_wake(&e, env_task_on(&e, i, 0), waker, 0);

		ck_assert_msg(llc_of(&e, cpu) == 1, "wakeup %d (waker %d) went to CPU %d", i, waker, cpu);
		ck_assert_int_eq(place_claim_release(e.p, cpu), 0);
	}
	ck_assert_uint_eq(env_stats(&e).hit_widened, n);
	/* each slot (the external one, CPU 3's) reads the clock once in 8 */
	ck_assert_msg(k.reads <= 2 * (n / 2 / PLACE_RECHECK_EVERY + 1), "%lu clock reads for %d widened wakeups",
		      k.reads, n);
	env_close(&e);
}
END_TEST

/* An instance of policy on topo (cfg: its config) whose runtime has
 * thieves (PLACE_RUNTIME_THIEVES) or not. */
static void open_thieves(struct env *e, const char *topo, int policy, bool thieves, place_config *cfg)
{
	place_config_init(cfg);
	cfg->policy = policy;
	cfg->runtime = thieves ? PLACE_RUNTIME_THIEVES : 0;
	env_open_cfg(e, topo, cfg, true);
}

/* LLC 0 full, prev (CPU 1) running a task whose average run is short, an
 * idle core in the node's other LLC. With thieves (PLACE_RUNTIME_THIEVES)
 * t stacks on prev: the short run ends soon, and a thief takes t if it
 * does not. Without thieves nothing would: t widens to the idle core.
 * Before, it stacked on prev in both. */
START_TEST(t_widen_short_target_needs_thieves)
{
	for (int thieves = 0; thieves < 2; thieves++) {
		place_config cfg;
		struct env e;
		int cpu;

		open_thieves(&e, TOPO_2N4L, policies[_i], thieves, &cfg);
		place__rec(&e.task[32 + 1])->avg_run_ns = cfg.short_task_ns / 10; /* prev's task: short */
		busy(&e, 0, 4);  /* LLC 0, and CPU 4: core {6,7} idle */
		busy(&e, 8, 15); /* node 1 full */
		cpu = env_wake(&e, env_task_on(&e, 0, 1), PLACE_CPU_NONE, 0);
		if (thieves)
			ck_assert_msg(cpu == 1, "%s with thieves: got %d, wanted prev 1", policy_name[_i], cpu);
		else
			ck_assert_msg(cpu == 6 || cpu == 7, "%s without thieves: got %d, wanted the idle core {6,7}",
				      policy_name[_i], cpu);
		ck_assert_uint_eq(env_stats(&e).hit_widened, !thieves);
		env_close(&e);
	}
}
END_TEST

/* Every CPU busy, their mask bits stale (run_begin leaves them), then one
 * idle CPU in the last LLC: 8 stale bits lie before it in WIDEN's order
 * (LLCs 1 and 2). With thieves the idle-CPU pass stops after 8 bits and t
 * stacks on prev (a thief will take it); without thieves it visits every
 * bit, repairing the stale ones, and takes the idle CPU. Before, it stacked
 * in both. No SMT: no whole-core pass. */
START_TEST(t_widen_budget_needs_thieves)
{
	for (int thieves = 0; thieves < 2; thieves++) {
		place_config cfg;
		struct env e;
		int cpu;

		open_thieves(&e, "synthetic:pack:1 l3:4 core:4 pu:1", policies[_i], thieves, &cfg);
		busy(&e, 0, 15);
		ck_assert_int_eq(place_run_end(e.p, 15, &e.task[32 + 15], PLACE_RUN_SLEEP), 0);
		ck_assert_int_eq(place_idle_enter(e.p, 15), 0);
		cpu = env_wake(&e, env_task_on(&e, 0, 1), PLACE_CPU_NONE, 0);
		if (thieves && policies[_i] == PLACE_POLICY_SIS_CORE)
			ck_assert_msg(cpu == 1, "%s with thieves: got %d, wanted prev 1", policy_name[_i], cpu);
		else /* EXACT's masks hold no stale bit: the budget is never spent */
			ck_assert_msg(cpu == 15, "%s, thieves %d: got %d, wanted the idle CPU 15", policy_name[_i],
				      thieves, cpu);
		env_close(&e);
	}
}
END_TEST

/* The topology: clusters where an L2 holds several cores of the LLC, none
 * where it holds one (x86-like) or the whole LLC. The hybrid fixture has
 * none: its P-cores have an L2 each under their L3, and the L2 that the
 * four E-cores share is their LLC (no L3 above them), not a cluster. */
START_TEST(t_cluster_topology)
{
	place_topo *t;
	char source[4200];

	ck_assert_int_eq(place_topo_load(&t, TOPO_CLU), 0);
	ck_assert_int_eq(t->nr_clusters, 4);
	for (int cpu = 0; cpu < 16; cpu++)
		ck_assert_int_eq(t->cpu[cpu].cluster, cpu / 4);
	place_topo_free(t);
	ck_assert_int_eq(place_topo_load(&t, "synthetic:pack:1 l3:1 l2:4 core:1 pu:2"), 0);
	ck_assert_int_eq(t->nr_clusters, 0); /* an L2 per core: no cluster */
	place_topo_free(t);
	ck_assert_int_eq(place_topo_load(&t, "synthetic:pack:2 l2:1 core:4 pu:1"), 0);
	ck_assert_int_eq(t->nr_clusters, 0); /* the L2 is the LLC */
	place_topo_free(t);
	ck_assert_int_eq(place_topo_load(&t, place_test_fixture(source, sizeof(source), "fixtures/hybrid.xml")), 0);
	ck_assert_int_eq(t->nr_clusters, 0);
	for (int cpu = 0; cpu < 8; cpu++)
		ck_assert_int_eq(t->cpu[cpu].cluster, -1);
	place_topo_free(t);
}
END_TEST

/* The target's cluster has an idle CPU, another cluster of the LLC too,
 * and the scan from target + 1 meets the other first: CLUSTER takes the
 * one in the target's cluster (counted in hit_cluster); off, the other. */
START_TEST(t_cluster_first)
{
	for (int on = 0; on < 2; on++) {
		struct env e;
		int cpu;

		env_open(&e, TOPO_CLU, policies[_i],
			 on ? PLACE_FEAT_DEFAULT : PLACE_FEAT_DEFAULT & ~PLACE_FEAT_CLUSTER, true);
		busy(&e, 5, 7); /* cluster 1 = 4..7: only 4 idle; 8.. idle */
		cpu = env_wake(&e, env_task_on(&e, 0, 7), PLACE_CPU_NONE, 0);
		ck_assert_msg(cpu == (on ? 4 : 8), "%s cluster %s: got %d", policy_name[_i], on ? "on" : "off", cpu);
		ck_assert_uint_eq(env_stats(&e).hit_cluster, (uint64_t)on);
		env_close(&e);
	}
}
END_TEST

/* The idle-core scan too: SMT2, the target's cluster has a whole idle core
 * {4,5}, the next cluster {8,9} comes first from target + 1. */
START_TEST(t_cluster_first_core)
{
	for (int on = 0; on < 2; on++) {
		struct env e;
		int cpu;

		env_open(&e, TOPO_CLU_SMT, policies[_i],
			 on ? PLACE_FEAT_DEFAULT : PLACE_FEAT_DEFAULT & ~PLACE_FEAT_CLUSTER, true);
		busy(&e, 6, 7); /* core {6,7} busy; {4,5} idle */
		cpu = env_wake(&e, env_task_on(&e, 0, 7), PLACE_CPU_NONE, 0);
		if (on)
			ck_assert_msg(cpu == 4 || cpu == 5, "%s: got %d", policy_name[_i], cpu);
		else
			ck_assert_msg(cpu >= 8, "%s: got %d", policy_name[_i], cpu);
		ck_assert_uint_eq(env_stats(&e).hit_idle_core, 1);
		env_close(&e);
	}
}
END_TEST

/* The thief query: nearest first (sibling, cluster, LLC, node, machine),
 * each answer claimed (a wakeup does not get it) until released; then
 * -EAGAIN. NOCLAIM answers only. */
START_TEST(t_idle_near)
{
	struct env e;
	int got[16], n = 0, cpu;
	place_task *t;

	/* 2 nodes, each one LLC of 2 clusters of 2 SMT2 cores: 16 CPUs */
	env_open(&e, "synthetic:pack:2 [numa] l3:1 l2:2 core:2 pu:2", policies[_i], PLACE_FEAT_DEFAULT, true);
	busy(&e, 0, 0);
	ck_assert_int_eq(place_idle_near(e.p, 0, PLACE_WAKE_NOCLAIM), 1);
	ck_assert(env_available(&e, 1));
	while ((cpu = place_idle_near(e.p, 0, 0)) >= 0) {
		ck_assert_int_lt(n, 15);
		ck_assert(env_state(&e, cpu) & PLACE_ST_CLAIMED);
		got[n++] = cpu;
	}
	ck_assert_int_eq(cpu, -EAGAIN);
	ck_assert_int_eq(n, 15);
	ck_assert_int_eq(got[0], 1);                                 /* the sibling */
	ck_assert(got[1] >= 2 && got[1] <= 3 && got[2] >= 2 && got[2] <= 3); /* the cluster */
	for (int i = 3; i < 7; i++)
		ck_assert(got[i] >= 4 && got[i] <= 7);                /* the LLC */
	for (int i = 7; i < 15; i++)
		ck_assert(got[i] >= 8);                               /* the other node */
	/* claimed: a wakeup finds nothing idle */
	t = env_task_on(&e, 0, 5);
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, PLACE_WAKE_NOCLAIM), 5);
	/* the thief ends its claim: idle for wakeups again */
	ck_assert_int_eq(place_claim_release(e.p, 5), 0);
	ck_assert(env_available(&e, 5));
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, 0), 5);
	ck_assert_int_eq(place_idle_near(NULL, 0, 0), -EINVAL);
	ck_assert_int_eq(place_idle_near(e.p, 0, PLACE_WAKE_SYNC), -EINVAL);
	ck_assert_int_eq(place_idle_near(e.p, 0, PLACE_WAKE_NEW), -EINVAL);
	ck_assert_int_eq(place_idle_near(e.p, 0, ~0u), -EINVAL);
	ck_assert_int_eq(place_idle_near(e.p, -1, 0), -ENODEV);
	ck_assert_int_eq(place_idle_near(e.p, INT_MIN, 0), -ENODEV);
	ck_assert_int_eq(place_idle_near(e.p, 16, 0), -ENODEV);
	ck_assert(!env_available(&e, 6)); /* the refusals claimed nothing: 6 still ours */
	env_close(&e);
}
END_TEST

/* A thief that steals: the claim from place_idle_near ends with its
 * release, and the stolen task starts there as any stolen task. */
START_TEST(t_idle_near_thief_steals)
{
	struct env e;
	place_task *t;
	int thief;

	env_open(&e, TOPO_2LLC, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	t = &e.task[0];
	env_run(&e, 0, t);
	ck_assert_int_eq(place_run_end(e.p, 0, t, PLACE_RUN_PREEMPT), 0); /* queued on CPU 0 */
	busy(&e, 0, 0);
	thief = place_idle_near(e.p, 0, 0);
	ck_assert_int_eq(thief, 1);
	ck_assert_int_eq(place_claim_release(e.p, thief), 0);
	env_run(&e, thief, t); /* stolen */
	ck_assert_uint_eq(place__st_queued(env_state(&e, 0)), 0);
	ck_assert_uint_eq(env_state(&e, thief) & PLACE_ST_CLAIMED, 0);
	env_park(&e, thief, t);
	ck_assert(env_available(&e, thief));
	env_close(&e);
}
END_TEST

/* Concurrent: each thread is the worker of its own CPUs (run, park) and a
 * thief-waker (place_idle_near, then the thief's release) and a waker
 * (claimed wakeups, started at once). Afterwards, all parked: no claim
 * leaked, every non-empty LLC mask has its summary bit and every LLC with
 * an idle core hint (has_idle_cores, EXACT's icores) its idle-core summary
 * bit (the protocols of widen.h), and the thief query finds every other
 * CPU. */
#define NTHR 4
#define TOPO_STRESS "synthetic:pack:2 [numa] l3:4 core:2 pu:2"

struct stress {
	struct env *e;
	int id;
};

static void *stress_thread(void *arg)
{
	struct stress *st = arg;
	struct env *e = st->e;
	unsigned seed = (unsigned)st->id * 7919u + 1;

	for (int i = 0; i < 20000; i++) {
		int cpu = st->id + NTHR * (rand_r(&seed) % (e->nr_cpus / NTHR)); /* one of mine */
		place_task *t = &e->task[st->id * 8 + rand_r(&seed) % 8];
		int got;

		switch (rand_r(&seed) % 3) {
		case 0: /* my CPU runs a task and parks */
			place__rec(t)->prev_cpu = cpu;
			if (place_run_begin(e->p, cpu, t) == 0) {
				place_run_end(e->p, cpu, t, PLACE_RUN_SLEEP);
				place_idle_enter(e->p, cpu);
			}
			break;
		case 1: /* wake a thief near some CPU; it releases at once */
			got = place_idle_near(e->p, rand_r(&seed) % e->nr_cpus, 0);
			if (got >= 0)
				ck_assert_int_eq(place_claim_release(e->p, got), 0);
			break;
		default: /* a wakeup that claims; released (undeliverable) */
			place__rec(t)->prev_cpu = cpu;
			got = place_wakeup(e->p, t, PLACE_CPU_NONE, 0);
			if (got >= 0 && place_task_claimed(e->p, t) == got)
				place_claim_release(e->p, got);
			place_task_forget(e->p, t);
			break;
		}
	}
	return NULL;
}

START_TEST(t_widen_stress)
{
	struct env e;
	struct stress st[NTHR];
	pthread_t tid[NTHR];
	int n = 0;

	env_open(&e, TOPO_STRESS, policies[_i], PLACE_FEAT_DEFAULT, true);
	for (int i = 0; i < NTHR; i++) {
		st[i] = (struct stress){ &e, i };
		ck_assert_int_eq(pthread_create(&tid[i], NULL, stress_thread, &st[i]), 0);
	}
	for (int i = 0; i < NTHR; i++)
		pthread_join(tid[i], NULL);
	for (int cpu = 0; cpu < e.nr_cpus; cpu++) {
		ck_assert_int_eq(place_idle_enter(e.p, cpu), 0);
		ck_assert_msg(env_available(&e, cpu), "CPU %d: state %#llx", cpu,
			      (unsigned long long)env_state(&e, cpu));
	}
	for (int l = 0; l < e.p->topo->nr_llcs; l++) {
		const struct place_llc *llc = &e.p->llc[l];
		bool cores = policies[_i] == PLACE_POLICY_EXACT ? place_mask_next(llc->icores, llc->weight, 0) >= 0
								 : llc->has_idle_cores;

		if (place_mask_next(llc->icpus, llc->weight, 0) >= 0)
			ck_assert_msg(e.p->llc_idle[0] & (UINT64_C(1) << l), "LLC %d's mask hides", l);
		if (cores)
			ck_assert_msg(e.p->llc_cores[0] & (UINT64_C(1) << l), "LLC %d's idle core hides", l);
	}
	while (place_idle_near(e.p, 0, 0) >= 0)
		n++;
	ck_assert_int_eq(n, e.nr_cpus - 1);
	env_close(&e);
}
END_TEST

static Suite *widen_suite(void)
{
	Suite *s = suite_create("widen");
	TCase *tc = tcase_create("widen");

	tcase_add_loop_test(tc, t_widen_takes_idle_core_in_node, 0, 2);
	tcase_add_loop_test(tc, t_widen_order, 0, 2);
	tcase_add_loop_test(tc, t_widen_nearest_node, 0, 2);
	tcase_add_test(tc, t_widen_no_distances);
	tcase_add_loop_test(tc, t_widen_grouped_with_distances, 0, 2);
	tcase_add_loop_test(tc, t_widen_core_summary, 0, 2);
	tcase_add_loop_test(tc, t_widen_many_llcs, 0, 2);
#if HWLOC_API_VERSION >= 0x00020500
	tcase_add_loop_test(tc, t_widen_rings_asymmetric, 0, 2);
#endif
	tcase_add_test(tc, t_widen_group_cpus_cookie);
	tcase_add_test(tc, t_widen_saturated_is_cheap);
	tcase_add_test(tc, t_widen_recheck_throttled);
	tcase_add_loop_test(tc, t_widen_short_target_needs_thieves, 0, 2);
	tcase_add_loop_test(tc, t_widen_budget_needs_thieves, 0, 2);
	tcase_add_test(tc, t_cluster_topology);
	tcase_add_loop_test(tc, t_cluster_first, 0, 2);
	tcase_add_loop_test(tc, t_cluster_first_core, 0, 2);
	tcase_add_loop_test(tc, t_idle_near, 0, 2);
	tcase_add_test(tc, t_idle_near_thief_steals);
	tcase_add_loop_test(tc, t_widen_stress, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(widen_suite());
}
