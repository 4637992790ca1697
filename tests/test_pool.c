/*
 * The example pool (examples/pool.c), in both wake modes: every woken task
 * runs exactly once under load (external producers, tasks waking tasks, a
 * tiny ring that overflows), a task never runs on two workers at once and no
 * wake is lost, and shutdown drains what is queued, joins, and leaks nothing
 * (valgrind and ASan runs of the suite check the last part).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "testlib.h"

static const int modes[] = { POOL_WAKE_PLACE, POOL_WAKE_LIFO };

/* Smaller counts under valgrind (build.sh sets PLACE_UNDER_VALGRIND). */
static int scale(int n)
{
	return getenv("PLACE_UNDER_VALGRIND") ? n / 20 + 1 : n;
}

static pool *make(int mode, unsigned qsize)
{
	struct pool_config cfg = { .mode = mode, .queue_size = qsize };
	pool *p = NULL;
	int err = pool_create(&p, &cfg);

	ck_assert_msg(err == 0, "pool_create(mode %d): %d %s", mode, err, place_last_error());
	return p;
}

/* ---- exactly once ----------------------------------------------------------- */

struct once {
	pool_task task;
	pool *p;
	unsigned runs;
	int children;     /* tasks this one wakes when it runs */
	struct once *kids;
};

static int once_run(pool_task *t, int cpu)
{
	struct once *o = (struct once *)t;

	__atomic_add_fetch(&o->runs, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < o->children; i++)
		ck_assert_int_eq(pool_wake(o->p, &o->kids[i].task, cpu, 0), 0);
	return POOL_DONE;
}

struct producer {
	pool *p;
	struct once *tasks;
	int from, to;
};

static void *produce(void *arg)
{
	struct producer *pr = arg;

	for (int i = pr->from; i < pr->to; i++)
		ck_assert_int_eq(pool_wake(pr->p, &pr->tasks[i].task, PLACE_CPU_NONE, 0), 0);
	return NULL;
}

/* n roots from two external threads, each root waking `kids` children. */
static void exactly_once(int mode, unsigned qsize, int n, int kids)
{
	struct once *roots = calloc((size_t)n, sizeof(*roots));
	struct once *leaves = calloc((size_t)n * (size_t)kids + 1, sizeof(*leaves));
	struct producer pr[2];
	pthread_t th[2];
	struct pool_stats st;
	pool *p = make(mode, qsize);

	ck_assert(roots && leaves);
	for (int i = 0; i < n; i++) {
		pool_task_init(&roots[i].task, once_run, NULL);
		roots[i].p = p;
		roots[i].children = kids;
		roots[i].kids = &leaves[(size_t)i * kids];
		for (int k = 0; k < kids; k++) {
			pool_task_init(&leaves[(size_t)i * kids + k].task, once_run, NULL);
			leaves[(size_t)i * kids + k].p = p;
		}
	}
	for (int k = 0; k < 2; k++) {
		pr[k] = (struct producer){ .p = p, .tasks = roots, .from = k * n / 2, .to = (k + 1) * n / 2 };
		ck_assert_int_eq(pthread_create(&th[k], NULL, produce, &pr[k]), 0);
	}
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	pool_stats_read(p, &st);
	pool_destroy(p); /* drains: every woken task has run when it returns */
	for (int i = 0; i < n; i++)
		ck_assert_msg(roots[i].runs == 1, "root %d ran %u times", i, roots[i].runs);
	for (int i = 0; i < n * kids; i++)
		ck_assert_msg(leaves[i].runs == 1, "leaf %d ran %u times", i, leaves[i].runs);
	free(roots);
	free(leaves);
}

START_TEST(t_exactly_once)
{
	exactly_once(modes[_i], 0, scale(20000), 3);
}
END_TEST

/* A 4-slot ring overflows constantly: the overflow list must lose nothing
 * (and, with libplace, claims end when the task runs from it). */
START_TEST(t_exactly_once_overflow)
{
	exactly_once(modes[_i], 4, scale(20000), 3);
}
END_TEST

/* ---- actor semantics: never two runs at once, no lost wake ----------------- */

struct actor {
	pool_task task;
	unsigned inside;          /* 1 while running */
	unsigned long inbox;      /* messages sent */
	unsigned long seen;       /* messages consumed by runs */
	unsigned overlap;
};

static int actor_run(pool_task *t, int cpu)
{
	struct actor *a = (struct actor *)t;

	if (__atomic_exchange_n(&a->inside, 1, __ATOMIC_SEQ_CST))
		__atomic_store_n(&a->overlap, 1, __ATOMIC_SEQ_CST);
	a->seen = __atomic_load_n(&a->inbox, __ATOMIC_SEQ_CST);
	__atomic_store_n(&a->inside, 0, __ATOMIC_SEQ_CST);
	return POOL_SLEEP;
}

struct sender {
	pool *p;
	struct actor *a;
	int n;
};

static void *send_all(void *arg)
{
	struct sender *s = arg;

	for (int i = 0; i < s->n; i++) {
		__atomic_add_fetch(&s->a->inbox, 1, __ATOMIC_SEQ_CST);
		ck_assert_int_eq(pool_wake(s->p, &s->a->task, PLACE_CPU_NONE, 0), 0);
	}
	return NULL;
}

START_TEST(t_actor_no_overlap_no_lost_wake)
{
	struct actor a;
	struct sender s;
	pthread_t th[3];
	pool *p = make(modes[_i], 0);

	memset(&a, 0, sizeof(a));
	pool_task_init(&a.task, actor_run, NULL);
	s = (struct sender){ .p = p, .a = &a, .n = scale(30000) };
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(pthread_create(&th[k], NULL, send_all, &s), 0);
	for (int k = 0; k < 3; k++)
		pthread_join(th[k], NULL);
	pool_destroy(p);
	ck_assert_uint_eq(a.overlap, 0);
	/* The last wake came after the last message: some run saw them all. */
	ck_assert_uint_eq(a.seen, 3ul * (unsigned long)s.n);
}
END_TEST

/* ---- no worker lost: after a long ping-pong, every worker still answers ---- */

struct ping {
	pool_task task;
	pool *p;
	struct ping *peer;
	int left;
	int second;
};

/* Each of the pair runs `left` times; the first one's last run wakes the
 * second for its last, which ends without waking. */
static int ping_run(pool_task *t, int cpu)
{
	struct ping *a = (struct ping *)t;

	if (--a->left == 0 && a->second)
		return POOL_DONE;
	ck_assert_int_eq(pool_wake(a->p, &a->peer->task, cpu, PLACE_WAKE_SYNC), 0);
	return a->left == 0 ? POOL_DONE : POOL_SLEEP;
}

struct gather {
	pool_task task;
	unsigned *arrived;
	unsigned want;
	int ok;
};

/* Blocks its worker until every worker runs one: only possible if each
 * parked worker can still be woken. Gives up after 5 s. */
static int gather_run(pool_task *t, int cpu)
{
	struct gather *g = (struct gather *)t;
	struct timespec t0, now;

	__atomic_add_fetch(g->arrived, 1, __ATOMIC_SEQ_CST);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (__atomic_load_n(g->arrived, __ATOMIC_SEQ_CST) >= g->want) {
			g->ok = 1;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 5);
	return POOL_DONE;
}

START_TEST(t_no_worker_lost)
{
	pool *p = make(modes[_i], 0);
	int n = pool_nr_workers(p);
	struct gather *g = calloc((size_t)n, sizeof(*g));
	struct ping pp[2];
	unsigned arrived = 0;

	ck_assert_ptr_nonnull(g);
	for (int k = 0; k < 2; k++) {
		pool_task_init(&pp[k].task, ping_run, NULL);
		pp[k].p = p;
		pp[k].peer = &pp[k ^ 1];
		pp[k].left = scale(20000);
		pp[k].second = k;
	}
	ck_assert_int_eq(pool_wake(p, &pp[0].task, PLACE_CPU_NONE, 0), 0);
	while (__atomic_load_n(&pp[0].task.state, __ATOMIC_SEQ_CST) != 4 || /* T_DONE */
	       __atomic_load_n(&pp[1].task.state, __ATOMIC_SEQ_CST) != 4)
		usleep(1000);
	usleep(20000); /* every worker parks */
	for (int i = 0; i < n; i++) {
		pool_task_init(&g[i].task, gather_run, NULL);
		g[i].arrived = &arrived;
		g[i].want = (unsigned)n;
		ck_assert_int_eq(pool_wake(p, &g[i].task, PLACE_CPU_NONE, 0), 0);
	}
	/* Not pool_destroy() yet: it wakes every worker, lost or not. */
	for (int i = 0; i < n; i++)
		while (__atomic_load_n(&g[i].task.state, __ATOMIC_SEQ_CST) != 4)
			usleep(1000);
	pool_destroy(p);
	for (int i = 0; i < n; i++)
		ck_assert_msg(g[i].ok, "task %d waited 5 s for all %d workers to run at once: a parked worker "
			      "no wake reaches", i, n);
	free(g);
}
END_TEST

/* ---- chains and shutdown ------------------------------------------------------ */

struct link {
	pool_task task;
	pool *p;
	struct link *next;
	unsigned runs;
};

static int link_run(pool_task *t, int cpu)
{
	struct link *l = (struct link *)t;

	__atomic_add_fetch(&l->runs, 1, __ATOMIC_SEQ_CST);
	if (l->next)
		ck_assert_int_eq(pool_wake(l->p, &l->next->task, cpu, PLACE_WAKE_SYNC), 0);
	return POOL_DONE;
}

/* Destroy right after starting chains: the drain runs every link, including
 * those woken by tasks during the shutdown itself. */
START_TEST(t_shutdown_drains_chains)
{
	int chains = 8, len = scale(2000);
	struct link *l = calloc((size_t)(chains * len), sizeof(*l));
	pool *p = make(modes[_i], 0);

	ck_assert_ptr_nonnull(l);
	for (int c = 0; c < chains; c++)
		for (int i = 0; i < len; i++) {
			struct link *x = &l[c * len + i];

			pool_task_init(&x->task, link_run, NULL);
			x->p = p;
			x->next = i + 1 < len ? x + 1 : NULL;
		}
	for (int c = 0; c < chains; c++)
		ck_assert_int_eq(pool_wake(p, &l[c * len].task, PLACE_CPU_NONE, 0), 0);
	pool_destroy(p);
	for (int i = 0; i < chains * len; i++)
		ck_assert_msg(l[i].runs == 1, "link %d ran %u times", i, l[i].runs);
	free(l);
}
END_TEST

START_TEST(t_create_destroy_idle)
{
	for (int i = 0; i < scale(200); i++) {
		pool *p = make(modes[_i], 0);

		ck_assert_int_ge(pool_nr_workers(p), 1);
		ck_assert_int_ge(pool_worker_cpu(p, 0), 0);
		ck_assert_int_lt(pool_worker_cpu(p, pool_nr_workers(p)), 0);
		ck_assert((pool_place(p) != NULL) == (modes[_i] == POOL_WAKE_PLACE));
		pool_destroy(p);
	}
	pool_destroy(NULL);
}
END_TEST

START_TEST(t_errors)
{
	struct pool_config bad_q = { .queue_size = 6 }, bad_mode = { .mode = 7 };
	struct pool_config bad_topo = { .topology = "synthetic:nonsense" };
	struct once o;
	pool *p = NULL;

	ck_assert_int_eq(pool_create(NULL, NULL), -EINVAL);
	ck_assert_int_eq(pool_create(&p, &bad_q), -EINVAL);
	ck_assert_int_eq(pool_create(&p, &bad_mode), -EINVAL);
	ck_assert_int_eq(pool_create(&p, &bad_topo), -EINVAL);
	ck_assert_ptr_null(p);
	/* A done task refuses further wakes. */
	p = make(POOL_WAKE_PLACE, 0);
	memset(&o, 0, sizeof(o));
	pool_task_init(&o.task, once_run, NULL);
	o.p = p;
	ck_assert_int_eq(pool_wake(p, &o.task, PLACE_CPU_NONE, 0), 0);
	pool_destroy(p);
	ck_assert_uint_eq(o.runs, 1);
	p = make(POOL_WAKE_PLACE, 0);
	ck_assert_int_eq(pool_wake(p, &o.task, PLACE_CPU_NONE, 0), -EINVAL);
	pool_destroy(p);
}
END_TEST

/* ---- cookies: the refused task's wake edge (issue 14.6) ------------------- */

/* One core of two CPUs: the workers are SMT siblings. */
#define TOPO_1C2T "synthetic:pack:1 l3:1 core:1 pu:2"

struct two {
	pool_task a, b;
	unsigned a_running, a_release, a_done, b_ran, overlap;
};

static int a_run(pool_task *t, int cpu)
{
	struct two *w = t->arg;

	(void)cpu;
	__atomic_store_n(&w->a_running, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&w->a_release, __ATOMIC_SEQ_CST))
		sched_yield();
	__atomic_store_n(&w->a_done, 1, __ATOMIC_SEQ_CST);
	return POOL_DONE;
}

static int b_run(pool_task *t, int cpu)
{
	struct two *w = t->arg;

	(void)cpu;
	if (!__atomic_load_n(&w->a_done, __ATOMIC_SEQ_CST))
		__atomic_store_n(&w->overlap, 1, __ATOMIC_SEQ_CST); /* two cookies on one core */
	__atomic_store_n(&w->b_ran, 1, __ATOMIC_SEQ_CST);
	return POOL_DONE;
}

/*
 * A (cookie 1) runs on one CPU of the core until released; B (cookie 2) is
 * woken onto the sibling, refused there, and its worker parks. Then A ends:
 * its run_end names the sibling, whose worker runs B. Nothing else happens
 * (no other task, no wake): without that signal pool_destroy() would wait
 * forever for B (the case's timeout fails it). Before issue 14.6 the pool
 * ran B beside A (overlap).
 */
START_TEST(t_cookie_refused_runs_after)
{
	struct pool_config cfg = { .topology = TOPO_1C2T, .no_pin = 1 };
	struct pool_stats ps;
	struct two w;
	place_stats st;
	uint64_t parks;
	pool *p = NULL;

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(pool_create(&p, &cfg), 0);
	ck_assert_int_eq(pool_nr_workers(p), 2);
	pool_task_init(&w.a, a_run, &w);
	pool_task_init(&w.b, b_run, &w);
	ck_assert_int_eq(place_task_set_cookie(&w.a.place, 1), 0);
	ck_assert_int_eq(place_task_set_cookie(&w.b.place, 2), 0);
	ck_assert_int_eq(pool_wake(p, &w.a, PLACE_CPU_NONE, 0), 0);
	while (!__atomic_load_n(&w.a_running, __ATOMIC_SEQ_CST))
		sched_yield();
	pool_stats_read(p, &ps);
	parks = ps.parks;
	ck_assert_int_eq(pool_wake(p, &w.b, PLACE_CPU_NONE, 0), 0);
	do { /* B refused, and its worker parked */
		sched_yield();
		place_stats_read(pool_place(p), -1, &st);
		pool_stats_read(p, &ps);
	} while (!st.cookie_refusals || ps.parks == parks);
	ck_assert(!__atomic_load_n(&w.b_ran, __ATOMIC_SEQ_CST) || w.overlap);
	__atomic_store_n(&w.a_release, 1, __ATOMIC_SEQ_CST);
	pool_destroy(p); /* waits for B */
	ck_assert_uint_eq(w.b_ran, 1);
	ck_assert_msg(!w.overlap, "B ran beside A: cookies 1 and 2 on one core");
}
END_TEST

/* ---- a hand-off goes on with one place_run_switch ------------------------- */

struct relay {
	pool_task task;
	pool *p;
	struct relay *peer;
	int left;
	int second;
	unsigned *handoffs, *done;
	const cpu_set_t *only; /* its cpu_set_t, or NULL */
	unsigned *stray;       /* runs outside it */
};

/* Each run hands the CPU to the peer (PLACE_WAKE_CURRENT: the runnext
 * slot); the first one's last run hands off to the second's last, which
 * ends without waking. */
static int relay_run(pool_task *t, int cpu)
{
	struct relay *a = (struct relay *)t;

	if (a->only && !CPU_ISSET(cpu, a->only))
		__atomic_add_fetch(a->stray, 1, __ATOMIC_SEQ_CST);
	if (--a->left > 0 || !a->second) {
		__atomic_add_fetch(a->handoffs, 1, __ATOMIC_SEQ_CST);
		ck_assert_int_eq(pool_wake(a->p, &a->peer->task, cpu, PLACE_WAKE_SYNC | PLACE_WAKE_CURRENT), 0);
	}
	if (a->left > 0)
		return POOL_SLEEP;
	__atomic_add_fetch(a->done, 1, __ATOMIC_SEQ_CST);
	return POOL_DONE;
}

/* PLACE mode: every hand-off's wakee is begun by the switch that ends the
 * waker's run, not by a run_end and a run_begin: place_run_handoff, which
 * also tells libplace of the wakeup (counted as one: hit_target, affine;
 * the first wake, from no worker, is the one more); LIFO mode has no
 * libplace to switch in. */
START_TEST(t_handoff_switches)
{
	pool *p = make(modes[_i], 0);
	unsigned handoffs = 0, done = 0;
	struct relay r[2];
	struct pool_stats ps;
	place_stats st;
	int n = scale(2000);

	for (int k = 0; k < 2; k++) {
		r[k] = (struct relay){ .p = p, .peer = &r[k ^ 1], .left = n, .second = k, .handoffs = &handoffs,
				       .done = &done };
		pool_task_init(&r[k].task, relay_run, NULL);
	}
	ck_assert_int_eq(pool_wake(p, &r[0].task, PLACE_CPU_NONE, 0), 0);
	while (__atomic_load_n(&done, __ATOMIC_SEQ_CST) < 2)
		sched_yield();
	pool_stats_read(p, &ps);
	if (modes[_i] == POOL_WAKE_PLACE)
		ck_assert_int_eq(place_stats_read(pool_place(p), -1, &st), 0);
	pool_destroy(p);
	ck_assert_uint_eq(handoffs, 2u * (unsigned)n - 1);
	ck_assert_uint_eq(ps.runs, 2u * (unsigned)n);
	ck_assert_uint_eq(ps.switches, modes[_i] == POOL_WAKE_PLACE ? handoffs : 0);
	ck_assert_uint_eq(ps.handoffs, modes[_i] == POOL_WAKE_PLACE ? handoffs : 0);
	if (modes[_i] == POOL_WAKE_PLACE) {
		ck_assert_uint_eq(st.wakeups, handoffs + 1);
		ck_assert_uint_eq(st.affine_wakeups, handoffs);
		ck_assert_uint_eq(st.hit_target, handoffs + 1);
	}
}
END_TEST

/* A hand-off that place_run_handoff refuses (the wakee's cpu_set_t leaves
 * out the waker's CPU: -EPERM) is woken as before (late_wake:
 * place_wakeup with the wake's flags), onto the other worker: every wake
 * arrives, none is counted twice, and a task runs outside its set only
 * when a thief took it (the example's thieves ignore cpu_set_t; a
 * hand-off never puts it there). */
START_TEST(t_handoff_refused_wakes)
{
	pool *p = make(POOL_WAKE_PLACE, 0);
	const place_topo *topo = place_get_topo(pool_place(p));
	unsigned handoffs = 0, done = 0, stray = 0;
	struct relay r[2];
	struct pool_stats ps;
	place_stats st;
	cpu_set_t only[2];
	int n = scale(2000);

	if (place_topo_nr_cpus(topo) < 2) {
		pool_destroy(p);
		return; /* one worker: nowhere else to go */
	}
	for (int k = 0; k < 2; k++) {
		r[k] = (struct relay){ .p = p, .peer = &r[k ^ 1], .left = n, .second = k, .handoffs = &handoffs,
				       .done = &done, .only = &only[k], .stray = &stray };
		pool_task_init(&r[k].task, relay_run, NULL);
		CPU_ZERO(&only[k]);
		CPU_SET(place_topo_cpu(topo, k), &only[k]);
		ck_assert_int_eq(place_task_set_cpus(&r[k].task.place, &only[k], sizeof(only[k])), 0);
	}
	ck_assert_int_eq(pool_wake(p, &r[0].task, PLACE_CPU_NONE, 0), 0);
	while (__atomic_load_n(&done, __ATOMIC_SEQ_CST) < 2)
		sched_yield();
	pool_stats_read(p, &ps);
	ck_assert_int_eq(place_stats_read(pool_place(p), -1, &st), 0);
	pool_destroy(p);
	ck_assert_uint_eq(handoffs, 2u * (unsigned)n - 1);
	ck_assert_uint_eq(ps.runs, 2u * (unsigned)n);
	ck_assert_uint_le(stray, ps.steals);
	/* a wake of a peer still running on the other CPU is absorbed
	 * (NOTIFIED: it runs on, preempted) and reaches no libplace call */
	ck_assert_uint_le(st.wakeups, handoffs + 1);
	ck_assert_uint_gt(st.wakeups, 0);
}
END_TEST

/* One worker: a root wakes `kids` tasks, all queued on its ring; each run
 * that ends with a task to take goes to it with place_run_switch. */
struct fan {
	pool_task task;
	pool *p;
	struct fan *kids;
	int nkids;
	unsigned *done;
};

static int fan_run(pool_task *t, int cpu)
{
	struct fan *f = (struct fan *)t;

	for (int i = 0; i < f->nkids; i++)
		ck_assert_int_eq(pool_wake(f->p, &f->kids[i].task, cpu, 0), 0);
	__atomic_add_fetch(f->done, 1, __ATOMIC_SEQ_CST);
	return POOL_DONE;
}

START_TEST(t_queued_runs_switch)
{
	struct pool_config cfg = { .mode = POOL_WAKE_PLACE, .max_workers = 1 };
	enum { KIDS = 50 };
	struct fan root, kids[KIDS];
	struct pool_stats ps;
	unsigned done = 0;
	pool *p = NULL;

	ck_assert_int_eq(pool_create(&p, &cfg), 0);
	for (int i = 0; i < KIDS; i++) {
		kids[i] = (struct fan){ .p = p, .done = &done };
		pool_task_init(&kids[i].task, fan_run, NULL);
	}
	root = (struct fan){ .p = p, .kids = kids, .nkids = KIDS, .done = &done };
	pool_task_init(&root.task, fan_run, NULL);
	ck_assert_int_eq(pool_wake(p, &root.task, PLACE_CPU_NONE, 0), 0);
	while (__atomic_load_n(&done, __ATOMIC_SEQ_CST) < KIDS + 1)
		sched_yield();
	pool_stats_read(p, &ps);
	pool_destroy(p);
	ck_assert_uint_eq(ps.runs, KIDS + 1);
	/* the root to the first kid, each kid to the next; the last parks */
	ck_assert_uint_eq(ps.switches, KIDS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("pool");
	TCase *ck = tcase_create("cookies");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, t_exactly_once, 0, 2);
	tcase_add_loop_test(tc, t_exactly_once_overflow, 0, 2);
	tcase_add_loop_test(tc, t_actor_no_overlap_no_lost_wake, 0, 2);
	tcase_add_loop_test(tc, t_no_worker_lost, 0, 2);
	tcase_add_loop_test(tc, t_handoff_switches, 0, 2);
	tcase_add_test(tc, t_handoff_refused_wakes);
	tcase_add_test(tc, t_queued_runs_switch);
	tcase_add_loop_test(tc, t_shutdown_drains_chains, 0, 2);
	tcase_add_loop_test(tc, t_create_destroy_idle, 0, 2);
	tcase_add_test(tc, t_errors);
	suite_add_tcase(s, tc);
	tcase_set_timeout(ck, 20);
	tcase_add_test(ck, t_cookie_refused_runs_after);
	suite_add_tcase(s, ck);
	return place_test_run(s);
}
