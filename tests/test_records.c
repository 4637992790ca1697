/*
 * Task records across instances and lifetimes (issue 14 items 3 and 4): a
 * record that holds something on one instance (a claim or queue slot, a
 * pending NUMA move) is refused by another with -EXDEV, and nothing of
 * either instance changes; a record that holds nothing moves freely (also
 * through the short wakeup paths); place_task_init on a record that holds
 * something leaks nothing (its instance gives it up at its next call,
 * another drops it); and a wakeup that gives up a stale claim never fails
 * afterwards (-ESRCH with the claim gone): a deterministic case (a CPU
 * unregistered between the give-up and the target search, through a
 * --wrap of place__after_delivery) and a threaded one.
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

/* ---- the hook between a give-up and the rest of the wakeup ---------------- */

/* --wrap=place__after_delivery (tests/local.am): select.c's calls come here.
 * Armed, the first call unregisters hook_cpu's worker of hook_p, as a worker
 * leaving on another thread at that moment would. */
void __real_place__after_delivery(struct place *p, int cpu, uint64_t before, uint64_t after);
static struct place *hook_p;
static int hook_cpu = -1;
static int hook_calls;

void __wrap_place__after_delivery(struct place *p, int cpu, uint64_t before, uint64_t after);
void __wrap_place__after_delivery(struct place *p, int cpu, uint64_t before, uint64_t after)
{
	__real_place__after_delivery(p, cpu, before, after);
	if (hook_p == p && hook_cpu >= 0) {
		hook_calls++;
		ck_assert_int_eq(place_worker_unregister(p, hook_cpu), 0);
		hook_cpu = -1;
	}
}

/* ---- helpers ------------------------------------------------------------ */

/* Two instances over one topology, every CPU registered in both. */
static void open_two(struct env *a, struct env *b, const char *ta, const char *tb)
{
	env_open(a, ta, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	env_open(b, tb, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
}

static uint64_t state_of(struct env *e, int cpu)
{
	return e->p->cpu[cpu].state;
}

/* Every state word of e, to compare before and after a refused call. */
static void states(struct env *e, uint64_t *out)
{
	for (int i = 0; i < e->nr_cpus; i++)
		out[i] = state_of(e, i);
}

static void expect_states(struct env *e, const uint64_t *before, const char *what)
{
	for (int i = 0; i < e->nr_cpus; i++)
		ck_assert_msg(state_of(e, i) == before[i], "%s: CPU %d state %#llx, was %#llx", what, i,
			      (unsigned long long)state_of(e, i), (unsigned long long)before[i]);
}

/* ---- 14.3: one record, two instances ----------------------------------- */

/*
 * t claims CPU c on A; u claims the same CPU on B (both first claims: the
 * same generation). Today's bug: t's wakeup on B gave up "its" claim there,
 * ending u's, and a third task could then claim c on B too. Now every call
 * on B refuses t with -EXDEV and changes nothing; once A forgets t, B takes
 * it as a fresh record.
 */
START_TEST(t_foreign_claim)
{
	struct env a, b;
	place_task *t, *u;
	uint64_t before[8];
	int c, cu;

	open_two(&a, &b, TOPO_4C8T, TOPO_4C8T);
	t = &a.task[0];
	u = &b.task[0];
	c = env_wake(&a, t, PLACE_CPU_NONE, PLACE_WAKE_NEW);
	cu = env_wake(&b, u, PLACE_CPU_NONE, PLACE_WAKE_NEW);
	ck_assert_int_eq(cu, c);
	ck_assert_uint_eq(place__st_gen(state_of(&a, c)), place__st_gen(state_of(&b, c)));
	ck_assert_int_eq(place_task_claimed(b.p, u), c);
	states(&b, before);
	ck_assert_int_eq(place_wakeup(b.p, t, PLACE_CPU_NONE, 0), -EXDEV);
	ck_assert_str_ne(place_last_error(), "");
	ck_assert_int_eq(place_wakeup(b.p, t, PLACE_CPU_NONE, PLACE_WAKE_NEW), -EXDEV);
	ck_assert_int_eq(place_wakeup(b.p, t, 2, PLACE_WAKE_NOCLAIM), -EXDEV);
	ck_assert_int_eq(place_run_begin(b.p, 6, t), -EXDEV);
	ck_assert_int_eq(place_task_claimed(b.p, t), -EXDEV);
	ck_assert_int_eq(place_task_forget(b.p, t), -EXDEV);
	expect_states(&b, before, "calls on B with A's record");
	ck_assert_int_eq(place_task_claimed(b.p, u), c); /* u's claim stands */
	ck_assert_int_eq(place_task_claimed(a.p, t), c); /* and t's on A */
	ck_assert(!env_available(&b, c));
	/* A gives it up: the record is free to go */
	ck_assert_int_eq(place_task_forget(a.p, t), 0);
	ck_assert(env_available(&a, c));
	ck_assert_int_eq(place_task_claimed(b.p, t), PLACE_CPU_NONE);
	ck_assert_int_ne(env_wake(&b, t, PLACE_CPU_NONE, PLACE_WAKE_NEW), c);
	ck_assert_int_eq(place_task_claimed(b.p, u), c);
	env_close(&a);
	env_close(&b);
}
END_TEST

/*
 * A record that holds nothing moves between instances, through the short
 * paths too (prev idle: claimed at once; prev busy in an overloaded LLC:
 * stacked): each wakeup makes it the new instance's, and its run_begin
 * there is not refused. Then back to A.
 */
START_TEST(t_moves_when_empty)
{
	struct env a, b;
	place_task *t;
	int c;

	open_two(&a, &b, TOPO_4C8T, TOPO_4C8T);
	t = &a.task[1];
	env_run(&a, 3, t);
	env_park(&a, 3, t);
	c = env_wake(&b, t, PLACE_CPU_NONE, 0); /* prev 3 idle on B: the short path */
	ck_assert_int_eq(c, 3);
	ck_assert_int_eq(place_task_claimed(b.p, t), 3);
	ck_assert_int_eq(place_task_claimed(a.p, t), -EXDEV);
	env_run(&b, 3, t);
	ck_assert_int_eq(place_run_end(b.p, 3, t, PLACE_RUN_SLEEP), 0);
	/* prev busy, LLC overloaded on A: the stacking short path */
	env_run(&a, 3, &a.task[2]);
	a.p->llc[0].nr_idle_scan = 0;
	a.p->llc[0].has_idle_cores = 0;
	for (int i = 0; i < 8; i++)
		if (i != 3 && env_available(&a, i))
			env_run(&a, i, &a.task[10 + i]);
	ck_assert_int_eq(env_wake(&a, t, PLACE_CPU_NONE, 0), 3);
	ck_assert_int_eq(place_task_claimed(a.p, t), PLACE_CPU_NONE); /* stacked */
	ck_assert_int_eq(place_task_forget(b.p, t), -EXDEV); /* its slot is A's */
	ck_assert_int_eq(place__st_queued(state_of(&a, 3)), 1);
	ck_assert_int_eq(place_run_end(a.p, 3, &a.task[2], PLACE_RUN_SLEEP), 0);
	env_run(&a, 3, t);
	ck_assert_int_eq(place__st_queued(state_of(&a, 3)), 0);
	env_close(&a);
	env_close(&b);
}
END_TEST

/* A NUMA move of t on A (2 nodes), not started yet: t holds a slot under
 * the destination's moves cap there. Returns the CPU it was sent to. */
static int numa_move(struct env *a, place_task *t)
{
	int npc = a->nr_cpus / 2, waker = npc + 4, cpu; /* CPUs per node */

	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(place_task_set_group(&a->task[20 + i], 5), 0);
		env_run(a, npc + 2 * i, &a->task[20 + i]);
	}
	ck_assert_int_eq(place_task_set_group(t, 5), 0);
	place__rec(t)->prev_cpu = 2;
	cpu = env_wake(a, t, waker, 0);
	ck_assert_int_eq(a->p->map[cpu].node, 1);
	ck_assert_uint_eq(env_stats(a).numa_moves, 1);
	ck_assert_uint_eq(place__rec(t)->numa_pending, 2);
	ck_assert_uint_eq(a->p->numa_node[1].moving, 1);
	return cpu;
}

/* The SIGSEGV of the review: a pending NUMA move on A, then run_begin on B,
 * an instance with one node (no NUMA arrays). Refused; B unchanged. Runs in
 * a forked case (main() forces it): today's code dies here. */
START_TEST(t_foreign_numa_one_node)
{
	struct env a, b;
	uint64_t before[8];
	place_task *t;

	open_two(&a, &b, TOPO_2N, TOPO_4C8T);
	t = &a.task[0];
	numa_move(&a, t);
	states(&b, before);
	ck_assert_int_eq(place_run_begin(b.p, 1, t), -EXDEV);
	expect_states(&b, before, "run_begin on B");
	ck_assert_uint_eq(b.p->cpu[1].running, 0);
	ck_assert_uint_eq(a.p->numa_node[1].moving, 1); /* A's slot still held */
	ck_assert_int_eq(place_task_forget(a.p, t), 0);
	ck_assert_uint_eq(a.p->numa_node[1].moving, 0);
	env_run(&b, 1, t); /* now B's */
	env_close(&a);
	env_close(&b);
}
END_TEST

/* NUMA on both: the move pending on A must not count on B (today B's moving
 * count of node 1 went to 2^64 - 1, and B refused every later move). */
START_TEST(t_foreign_numa_two_nodes)
{
	struct env a, b;
	place_task *t;
	int cpu;

	open_two(&a, &b, TOPO_2N, TOPO_2N);
	t = &a.task[0];
	cpu = numa_move(&a, t);
	ck_assert_int_eq(place_run_begin(b.p, cpu, t), -EXDEV);
	ck_assert_int_eq(place_wakeup(b.p, t, b.nr_cpus / 2 + 4, 0), -EXDEV);
	ck_assert_uint_eq(b.p->numa_node[1].moving, 0);
	ck_assert_uint_eq(b.p->numa_node[0].moving, 0);
	ck_assert_uint_eq(a.p->numa_node[1].moving, 1);
	/* B still moves its own tasks */
	cpu = numa_move(&b, &b.task[0]);
	ck_assert_uint_eq(b.p->numa_node[1].moving, 1);
	env_run(&b, cpu, &b.task[0]);
	ck_assert_uint_eq(b.p->numa_node[1].moving, 0);
	env_run(&a, 1, t); /* started on A (another CPU): A's slot ends */
	ck_assert_uint_eq(a.p->numa_node[1].moving, 0);
	env_close(&a);
	env_close(&b);
}
END_TEST

/*
 * place_task_init is an initialiser: it never reads the record. A dropped
 * task is given up with place_task_forget first (then its CPU is free
 * again), and init forgets whatever the record held (a record that held
 * something on an instance now gone moves to another one freely).
 */
START_TEST(t_forget_then_init)
{
	struct env a;
	place_task *t;
	int c;

	env_open(&a, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	t = &a.task[0];
	c = env_wake(&a, t, PLACE_CPU_NONE, PLACE_WAKE_NEW);
	ck_assert(!env_available(&a, c));
	ck_assert_int_eq(place_task_forget(a.p, t), 0);
	place_task_init(t, 0, 0);
	ck_assert_int_eq(place__rec(t)->prev_cpu, -1);
	ck_assert_int_eq(place__rec(t)->queued_cpu, -1);
	ck_assert_msg(env_available(&a, c), "CPU %d still claimed: state %#llx", c,
		      (unsigned long long)state_of(&a, c));
	ck_assert_int_eq(place_claim_release(a.p, c), -ENOENT);
	env_close(&a);
}
END_TEST

START_TEST(t_init_forgets)
{
	struct env a, b;
	place_task *t, *u;
	int c;

	open_two(&a, &b, TOPO_4C8T, TOPO_4C8T);
	t = &a.task[0];
	u = &b.task[0];
	c = env_wake(&a, t, PLACE_CPU_NONE, PLACE_WAKE_NEW);
	ck_assert_int_eq(env_wake(&b, u, PLACE_CPU_NONE, PLACE_WAKE_NEW), c);
	ck_assert_int_eq(place_wakeup(b.p, t, PLACE_CPU_NONE, 0), -EXDEV); /* A's claim */
	env_close(&a);
	place_task_init(t, 0, 0);
	ck_assert_int_eq(place_task_claimed(b.p, t), PLACE_CPU_NONE);
	ck_assert_int_ne(env_wake(&b, t, PLACE_CPU_NONE, PLACE_WAKE_NEW), c);
	ck_assert_int_eq(place_task_claimed(b.p, u), c);
	ck_assert_int_eq(place_task_forget(b.p, t), 0);
	ck_assert_int_eq(place_task_claimed(b.p, u), c);
	env_close(&b);
}
END_TEST

/* ---- 14.4: no -ESRCH after the stale claim was given up ------------------- */

/*
 * t may run on CPUs 0 and 1; it holds a claim on X (one of them) whose
 * worker has left; the other, Y, is the only usable CPU. A new placement
 * gives the claim up; at that moment Y's worker leaves too (the hook).
 * Today: -ESRCH with the claim gone. Now the claim is given up only once
 * the target is found: the call succeeds (Y, as a concurrent unregister
 * allows), or, with Y gone first, fails with the claim kept.
 */
START_TEST(t_no_esrch_after_give_up)
{
	struct env e;
	cpu_set_t set;
	place_task *t;
	int x, y, cpu;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	t = &e.task[0];
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CPU_SET(1, &set);
	ck_assert_int_eq(place_task_set_cpus(t, &set, sizeof(set)), 0);
	x = env_wake(&e, t, PLACE_CPU_NONE, PLACE_WAKE_NEW);
	y = x ^ 1;
	ck_assert_int_eq(place_worker_unregister(e.p, x), 0);
	ck_assert_int_eq(place_task_claimed(e.p, t), x); /* a claim survives its worker */
	hook_p = e.p;
	hook_cpu = y;
	hook_calls = 0;
	cpu = place_wakeup(e.p, t, PLACE_CPU_NONE, PLACE_WAKE_NEW);
	hook_p = NULL;
	ck_assert_int_eq(hook_calls, 1);
	ck_assert_msg(cpu == y, "place_wakeup: %d (%s), expected %d", cpu, place_strerror(cpu), y);
	ck_assert(!(state_of(&e, x) & PLACE_ST_CLAIMED));
	/* Y gone before the call: -ESRCH, and t keeps its claim */
	ck_assert_int_eq(place_worker_register(e.p, x, 0), 0);
	ck_assert_int_eq(place_task_forget(e.p, t), 0);
	x = env_wake(&e, t, PLACE_CPU_NONE, PLACE_WAKE_NEW);
	ck_assert_int_eq(place_worker_unregister(e.p, x), 0);
	place_worker_unregister(e.p, x ^ 1);
	ck_assert_int_eq(place_wakeup(e.p, t, PLACE_CPU_NONE, PLACE_WAKE_NEW), -ESRCH);
	ck_assert_int_eq(place_task_claimed(e.p, t), x);
	env_close(&e);
}
END_TEST

/* The same race on threads: a worker of CPU 1 that keeps leaving and coming
 * back while t (allowed on CPUs 0 and 1, CPU 0's worker gone with t's claim
 * there) is placed again and again. Every -ESRCH must leave the claim. */
struct toggler {
	place *p;
	atomic_bool stop;
};

static void *toggle(void *arg)
{
	struct toggler *tg = arg;

	while (!atomic_load(&tg->stop)) {
		place_worker_register(tg->p, 1, 0);
		place_worker_unregister(tg->p, 1);
	}
	return NULL;
}

START_TEST(t_no_esrch_stress)
{
	struct env e;
	struct toggler tg;
	pthread_t th;
	cpu_set_t set;
	place_task *t;
	int fails = 0;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	t = &e.task[0];
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CPU_SET(1, &set);
	ck_assert_int_eq(place_task_set_cpus(t, &set, sizeof(set)), 0);
	ck_assert_int_eq(place_worker_unregister(e.p, 0), 0);
	ck_assert_int_eq(place_worker_unregister(e.p, 1), 0);
	tg.p = e.p;
	atomic_init(&tg.stop, false);
	ck_assert_int_eq(pthread_create(&th, NULL, toggle, &tg), 0);
	for (int i = 0; i < 20000; i++) {
		int held, cpu;

		if (place_task_claimed(e.p, t) != 0) { /* a fresh claim on CPU 0, its worker gone */
			ck_assert_int_eq(place_task_forget(e.p, t), 0);
			ck_assert_int_eq(place_worker_register(e.p, 0, 0), 0);
			cpu = place_wakeup(e.p, t, PLACE_CPU_NONE, PLACE_WAKE_NEW);
			ck_assert_int_eq(place_worker_unregister(e.p, 0), 0);
			if (cpu != 0 || place_task_claimed(e.p, t) != 0)
				continue;
		}
		held = place_task_claimed(e.p, t);
		cpu = place_wakeup(e.p, t, PLACE_CPU_NONE, PLACE_WAKE_NEW);
		if (cpu == -ESRCH) {
			fails++;
			ck_assert_msg(place_task_claimed(e.p, t) == held, "-ESRCH, claim %d gone (now %d)", held,
				      place_task_claimed(e.p, t));
		} else {
			ck_assert_msg(cpu >= 0, "place_wakeup: %d", cpu);
		}
	}
	atomic_store(&tg.stop, true);
	pthread_join(th, NULL);
	printf("t_no_esrch_stress: %d of 20000 placements found no CPU\n", fails);
	env_close(&e);
}
END_TEST

/*
 * Records shared by two instances under load: 4 threads, each the worker of
 * CPU i on both A and B and the only user of its own 8 tasks, wake, run,
 * forget and re-initialise them on either instance at random (a task
 * re-initialised while it holds something stays on its instance until that
 * is given up). A call refuses a task (-EXDEV) exactly when it holds
 * something on the other instance. At the end, with every task given up, no CPU of either instance is
 * claimed or counts a queued task: nothing leaked, no claim ended twice.
 */
#define XS_THREADS 4
#define XS_TASKS 8

struct xs {
	struct env *env[2];
	int id;
	unsigned seed;
};

static void *xs_thread(void *arg)
{
	struct xs *x = arg;
	int held[XS_TASKS]; /* the instance it holds something on, -1 none */

	for (int k = 0; k < XS_TASKS; k++)
		held[k] = -1;
	for (int n = 0; n < 3000; n++) {
		int k = rand_r(&x->seed) % XS_TASKS, i = rand_r(&x->seed) % 2, op = rand_r(&x->seed) % 8;
		place_task *t = &x->env[0]->task[x->id * XS_TASKS + k];
		bool foreign;
		place *p;
		int r;

		p = x->env[i]->p;
		foreign = held[k] >= 0 && held[k] != i;

		if (op == 7) { /* a dropped task: forgotten on its instance, then initialised */
			if (held[k] >= 0)
				ck_assert_int_eq(place_task_forget(x->env[held[k]]->p, t), 0);
			place_task_init(t, 0, 0);
			held[k] = -1;
			continue;
		}
		if (op >= 4) {
			r = place_task_forget(p, t);
			ck_assert_int_eq(r, foreign ? -EXDEV : 0);
			if (!foreign)
				held[k] = -1;
			continue;
		}
		r = place_wakeup(p, t, PLACE_CPU_NONE, op == 0 ? PLACE_WAKE_NEW : 0);
		if (foreign) {
			ck_assert_int_eq(r, -EXDEV);
			continue;
		}
		ck_assert_msg(r >= 0, "place_wakeup: %d", r);
		held[k] = i;
		if (op == 1) {
			ck_assert_int_eq(place_run_begin(p, x->id, t), 0);
			ck_assert_int_eq(place_run_end(p, x->id, t, PLACE_RUN_SLEEP), 0);
			held[k] = -1;
		}
	}
	for (int k = 0; k < XS_TASKS; k++)
		if (held[k] >= 0)
			ck_assert_int_eq(place_task_forget(x->env[held[k]]->p, &x->env[0]->task[x->id * XS_TASKS + k]), 0);
	return NULL;
}

START_TEST(t_cross_instance_stress)
{
	struct env a, b;
	struct xs x[XS_THREADS];
	pthread_t th[XS_THREADS];

	open_two(&a, &b, TOPO_4C8T, TOPO_4C8T);
	for (int i = 0; i < XS_THREADS; i++) {
		x[i] = (struct xs){ .env = { &a, &b }, .id = i, .seed = 7u + (unsigned)i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, xs_thread, &x[i]), 0);
	}
	for (int i = 0; i < XS_THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 8; i++) {
		ck_assert_msg(!(state_of(&a, i) & (PLACE_ST_CLAIMED | PLACE_ST_QUEUED_MASK)), "A CPU %d: %#llx", i,
			      (unsigned long long)state_of(&a, i));
		ck_assert_msg(!(state_of(&b, i) & (PLACE_ST_CLAIMED | PLACE_ST_QUEUED_MASK)), "B CPU %d: %#llx", i,
			      (unsigned long long)state_of(&b, i));
	}
	env_close(&a);
	env_close(&b);
}
END_TEST

static Suite *records_suite(void)
{
	Suite *s = suite_create("records");
	TCase *tc = tcase_create("cases");
	TCase *st = tcase_create("threads");

	tcase_add_test(tc, t_foreign_claim);
	tcase_add_test(tc, t_moves_when_empty);
	tcase_add_test(tc, t_foreign_numa_one_node);
	tcase_add_test(tc, t_foreign_numa_two_nodes);
	tcase_add_test(tc, t_forget_then_init);
	tcase_add_test(tc, t_init_forgets);
	tcase_add_test(tc, t_no_esrch_after_give_up);
	suite_add_tcase(s, tc);
	tcase_set_timeout(st, 60);
	tcase_add_test(st, t_no_esrch_stress);
	tcase_add_test(st, t_cross_instance_stress);
	suite_add_tcase(s, st);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(records_suite());
	int failed;

	/* t_foreign_numa_one_node crashed the process before the fix: each case
	 * runs in its own child whatever CK_FORK says */
	srunner_set_fork_status(r, CK_FORK);
	srunner_run_all(r, CK_ENV);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
