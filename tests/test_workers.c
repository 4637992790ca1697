/*
 * Runtimes that are not one pinned thread per CPU (issue 16 items 2-7):
 * a wakeup of a task still running is refused (-EALREADY) and changes
 * nothing; PLACE_WAKE_REMOTE carries a waker's CPU from another thread;
 * the startup window (no worker yet) answers -ESRCH at once and says so;
 * hot-path errors name their cause in place_last_error(); several workers
 * per CPU (PLACE_WORKER_SHARED); BIND restores the mask it replaced.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "test_engine.h"
#include "testlib.h"

/* Everything a failed call must leave alone: every state word, the task. */
struct snap {
	uint64_t state[64];
	unsigned char rec[sizeof(((place_task *)0)->priv)];
	place_stats stats;
};

static void take_snap(struct env *e, const place_task *t, struct snap *s)
{
	for (int i = 0; i < e->nr_cpus; i++)
		s->state[i] = env_state(e, i);
	memcpy(s->rec, t->priv, sizeof(s->rec));
	s->stats = env_stats(e);
}

static void same_snap(struct env *e, const place_task *t, const struct snap *a)
{
	struct snap b;

	take_snap(e, t, &b);
	for (int i = 0; i < e->nr_cpus; i++)
		ck_assert_msg(a->state[i] == b.state[i], "cpu %d state changed", i);
	ck_assert(memcmp(a->rec, b.rec, sizeof(a->rec)) == 0);
	ck_assert(memcmp(&a->stats, &b.stats, sizeof(a->stats)) == 0);
}

static bool error_says(const char *what)
{
	return strstr(place_last_error(), what) != NULL;
}

/* ---- item 2: a wakeup of a task still running -------------------------- */

/* Every kind of wakeup of a running task: -EALREADY, nothing changed,
 * place_last_error() names the CPU; after its run_end it wakes normally. */
START_TEST(t_wake_running_refused)
{
	static const unsigned kinds[] = { 0, PLACE_WAKE_SYNC, PLACE_WAKE_NOCLAIM, PLACE_WAKE_NEW,
					  PLACE_WAKE_CURRENT, PLACE_WAKE_REMOTE, PLACE_WAKE_NEW | PLACE_WAKE_SPREAD };
	struct env e;
	place_task *t, *w;
	struct snap s;
	char cpu_text[32];

	env_open(&e, TOPO_2LLC, _i % 3, PLACE_FEAT_DEFAULT, true);
	t = &e.task[0];
	w = &e.task[1];
	env_run(&e, 5, t);
	env_run(&e, 1, w); /* a worker waker on another CPU */
	snprintf(cpu_text, sizeof(cpu_text), "runs on cpu 5");
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (int waker = -1; waker <= 1; waker += 2) {
			unsigned how;

			if (waker < 0 && (kinds[k] & (PLACE_WAKE_CURRENT | PLACE_WAKE_REMOTE)))
				continue; /* -EINVAL: they need a waker */
			take_snap(&e, t, &s);
			ck_assert_int_eq(place_wakeup(e.p, t, waker, kinds[k]), -EALREADY);
			ck_assert_msg(error_says(cpu_text), "%s", place_last_error());
			ck_assert_int_eq(place_wakeup_ex(e.p, t, waker, kinds[k], &how), -EALREADY);
			ck_assert_uint_eq(how, 0);
			same_snap(&e, t, &s);
		}
	}
	ck_assert_str_eq(place_strerror(-EALREADY), "the task is still running (no place_run_end yet)");
	/* the run ends: it may be woken (prev 5 is idle again after it parks) */
	env_park(&e, 5, t);
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, 0), 5);
	/* PREEMPT leaves it runnable and queued on 5: not running, not refused */
	env_run(&e, 5, t);
	ck_assert_int_eq(place_run_end(e.p, 5, t, PLACE_RUN_PREEMPT), 0);
	ck_assert_int_ge(place_wakeup(e.p, t, PLACE_CPU_NONE, 0), 0);
	env_close(&e);
}
END_TEST

/* The same on the short paths of a busy machine: prev busy with t itself
 * in an overloaded LLC (the stacking path), and a worker waker. */
START_TEST(t_wake_running_short_paths)
{
	struct env e;
	place_task *t = NULL;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	for (int cpu = 0; cpu < e.nr_cpus; cpu++)
		env_run(&e, cpu, &e.task[cpu]);
	env_llc(&e, 0)->nr_idle_scan = 0; /* SIS_UTIL: overloaded */
	env_llc(&e, 0)->has_idle_cores = 0;
	t = &e.task[3];
	ck_assert_int_eq(place_wakeup(e.p, t, PLACE_CPU_NONE, 0), -EALREADY);
	ck_assert_int_eq(place_wakeup(e.p, t, 6, 0), -EALREADY);
	ck_assert_int_eq(place_wakeup(e.p, t, 6, PLACE_WAKE_SYNC), -EALREADY);
	ck_assert_int_eq(place_wakeup(e.p, t, 6, PLACE_WAKE_CURRENT), -EALREADY);
	ck_assert_int_eq(place_run_end(e.p, 3, t, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, 0), 3); /* stacked on prev */
	env_close(&e);
}
END_TEST

/* Another thread resumes t while the worker that ran it is still between
 * the task's stop and its run_end (the ULT race): every wakeup either is
 * refused or comes after the whole run_end. */
struct race {
	struct env *e;
	place_task *t;
	atomic_int phase; /* 1: t running (the waker may start), 2: done */
	int rounds;
};

static void *race_worker(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < r->rounds; i++) {
		while (atomic_load(&r->phase) != 0)
			;
		ck_assert_int_eq(place_run_begin(r->e->p, 2, r->t), 0);
		atomic_store(&r->phase, 1);
		ck_assert_int_eq(place_run_end(r->e->p, 2, r->t, PLACE_RUN_SLEEP), 0);
		while (atomic_load(&r->phase) != 2)
			;
		/* the wakeup left t queued somewhere: it starts here (a thief) */
		ck_assert_int_eq(place_run_begin(r->e->p, 2, r->t), 0);
		ck_assert_int_eq(place_run_end(r->e->p, 2, r->t, PLACE_RUN_SLEEP), 0);
		atomic_store(&r->phase, 0);
	}
	return NULL;
}

START_TEST(t_wake_running_race)
{
	struct env e;
	struct race r = { .e = &e, .rounds = 2000 };
	pthread_t th;
	int refused = 0;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	r.t = &e.task[0];
	ck_assert_int_eq(pthread_create(&th, NULL, race_worker, &r), 0);
	for (int i = 0; i < r.rounds; i++) {
		int cpu;

		while (atomic_load(&r.phase) != 1)
			;
		while ((cpu = place_wakeup(e.p, r.t, 6, PLACE_WAKE_REMOTE)) == -EALREADY)
			refused++;
		ck_assert_int_ge(cpu, 0);
		ck_assert_int_eq(place__rec(r.t)->queued_cpu, cpu);
		atomic_store(&r.phase, 2);
	}
	pthread_join(th, NULL);
	ck_assert_int_eq(place_idle_enter(e.p, 2), 0);
	for (int cpu = 0; cpu < e.nr_cpus; cpu++) /* no claim nor queue slot left behind */
		ck_assert_msg(place__st_queued(env_state(&e, cpu)) == 0, "cpu %d", cpu);
	printf("t_wake_running_race: %d wakeups refused while running\n", refused);
	env_close(&e);
}
END_TEST

/* ---- item 2: PLACE_WAKE_REMOTE ----------------------------------------- */

/* A sync wakeup by the task running on CPU 0 (LLC 0) of t whose prev is
 * CPU 4 (LLC 1, busy): wake_affine pulls t to the waker's LLC with
 * REMOTE as it would from the waker's own thread; without a waker it stays
 * in prev's LLC. REMOTE touches neither the waker's flips nor its slot. */
START_TEST(t_remote_hint)
{
	struct env e;
	place_task *w, *u, *t;
	unsigned char before[sizeof(((place_task *)0)->priv)];
	uint64_t slot0[PLACE_NR_SLOT_STATS];
	int cpu;

	env_open(&e, TOPO_2LLC, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	w = &e.task[0];
	u = &e.task[1];
	env_run(&e, 0, w);
	env_run(&e, 4, u);
	t = env_task_on(&e, 2, 4);
	memcpy(before, w->priv, sizeof(before));
	memcpy(slot0, e.p->slot[0].v, sizeof(slot0));
	cpu = env_wake(&e, t, 0, PLACE_WAKE_REMOTE | PLACE_WAKE_SYNC);
	ck_assert_msg(cpu >= 1 && cpu <= 3, "REMOTE: %d is not in the waker's LLC", cpu);
	ck_assert(memcmp(before, w->priv, sizeof(before)) == 0); /* flips untouched */
	ck_assert(memcmp(slot0, e.p->slot[0].v, sizeof(slot0)) == 0); /* slot untouched */
	ck_assert_uint_eq(env_stats(&e).affine_wakeups, 1);
	ck_assert_uint_eq(e.p->ext[0].v[PLACE_STAT_affine_wakeups], 1);
	ck_assert_int_eq(place_task_forget(e.p, t), 0);
	/* without the hint: prev's LLC */
	t = env_task_on(&e, 3, 4);
	cpu = env_wake(&e, t, PLACE_CPU_NONE, PLACE_WAKE_SYNC);
	ck_assert_msg(cpu >= 5 && cpu <= 7, "no waker: %d is not in prev's LLC", cpu);
	/* the waker's own thread records the wakee (its flips change) */
	t = env_task_on(&e, 4, 4);
	env_wake(&e, t, 0, PLACE_WAKE_SYNC);
	ck_assert(memcmp(before, w->priv, sizeof(before)) != 0);
	/* REMOTE needs a waker and is no hand-off */
	t = env_task_on(&e, 5, 4);
	ck_assert_int_eq(place_wakeup(e.p, t, PLACE_CPU_NONE, PLACE_WAKE_REMOTE), -EINVAL);
	ck_assert_int_eq(place_wakeup(e.p, t, 0, PLACE_WAKE_REMOTE | PLACE_WAKE_CURRENT), -EINVAL);
	ck_assert_int_eq(place_wakeup(e.p, t, 99, PLACE_WAKE_REMOTE), -ENODEV);
	env_close(&e);
}
END_TEST

/* ---- item 5: the startup window ----------------------------------------- */

START_TEST(t_startup_window)
{
	struct env e;
	place_task *t;
	struct snap s;

	env_open(&e, TOPO_2LLC, _i % 3, PLACE_FEAT_DEFAULT, false);
	t = &e.task[0];
	for (int k = 0; k < 4; k++) {
		int waker = k & 1 ? 3 : PLACE_CPU_NONE;
		unsigned flags = k & 2 ? PLACE_WAKE_NEW : 0;

		if (k == 3)
			place__rec(t)->prev_cpu = 6; /* a task resumed from before */
		take_snap(&e, t, &s);
		ck_assert_int_eq(place_wakeup(e.p, t, waker, flags), -ESRCH);
		ck_assert_msg(error_says("no worker has registered yet"), "%s", place_last_error());
		same_snap(&e, t, &s);
	}
	ck_assert_int_eq(place_worker_register(e.p, 6, 0), 0);
	ck_assert_int_eq(env_wake(&e, t, PLACE_CPU_NONE, 0), 6);
	/* registered workers none of which t may use: said otherwise */
	{
		cpu_set_t set;
		place_task *u = &e.task[1];

		CPU_ZERO(&set);
		CPU_SET(1, &set);
		ck_assert_int_eq(place_task_set_cpus(u, &set, sizeof(set)), 0);
		ck_assert_int_eq(place_wakeup(e.p, u, PLACE_CPU_NONE, 0), -ESRCH);
		ck_assert_msg(error_says("no registered worker serves a CPU the task may use"), "%s",
			      place_last_error());
	}
	ck_assert_int_eq(place_worker_unregister(e.p, 6), 0);
	ck_assert_uint_eq(e.p->nr_workers, 0);
	env_close(&e);
}
END_TEST

/* ---- item 6: errors that name their cause ------------------------------- */

START_TEST(t_error_details)
{
	struct env e;
	place_task *t, *u;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	t = &e.task[0];
	u = &e.task[1];
	env_run(&e, 2, t);
	/* a missing run_end */
	ck_assert_int_eq(place_run_begin(e.p, 2, u), -EBUSY);
	ck_assert_msg(error_says("cpu 2 still runs a task (place_run_end is missing)"), "%s", place_last_error());
	ck_assert_int_eq(place_idle_enter(e.p, 2), -EBUSY);
	ck_assert_msg(error_says("cpu 2 still runs a task"), "%s", place_last_error());
	/* a cookie on the sibling */
	ck_assert_int_eq(place_task_set_cookie(u, 7), 0);
	ck_assert_int_eq(place_run_begin(e.p, 3, u), -EBUSY);
	ck_assert_msg(error_says("an SMT sibling of cpu 3 runs a task of another cookie"), "%s",
		      place_last_error());
	/* the detail stays until read, and a successful call does not cost it */
	ck_assert_int_eq(place_task_set_cookie(u, 0), 0);
	env_run(&e, 3, u);
	/* wrong task, wrong CPU, unknown how */
	ck_assert_int_eq(place_run_end(e.p, 2, u, PLACE_RUN_SLEEP), -EINVAL);
	ck_assert_msg(error_says("cpu 2 runs another task; this one runs on cpu 3"), "%s", place_last_error());
	ck_assert_int_eq(place_run_end(e.p, 2, &e.task[5], PLACE_RUN_SLEEP), -EINVAL);
	ck_assert_msg(error_says("cpu 2 runs another task than this one"), "%s", place_last_error());
	ck_assert_int_eq(place_run_end(e.p, 2, t, 7), -EINVAL);
	ck_assert_msg(error_says("unknown how 7"), "%s", place_last_error());
	/* doubled */
	ck_assert_int_eq(place_run_end(e.p, 2, t, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_run_end(e.p, 2, t, PLACE_RUN_SLEEP), -EINVAL);
	ck_assert_msg(error_says("cpu 2 runs no task (place_run_end twice, or no place_run_begin)"), "%s",
		      place_last_error());
	ck_assert_str_eq(place_strerror(-EBUSY),
			 "busy: the worker still runs a task, or another cookie runs on its core");
	env_close(&e);
}
END_TEST

/* ---- item 3: several workers per CPU ------------------------------------ */

/* A CPU's second thread joins with PLACE_WORKER_SHARED (without it:
 * -EEXIST); the CPU stays served until its last thread leaves; its threads
 * take turns (one runs a task at a time: a running helper keeps the CPU
 * busy for wakeups and idle_enter); its steal order is there for any
 * thread, with or without a worker. */
START_TEST(t_shared_workers)
{
	struct env e;
	place_task *t, *u, *v;
	struct snap s;
	int order[8];

	env_open(&e, TOPO_4C8T, _i % 3, PLACE_FEAT_DEFAULT, false);
	t = &e.task[0];
	u = &e.task[1];
	v = env_task_on(&e, 2, 2);
	ck_assert_int_eq(place_steal_order(e.p, 2, order, 8), 0); /* nobody to steal from yet */
	ck_assert_int_eq(place_worker_register(e.p, 2, 0), 0);
	ck_assert_int_eq(place_worker_register(e.p, 3, 0), 0);
	ck_assert_int_eq(place_steal_order(e.p, 5, order, 8), 2); /* no worker on 5: its order */
	ck_assert_int_eq(order[0], 2);
	ck_assert_int_eq(order[1], 3);
	take_snap(&e, t, &s);
	ck_assert_int_eq(place_worker_register(e.p, 2, 0), -EEXIST);
	ck_assert_msg(error_says("cpu 2 already has a worker"), "%s", place_last_error());
	ck_assert_int_eq(place_worker_register(e.p, 2, PLACE_WORKER_SHARED), 0); /* a helper */
	ck_assert_int_eq(place_worker_register(e.p, 6, PLACE_WORKER_SHARED), 0); /* first of 6 */
	ck_assert_int_eq(place_worker_unregister(e.p, 6), 0);
	same_snap(&e, t, &s);
	/* the helper runs a task on 2: 2 is busy for wakeups and for its worker */
	env_run(&e, 2, u);
	ck_assert_int_eq(place_idle_enter(e.p, 2), -EBUSY);
	ck_assert_int_eq(place_run_begin(e.p, 2, t), -EBUSY);
	ck_assert_int_ne(env_wake(&e, v, PLACE_CPU_NONE, PLACE_WAKE_NOCLAIM), 2);
	env_park(&e, 2, u);
	/* one thread leaves: 2 is still served, nothing changes */
	take_snap(&e, t, &s);
	ck_assert_int_eq(place_worker_unregister(e.p, 2), 0);
	same_snap(&e, t, &s);
	ck_assert_int_eq(env_wake(&e, v, PLACE_CPU_NONE, 0), 2);
	env_run(&e, 2, v);
	env_park(&e, 2, v);
	/* the last one leaves */
	ck_assert_int_eq(place_worker_unregister(e.p, 2), 0);
	ck_assert(!(env_state(&e, 2) & PLACE_ST_REGISTERED));
	ck_assert_int_eq(place_worker_unregister(e.p, 2), -ENOENT);
	ck_assert_int_eq(place_worker_register(e.p, 2, 0), 0); /* fresh again */
	ck_assert_int_eq(place_worker_register(e.p, 2, 1u << 3), -EINVAL);
	env_close(&e);
}
END_TEST

/* ---- item 4: BIND is undone, "process" sees the process's CPUs ---------- */

static void *park_thread(void *arg)
{
	while (!atomic_load((atomic_int *)arg))
		;
	return NULL;
}

static int mask_count(void)
{
	cpu_set_t set;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	return CPU_COUNT(&set);
}

START_TEST(t_bind_restores)
{
	cpu_set_t before, after;
	place_topo *live, *proc, *topo;
	place *p;
	atomic_int stop = 0;
	pthread_t th;
	int cpu, n = mask_count();

	ck_assert_int_eq(sched_getaffinity(0, sizeof(before), &before), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, park_thread, &stop), 0); /* keeps the old mask */
	ck_assert_int_eq(place_topo_load(&topo, "live"), 0);
	ck_assert_int_eq(place_create(&p, topo, NULL), 0);
	cpu = place_topo_cpu(topo, place_topo_nr_cpus(topo) - 1);
	ck_assert_int_eq(place_worker_register(p, cpu, PLACE_WORKER_BIND), 0);
	ck_assert_int_eq(mask_count(), 1);
	/* "live" is this thread's mask: one CPU; "process" is every thread's */
	ck_assert_int_eq(place_topo_load(&live, "live"), 0);
	ck_assert_int_eq(place_topo_nr_cpus(live), 1);
	ck_assert_int_eq(place_topo_load(&proc, "process"), 0);
	ck_assert_int_eq(place_topo_nr_cpus(proc), place_topo_nr_cpus(topo));
	ck_assert_str_eq(place_topo_source(proc), "process");
	/* bound twice: the masks come back in reverse order, one per unregister */
	ck_assert_int_eq(place_worker_register(p, cpu, PLACE_WORKER_SHARED | PLACE_WORKER_BIND), 0);
	ck_assert_int_eq(place_worker_unregister(p, cpu), 0);
	ck_assert_int_eq(mask_count(), 1);
	ck_assert_int_eq(place_worker_unregister(p, cpu), 0);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(after), &after), 0);
	ck_assert(CPU_EQUAL(&before, &after));
	ck_assert_int_eq(mask_count(), n);
	place_topo_free(live);
	place_topo_free(proc);
	place_destroy(p);
	place_topo_free(topo);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
}
END_TEST

Suite *workers_suite(void);
Suite *workers_suite(void)
{
	Suite *s = suite_create("workers");
	TCase *tc = tcase_create("cases");
	TCase *th = tcase_create("threads");

	tcase_add_loop_test(tc, t_wake_running_refused, 0, 3);
	tcase_add_test(tc, t_wake_running_short_paths);
	tcase_add_test(tc, t_remote_hint);
	tcase_add_loop_test(tc, t_startup_window, 0, 3);
	tcase_add_test(tc, t_error_details);
	tcase_add_loop_test(tc, t_shared_workers, 0, 3);
	tcase_add_test(tc, t_bind_restores);
	suite_add_tcase(s, tc);
	tcase_set_timeout(th, 60);
	tcase_add_test(th, t_wake_running_race);
	suite_add_tcase(s, th);
	return s;
}

int main(void)
{
	return place_test_run(workers_suite());
}
