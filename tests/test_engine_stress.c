/*
 * Many threads against one instance: eight worker threads (one per CPU of
 * a synthetic 4-core/8-thread machine) and two non-worker wakers, ten
 * threads on this 2-CPU VM, hammer place_wakeup, idle enter, run begin/end,
 * hand-offs (place_run_handoff, the stopped task then woken by its worker
 * while others may steal it), stealing and claim release. An oracle checks that a claim is exclusive:
 * each returned claim is recorded with a CAS on owner[cpu], which must find
 * the slot free; the claim's end clears it before libplace ends the claim.
 * At the end each CPU's QUEUED count and CLAIMED bit must match its queue,
 * and its spread mark the task that last slept there (check_marks).
 *
 * The test's own queues use a mutex: only libplace's paths are lock-free.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "stresslib.h"
#include "test_engine.h"
#include "testlib.h"

#define NCPU 8
#define NTASK 48
#define NEXTERNAL 2
#define RUN_NS 200000000 /* wall time of the hammering */

static struct {
	place *p;
	place_task task[NTASK];
	struct stress_queue q[NCPU];
	struct stress_queue sleeping;
	atomic_int owner[NCPU]; /* task + 1 holding a claim on the CPU, 0 none */
	atomic_int stop;
	atomic_int failed;
	atomic_long wakeups, runs, steals, releases, handoffs;
	char why[256];
	/* The spread's marks (slot.sleeper), as the oracle expects them: the
	 * task that last ended a run asleep on each CPU (its worker writes it),
	 * and per task the CPU of its last sleep and whether it started on
	 * another since (written by whoever runs it, the queues' mutex
	 * ordering one runner before the next; atomics, because other CPUs'
	 * workers read them in mark_live()). */
	int last_sleeper[NCPU];
	atomic_int slept_on[NTASK]; /* then moved false: see mark_live() */
	atomic_bool moved[NTASK];   /* set before the run_begin that drops the mark */
} g;

static void oracle_fail(const char *fmt, int a, int b)
{
	stress_fail(&g.failed, g.why, sizeof(g.why), fmt, a, b);
}

/* Task i was woken by waker: record its claim with the oracle, then deliver
 * it, or now and then pretend delivery failed and release the claim. */
static void wake(int i, int waker, unsigned *seed)
{
	place_task *t = &g.task[i];
	int cpu = place_wakeup(g.p, t, waker, stress_rand(seed) % 4 == 0 ? PLACE_WAKE_SYNC : 0);
	struct place_task_rec *r = place__rec(t);
	int expect = 0;

	atomic_fetch_add(&g.wakeups, 1);
	if (cpu < 0 || cpu >= NCPU) {
		oracle_fail("place_wakeup returned %d for task %d", cpu, i);
		return;
	}
	if ((place_task_claimed(g.p, t) == cpu) != (r->claim_gen != 0))
		oracle_fail("place_task_claimed disagrees for CPU %d, task %d", cpu, i);
	if (r->claim_gen && !atomic_compare_exchange_strong(&g.owner[cpu], &expect, i + 1))
		oracle_fail("CPU %d claimed twice (held by task %d)", cpu, expect - 1);
	if (r->claim_gen && stress_rand(seed) % 16 == 0) {
		atomic_store(&g.owner[cpu], 0);
		if (place_claim_release(g.p, cpu) != 0)
			oracle_fail("releasing our own claim on CPU %d failed (task %d)", cpu, i);
		atomic_fetch_add(&g.releases, 1);
		stress_queue_push(&g.sleeping, i);
		return;
	}
	stress_queue_push(&g.q[cpu], i);
}

/* Task i ended a run asleep on cpu: it holds cpu's mark. */
static void note_sleep(int cpu, int i)
{
	g.last_sleeper[cpu] = i;
	atomic_store(&g.slept_on[i], cpu);
	atomic_store(&g.moved[i], false);
}

/* Task i starts on cpu: not where it last slept, it gives that mark up
 * (said before run_begin takes it off, so that mark_live() never sees the
 * mark gone before the move is known). */
static void note_start(int cpu, int i)
{
	if (atomic_load(&g.slept_on[i]) != cpu)
		atomic_store(&g.moved[i], true);
}

/* Has task i, which slept on cpu last of all tasks, started elsewhere
 * since? moved is read before slept_on, which note_sleep() writes first:
 * a move followed by a sleep elsewhere shows in one or the other. */
static bool left(int cpu, int i)
{
	return atomic_load(&g.moved[i]) || atomic_load(&g.slept_on[i]) != cpu;
}

/* Before cpu's worker overwrites its mark (a task ends a run there asleep):
 * the mark is still its last sleeper's, or 0 once that task left; never
 * another task's, never 0 while the sleeper stays (a clear that raced a
 * store would have lost it). The load is sequentially consistent, as the
 * move's CAS: seeing the CAS's 0 means seeing the move noted before it. */
static void mark_live(int cpu)
{
	uint64_t m = __atomic_load_n(&g.p->slot[cpu].sleeper, __ATOMIC_SEQ_CST);
	int i = g.last_sleeper[cpu];

	if (i < 0 ? m != 0 : m != (uint64_t)(uintptr_t)&g.task[i] && (m || !left(cpu, i)))
		oracle_fail("CPU %d: its mark is not its last sleeper's (task %d), nor 0 after it left", cpu, i);
}

/* The claim of task i ends when it starts: clear the oracle first. A start
 * on another CPU than its last sleep's gives that mark up. */
static void start(int cpu, int i)
{
	struct place_task_rec *r = place__rec(&g.task[i]);
	int err;

	if (r->claim_gen) {
		int q = r->queued_cpu;

		if (atomic_load(&g.owner[q]) != i + 1)
			oracle_fail("task %d carries a claim on CPU %d that the oracle does not know", i, q);
		atomic_store(&g.owner[q], 0);
	}
	note_start(cpu, i);
	err = place_run_begin(g.p, cpu, &g.task[i]);
	if (err)
		oracle_fail("run_begin on CPU %d: %d", cpu, err);
}

/* Task i, running on cpu, hands cpu to a sleeping task (place_run_handoff)
 * and sleeps or is woken; returns the task now running, i when none was
 * handed the CPU. A refused hand-off (the sleeper still holds a released
 * claim's queue slot: -EBUSY) wakes it as a runtime would. */
static int hand_off(int cpu, int i, unsigned *seed)
{
	int j = stress_queue_pop(&g.sleeping), err;
	bool moved;

	if (j < 0)
		return i;
	moved = atomic_load(&g.moved[j]);
	mark_live(cpu);
	note_start(cpu, j);
	err = place_run_handoff(g.p, cpu, &g.task[i], PLACE_RUN_SLEEP, &g.task[j]);
	if (err) {
		atomic_store(&g.moved[j], moved); /* j did not start */
		if (err != -EBUSY)
			oracle_fail("place_run_handoff on CPU %d: %d", cpu, err);
		wake(j, cpu, seed);
		return i;
	}
	note_sleep(cpu, i);
	atomic_fetch_add(&g.wakeups, 1); /* counted as one */
	atomic_fetch_add(&g.handoffs, 1);
	atomic_fetch_add(&g.runs, 1);
	if (stress_rand(seed) % 2)
		stress_queue_push(&g.sleeping, i);
	else
		wake(i, cpu, seed); /* another worker's wakeup, racing this one's run */
	return j;
}

static void *worker(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	unsigned seed = (unsigned)cpu * 7919u + 1;
	bool parked = false;

	while (!atomic_load(&g.stop)) {
		int i = stress_queue_pop(&g.q[cpu]);

		if (i < 0 && stress_rand(&seed) % 4 == 0) { /* steal */
			i = stress_queue_pop(&g.q[stress_rand(&seed) % NCPU]);
			if (i >= 0)
				atomic_fetch_add(&g.steals, 1);
		}
		if (i < 0) {
			if (!parked && place_idle_enter(g.p, cpu) != 0)
				oracle_fail("idle_enter on CPU %d failed%.0d", cpu, 0);
			parked = true;
			sched_yield();
			continue;
		}
		parked = false;
		start(cpu, i);
		for (volatile int spin = 0; spin < 200; spin++)
			;
		if (stress_rand(&seed) % 8 == 0)
			i = hand_off(cpu, i, &seed);
		if (stress_rand(&seed) % 8 == 0) {
			place_run_end(g.p, cpu, &g.task[i], PLACE_RUN_PREEMPT);
			stress_queue_push(&g.q[cpu], i);
		} else {
			mark_live(cpu);
			place_run_end(g.p, cpu, &g.task[i], PLACE_RUN_SLEEP);
			note_sleep(cpu, i);
			if (stress_rand(&seed) % 4 == 0)
				stress_queue_push(&g.sleeping, i);
			else
				wake(i, cpu, &seed);
		}
		atomic_fetch_add(&g.runs, 1);
	}
	return NULL;
}

static void *external(void *arg)
{
	stress_wake_sleepers(&g.stop, &g.sleeping, wake, (unsigned)(intptr_t)arg);
	return NULL;
}

/* Each CPU's state word agrees with its queue: QUEUED = tasks there, and a
 * CLAIMED bit exactly when one of them holds the current claim. */
static void check_quiescent(void)
{
	for (int cpu = 0; cpu < NCPU; cpu++) {
		uint64_t s = g.p->cpu[cpu].state;
		int holders = 0;

		for (int k = 0; k < g.q[cpu].n; k++) {
			struct place_task_rec *r = place__rec(&g.task[g.q[cpu].item[k]]);

			ck_assert_int_eq(r->queued_cpu, cpu);
			holders += r->claim_gen && r->claim_gen == place__st_gen(s);
		}
		ck_assert_msg((int)place__st_queued(s) == g.q[cpu].n, "CPU %d: QUEUED %u, queue holds %d",
			      cpu, place__st_queued(s), g.q[cpu].n);
		ck_assert_int_le(holders, 1);
		ck_assert_msg(!!(s & PLACE_ST_CLAIMED) == (holders == 1), "CPU %d: CLAIMED %d, holders %d",
			      cpu, !!(s & PLACE_ST_CLAIMED), holders);
	}
}

/* Each CPU's spread mark is the task that last slept there if that task
 * has not started elsewhere since, else 0: the worker's stores and the
 * other threads' CASes (a task starting on another CPU takes its own mark
 * off) lost nothing and left nothing behind. */
static void check_marks(void)
{
	for (int cpu = 0; cpu < NCPU; cpu++) {
		int i = g.last_sleeper[cpu];
		uint64_t want = i >= 0 && !left(cpu, i) ? (uint64_t)(uintptr_t)&g.task[i] : 0;

		ck_assert_msg(g.p->slot[cpu].sleeper == want, "CPU %d: mark %#llx, wanted %#llx (last sleeper: task %d%s)",
			      cpu, (unsigned long long)g.p->slot[cpu].sleeper, (unsigned long long)want, i,
			      i >= 0 && left(cpu, i) ? ", which left" : "");
	}
}

START_TEST(t_claims_are_exclusive)
{
	static const int policy[] = { PLACE_POLICY_SIS_CORE, PLACE_POLICY_LINEAR, PLACE_POLICY_EXACT };
	place_topo *topo;
	place_config cfg;
	pthread_t th[NCPU + NEXTERNAL];
	place_stats st;
	uint64_t t0;

	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(place_topo_load(&topo, TOPO_4C8T), 0);
	place_config_init(&cfg);
	cfg.policy = policy[_i];
	cfg.util_period_ns = 100000; /* let SIS_UTIL move */
	ck_assert_int_eq(place_create(&g.p, topo, &cfg), 0);
	place_topo_free(topo);
	for (int cpu = 0; cpu < NCPU; cpu++) {
		ck_assert(stress_queue_init(&g.q[cpu], NTASK));
		ck_assert_int_eq(place_worker_register(g.p, cpu, 0), 0);
	}
	ck_assert(stress_queue_init(&g.sleeping, NTASK));
	for (int i = 0; i < NTASK; i++) {
		place_task_init(&g.task[i], 0, 0);
		stress_queue_push(&g.sleeping, i);
		g.slept_on[i] = -1;
	}
	for (int cpu = 0; cpu < NCPU; cpu++)
		g.last_sleeper[cpu] = -1;
	for (int k = 0; k < NCPU; k++)
		pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k);
	for (int k = 0; k < NEXTERNAL; k++)
		pthread_create(&th[NCPU + k], NULL, external, (void *)(intptr_t)(k + 100));
	t0 = stress_wall_ns();
	while (stress_wall_ns() - t0 < RUN_NS && !atomic_load(&g.failed))
		usleep(10000);
	atomic_store(&g.stop, 1);
	for (int k = 0; k < NCPU + NEXTERNAL; k++)
		pthread_join(th[k], NULL);

	ck_assert_msg(!g.failed, "%s", g.why);
	ck_assert_int_eq(place_stats_read(g.p, -1, &st), 0);
	printf("policy %d: %ld wakeups (%ld hand-offs), %ld runs, %ld steals, %ld releases; claims %lu, lost %lu, "
	       "stolen %lu, stacked %lu, probed %lu\n",
	       policy[_i], atomic_load(&g.wakeups), atomic_load(&g.handoffs), atomic_load(&g.runs),
	       atomic_load(&g.steals),
	       atomic_load(&g.releases), (unsigned long)st.claims, (unsigned long)st.lost_claims,
	       (unsigned long)st.claims_stolen, (unsigned long)st.hit_fallback,
	       (unsigned long)st.cpus_probed);
	ck_assert_uint_eq(st.wakeups, (uint64_t)atomic_load(&g.wakeups));
	ck_assert_uint_eq(st.hit_target + st.hit_prev + st.hit_recent + st.hit_idle_core + st.hit_idle_cpu +
				  st.hit_sibling + st.hit_prev_smt + st.hit_fallback + st.hit_widened,
			  st.wakeups);
	ck_assert_uint_eq(st.claims_released, (uint64_t)atomic_load(&g.releases));
	ck_assert_uint_gt(st.claims, 100);
	ck_assert_int_gt(atomic_load(&g.handoffs), 10);
	check_quiescent();
	check_marks();
	for (int cpu = 0; cpu < NCPU; cpu++)
		stress_queue_free(&g.q[cpu]);
	stress_queue_free(&g.sleeping);
	place_destroy(g.p);
}
END_TEST

/*
 * Issue 14.1 under threads and the real clock: a burst leaves the bound at
 * 0 (every CPU busy for 4 periods), then CPU 0 runs a long task and CPUs
 * 1-7 park, and nothing calls run_end. After 3 periods two external wakers
 * race to wake tasks that last ran on CPU 0: the bound's recheck (one CAS
 * on util_stamp decides who recomputes) must let them find the 7 idle CPUs,
 * each claimed once, after at most a few stacked wakeups (the check is
 * amortised over PLACE_RECHECK_EVERY stacked wakeups of the LLC's slot).
 */
#define QUIET_PERIOD_NS 1000000
static struct {
	place *p;
	place_task task[NCPU + 32];
	atomic_int next, found, stacked;
	atomic_int owner[NCPU];
} qg;

static void *quiet_waker(void *arg)
{
	(void)arg;
	for (int n = 0; n < 2 * PLACE_RECHECK_EVERY && atomic_load(&qg.found) < NCPU - 1; n++) {
		int i = NCPU + atomic_fetch_add(&qg.next, 1), expect = 0, cpu;

		place__rec(&qg.task[i])->prev_cpu = 0;
		cpu = place_wakeup(qg.p, &qg.task[i], PLACE_CPU_NONE, 0);
		if (cpu == 0)
			atomic_fetch_add(&qg.stacked, 1);
		else if (cpu > 0 && cpu < NCPU && atomic_compare_exchange_strong(&qg.owner[cpu], &expect, 1))
			atomic_fetch_add(&qg.found, 1);
		else
			atomic_store(&qg.stacked, 1000); /* an error or a CPU claimed twice */
	}
	return NULL;
}

START_TEST(t_quiet_llc_after_burst)
{
	place_topo *topo;
	place_config cfg;
	pthread_t th[2];

	memset(&qg, 0, sizeof(qg));
	ck_assert_int_eq(place_topo_load(&topo, "synthetic:pack:1 l3:1 core:8 pu:1"), 0);
	place_config_init(&cfg);
	cfg.util_period_ns = QUIET_PERIOD_NS;
	ck_assert_int_eq(place_create(&qg.p, topo, &cfg), 0);
	place_topo_free(topo);
	for (int i = 0; i < NCPU + 32; i++)
		place_task_init(&qg.task[i], 0, 0);
	for (int cpu = 0; cpu < NCPU; cpu++)
		ck_assert_int_eq(place_worker_register(qg.p, cpu, 0), 0);
	for (int k = 0; k < 4; k++) { /* the burst */
		for (int cpu = 0; cpu < NCPU; cpu++)
			ck_assert_int_eq(place_run_begin(qg.p, cpu, &qg.task[cpu]), 0);
		usleep(QUIET_PERIOD_NS / 1000 + 100);
		for (int cpu = 0; cpu < NCPU; cpu++)
			ck_assert_int_eq(place_run_end(qg.p, cpu, &qg.task[cpu], PLACE_RUN_SLEEP), 0);
	}
	ck_assert_uint_eq(qg.p->llc[0].nr_idle_scan & PLACE_SCAN_NR, 0);
	ck_assert_int_eq(place_run_begin(qg.p, 0, &qg.task[0]), 0); /* the long task */
	for (int cpu = 1; cpu < NCPU; cpu++)
		ck_assert_int_eq(place_idle_enter(qg.p, cpu), 0);
	usleep(3 * QUIET_PERIOD_NS / 1000);
	for (int k = 0; k < 2; k++)
		pthread_create(&th[k], NULL, quiet_waker, NULL);
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	printf("quiet LLC: %d idle CPUs found, %d wakeups stacked on the busy CPU 0, bound %u\n",
	       atomic_load(&qg.found), atomic_load(&qg.stacked), qg.p->llc[0].nr_idle_scan & PLACE_SCAN_NR);
	ck_assert_int_eq(atomic_load(&qg.found), NCPU - 1);
	ck_assert_int_le(atomic_load(&qg.stacked), 2 * PLACE_RECHECK_EVERY);
	place_destroy(qg.p);
}
END_TEST

static Suite *stress_suite(void)
{
	Suite *s = suite_create("engine_stress");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, t_claims_are_exclusive, 0, 3);
	tcase_add_test(tc, t_quiet_llc_after_burst);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(stress_suite());
}
