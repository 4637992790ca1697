/*
 * Core-scheduling isolation under races (issue 5 "Cookies", the seed's
 * "toggle cookies under load" negative test). Four worker threads each
 * serve two CPUs of an 8-CPU SMT2 or SMT4 machine (so a task keeps
 * "running" on one CPU while its thread works the other), a waker thread
 * wakes sleeping tasks from outside, and a setter thread keeps changing
 * tasks' cookies (whether they sleep, are queued or run) among a few values,
 * two of which differ only in their high half. Six threads on this 2-CPU VM.
 *
 * The oracle is independent of libplace: after each successful run_begin the
 * worker records (core, CPU, cookie) in a per-core table under a test-side
 * mutex and checks that no other CPU of that core holds a different cookie;
 * it clears the entry before run_end. The cookie it records is exact because
 * the setter changes a task's cookie only under that task's test-side lock,
 * which the worker holds across run_begin: set_cookie still races the task's
 * runs, queues and wakeups, just not the one load inside run_begin (the
 * deterministic suite covers that it reads the cookie once).
 *
 * A refused task goes back to its queue, or every other time where
 * place_run_refused says (a wakeup racing everything else).
 *
 * Passes when there are zero violations and many refusals (the mix must
 * actually contend), and when, at the end, each core's occupancy word
 * equals what the test knows runs there. A control run with COOKIES off
 * must see violations: the oracle can fail.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "cookie.h"
#include "stresslib.h"
#include "test_engine.h"
#include "testlib.h"

#define NCPU 8
#define NWORKER 4 /* thread k serves CPUs k and k + 4 */
#define NTASK 40
#define MAXSMT 4
#define RUN_NS 1000000000 /* wall time per run; a tenth under valgrind */

static const uint64_t cookies[] = { 0, 1, UINT64_C(0x100000001), 2 };
#define NCOOKIE (sizeof(cookies) / sizeof(cookies[0]))

struct oracle_core {
	bool busy[MAXSMT];
	uint64_t cookie[MAXSMT];
};

static struct {
	place *p;
	int smt;
	place_task task[NTASK];
	pthread_mutex_t task_lock[NTASK]; /* setter vs run_begin only */
	uint64_t cookie[NTASK];           /* the test's copy, under task_lock */
	struct stress_queue q[NCPU], sleeping;
	int cur[NCPU];                    /* task running on the CPU, -1; its worker only */
	pthread_mutex_t oracle_lock;
	struct oracle_core oracle[NCPU];
	atomic_int stop, failed;          /* failed: stress_fail, message in why */
	atomic_long ops, runs, refusals, violations, sets, moved;
	char why[200];
} g;

static void error(const char *what, int cpu, int err)
{
	stress_fail(&g.failed, g.why, sizeof(g.why), "%s on CPU %d returned %d", what, cpu, err);
}

/* The oracle: cpu now runs cookie; any sibling holding another is a co-run. */
static void oracle_record(int cpu, uint64_t cookie)
{
	struct oracle_core *o = &g.oracle[cpu / g.smt];

	pthread_mutex_lock(&g.oracle_lock);
	for (int k = 0; k < g.smt; k++)
		if (k != cpu % g.smt && o->busy[k] && o->cookie[k] != cookie)
			atomic_fetch_add(&g.violations, 1);
	o->busy[cpu % g.smt] = true;
	o->cookie[cpu % g.smt] = cookie;
	pthread_mutex_unlock(&g.oracle_lock);
}

static void oracle_clear(int cpu)
{
	pthread_mutex_lock(&g.oracle_lock);
	g.oracle[cpu / g.smt].busy[cpu % g.smt] = false;
	pthread_mutex_unlock(&g.oracle_lock);
}

/* Task i wakes; waker is a CPU of the calling worker or PLACE_CPU_NONE. */
static void wake(int i, int waker)
{
	int cpu = place_wakeup(g.p, &g.task[i], waker, 0);

	atomic_fetch_add(&g.ops, 1);
	if (cpu < 0 || cpu >= NCPU) {
		error("place_wakeup", waker, cpu);
		stress_queue_push(&g.sleeping, i);
		return;
	}
	stress_queue_push(&g.q[cpu], i);
}

/* A cookie refused task i on cpu: place_run_refused says where it waits
 * now (it gave up the slot on from, wherever the task was taken from). */
static void replace(int cpu, int i)
{
	int to = place_run_refused(g.p, cpu, &g.task[i], 0);

	atomic_fetch_add(&g.ops, 1);
	if (to < 0 || to >= NCPU) {
		error("place_run_refused", cpu, to);
		stress_queue_push(&g.sleeping, i);
		return;
	}
	if (to != cpu)
		atomic_fetch_add(&g.moved, 1);
	stress_queue_push(&g.q[to], i);
}

/* The worker of cpu tries task i, taken from queue from. Refused: it goes
 * back to that queue (it keeps its claim or slot there), or every other
 * time where place_run_refused says. */
static void try_start(int cpu, int i, int from, bool *parked)
{
	int err;

	pthread_mutex_lock(&g.task_lock[i]);
	err = place_run_begin(g.p, cpu, &g.task[i]);
	if (!err)
		oracle_record(cpu, g.cookie[i]);
	pthread_mutex_unlock(&g.task_lock[i]);
	atomic_fetch_add(&g.ops, 1);
	if (err == -EBUSY) {
		if (atomic_fetch_add(&g.refusals, 1) % 2)
			replace(cpu, i);
		else
			stress_queue_push(&g.q[from], i);
		return;
	}
	if (err) {
		error("place_run_begin", cpu, err);
		return;
	}
	g.cur[cpu] = i;
	*parked = false;
	atomic_fetch_add(&g.runs, 1);
}

static void stop_run(int cpu, unsigned *seed)
{
	int i = g.cur[cpu];
	unsigned how = stress_rand(seed) % 4 == 0 ? PLACE_RUN_PREEMPT : PLACE_RUN_SLEEP;
	int err;

	oracle_clear(cpu);
	g.cur[cpu] = -1;
	err = place_run_end(g.p, cpu, &g.task[i], how);
	atomic_fetch_add(&g.ops, 1);
	if (err)
		error("place_run_end", cpu, err);
	if (how == PLACE_RUN_PREEMPT)
		stress_queue_push(&g.q[cpu], i);
	else if (stress_rand(seed) % 2)
		stress_queue_push(&g.sleeping, i);
	else
		wake(i, cpu);
}

/* One step of the worker of cpu: end or continue its run, else start one
 * (from its queue, now and then stolen), else park. */
static void step(int cpu, unsigned *seed, bool *parked)
{
	int from = cpu, i;

	if (g.cur[cpu] >= 0) {
		if (stress_rand(seed) % 3 == 0)
			stop_run(cpu, seed);
		return;
	}
	i = stress_queue_pop(&g.q[cpu]);
	if (i < 0 && stress_rand(seed) % 4 == 0)
		i = stress_queue_pop(&g.q[from = (int)(stress_rand(seed) % NCPU)]);
	if (i >= 0) {
		try_start(cpu, i, from, parked);
		if (g.cur[cpu] >= 0 || stress_rand(seed) % 2)
			return;
	}
	if (!*parked) { /* empty queue, or forced idle */
		int err = place_idle_enter(g.p, cpu);

		atomic_fetch_add(&g.ops, 1);
		if (err)
			error("place_idle_enter", cpu, err);
		*parked = true;
	}
}

static void *worker(void *arg)
{
	int k = (int)(intptr_t)arg;
	unsigned seed = (unsigned)k * 7919u + 3;
	bool parked[2] = { true, true };

	while (!atomic_load(&g.stop)) {
		int which = (int)(stress_rand(&seed) % 2);

		step(k + which * NWORKER, &seed, &parked[which]);
		if (stress_rand(&seed) % 16 == 0)
			sched_yield();
	}
	return NULL;
}

static void *waker(void *arg)
{
	(void)arg;
	while (!atomic_load(&g.stop)) {
		int i = stress_queue_pop(&g.sleeping);

		if (i < 0)
			sched_yield();
		else
			wake(i, PLACE_CPU_NONE);
	}
	return NULL;
}

static void *setter(void *arg)
{
	unsigned seed = (unsigned)(intptr_t)arg;

	while (!atomic_load(&g.stop)) {
		int i = (int)(stress_rand(&seed) % NTASK);
		uint64_t c = cookies[stress_rand(&seed) % NCOOKIE];

		pthread_mutex_lock(&g.task_lock[i]);
		if (place_task_set_cookie(&g.task[i], c))
			error("place_task_set_cookie", -1, -EINVAL);
		g.cookie[i] = c;
		pthread_mutex_unlock(&g.task_lock[i]);
		atomic_fetch_add(&g.sets, 1);
		if (stress_rand(&seed) % 8 == 0)
			sched_yield();
	}
	return NULL;
}

/* Quiescent: each core's occupancy is what the test knows runs there (the
 * oracle still holds the cookie of every run in progress). */
static void check_occupancy(void)
{
	for (int core = 0; core < NCPU / g.smt; core++) {
		const uint64_t *occ = g.p->core[core].occ;
		const struct oracle_core *o = &g.oracle[core];
		uint64_t n = 0;

		for (int k = 0; k < g.smt; k++) {
			if (!o->busy[k])
				continue;
			n++;
			ck_assert_msg(occ[PLACE_OCC_COOKIE] == o->cookie[k],
				      "core %d: occupancy cookie %#llx, CPU %d runs %#llx", core,
				      (unsigned long long)occ[PLACE_OCC_COOKIE], core * g.smt + k,
				      (unsigned long long)o->cookie[k]);
		}
		ck_assert_msg(place__occ_count(occ[PLACE_OCC_COUNT]) == n,
			      "core %d: occupancy count %llu, %llu running", core,
			      (unsigned long long)place__occ_count(occ[PLACE_OCC_COUNT]), (unsigned long long)n);
	}
}

static bool enough_evidence(unsigned features)
{
	if (features & PLACE_FEAT_COOKIES)
		return atomic_load(&g.refusals) > 100;
	return atomic_load(&g.violations) > 0;
}

static void run(const char *topo_src, unsigned features)
{
	place_topo *topo;
	place_config cfg;
	pthread_t th[NWORKER + 2];
	uint64_t t0, run_ns = getenv("PLACE_UNDER_VALGRIND") ? RUN_NS / 10 : RUN_NS;
	place_stats st;
	long violations, refusals;

	if (!(features & PLACE_FEAT_COOKIES))
		run_ns /= 4; /* the control needs only a few co-runs */
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(place_topo_load(&topo, topo_src), 0);
	place_config_init(&cfg);
	cfg.features = features;
	ck_assert_int_eq(place_create(&g.p, topo, &cfg), 0);
	g.smt = NCPU / place_topo_nr_cores(topo);
	place_topo_free(topo);
	pthread_mutex_init(&g.oracle_lock, NULL);
	ck_assert(stress_queue_init(&g.sleeping, NTASK));
	for (int cpu = 0; cpu < NCPU; cpu++) {
		ck_assert(stress_queue_init(&g.q[cpu], NTASK));
		ck_assert_int_eq(place_worker_register(g.p, cpu, 0), 0);
		g.cur[cpu] = -1;
	}
	for (int i = 0; i < NTASK; i++) {
		pthread_mutex_init(&g.task_lock[i], NULL);
		g.cookie[i] = cookies[i % NCOOKIE];
		place_task_init(&g.task[i], g.cookie[i], 0);
		stress_queue_push(&g.sleeping, i);
	}
	for (int k = 0; k < NWORKER; k++)
		pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k);
	pthread_create(&th[NWORKER], NULL, waker, NULL);
	pthread_create(&th[NWORKER + 1], NULL, setter, (void *)(intptr_t)77);
	/* Run for run_ns, and on a slow or loaded machine (valgrind serialises
	 * the threads) go on, up to 8x, until the mix has shown what the
	 * assertions below need: refusals with COOKIES, co-runs without. */
	t0 = stress_wall_ns();
	while (!atomic_load(&g.failed) &&
	       (stress_wall_ns() - t0 < run_ns || (!enough_evidence(features) && stress_wall_ns() - t0 < 8 * run_ns)))
		usleep(10000);
	atomic_store(&g.stop, 1);
	for (int k = 0; k < NWORKER + 2; k++)
		pthread_join(th[k], NULL);

	ck_assert_msg(!atomic_load(&g.failed), "%s", g.why);
	ck_assert_int_eq(place_stats_read(g.p, -1, &st), 0);
	violations = atomic_load(&g.violations);
	refusals = atomic_load(&g.refusals);
	printf("%s, COOKIES %s: %ld operations, %ld runs, %ld cookie changes, %ld refusals (%ld moved "
	       "by place_run_refused), %ld violations; stats: refusals %lu, forced idle %.3f ms, fallbacks "
	       "%lu of %lu wakeups\n",
	       topo_src, features & PLACE_FEAT_COOKIES ? "on" : "off", atomic_load(&g.ops),
	       atomic_load(&g.runs), atomic_load(&g.sets), refusals, atomic_load(&g.moved), violations,
	       (unsigned long)st.cookie_refusals, st.forced_idle_ns / 1e6,
	       (unsigned long)st.cookie_fallbacks, (unsigned long)st.wakeups);
	if (features & PLACE_FEAT_COOKIES) {
		ck_assert_msg(violations == 0, "%ld co-runs of different cookies on one core", violations);
		ck_assert_msg(refusals > 100, "only %ld refusals: the mix did not contend", refusals);
		ck_assert_uint_eq(st.cookie_refusals, (uint64_t)refusals);
		check_occupancy();
		for (int cpu = 0; cpu < NCPU; cpu++)
			if (g.cur[cpu] >= 0)
				ck_assert_int_eq(place_run_end(g.p, cpu, &g.task[g.cur[cpu]], PLACE_RUN_EXIT), 0);
		for (int core = 0; core < NCPU / g.smt; core++)
			ck_assert_uint_eq(g.p->core[core].occ[PLACE_OCC_COUNT], 0);
	} else {
		/* the control: without isolation the oracle sees co-runs */
		ck_assert_msg(violations > 0, "the oracle saw no co-run without COOKIES");
		ck_assert_int_eq(refusals, 0);
	}
	for (int cpu = 0; cpu < NCPU; cpu++)
		stress_queue_free(&g.q[cpu]);
	stress_queue_free(&g.sleeping);
	place_destroy(g.p);
}

static const char *const topos[] = { "synthetic:pack:1 l3:1 core:4 pu:2",
				     "synthetic:pack:1 l3:1 core:2 pu:4" };

START_TEST(t_isolation_holds)
{
	run(topos[_i], PLACE_FEAT_DEFAULT);
}
END_TEST

START_TEST(t_control_without_cookies)
{
	run(topos[_i], PLACE_FEAT_DEFAULT & ~PLACE_FEAT_COOKIES);
}
END_TEST

static Suite *stress_suite(void)
{
	Suite *s = suite_create("cookie_stress");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, t_isolation_holds, 0, 2);
	tcase_add_loop_test(tc, t_control_without_cookies, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(stress_suite());
}
