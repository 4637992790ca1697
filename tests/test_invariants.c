/*
 * Stress with invariants, through the public API only (issue 6).
 *
 * Six threads on this 2-CPU machine (oversubscribed, so the scheduler
 * preempts them mid-call and interleaves what a 2-thread run never would)
 * drive one instance per topology. Each thread is the single worker of a
 * disjoint set of CPUs (place.h's calling contract: idle_enter, run_begin,
 * run_end and unregister of a CPU come from its worker only) and also a
 * waker. Every thread runs a random mix of place_wakeup (plain, SYNC, NEW,
 * NOCLAIM first), place_idle_enter, place_run_begin (from its own queue or
 * stolen from another CPU's), place_run_end (SLEEP, EXIT, PREEMPT),
 * place_claim_release, place_task_claimed and worker unregister/register.
 *
 * The oracle, next to libplace, keeps each task's story and checks:
 * - every returned CPU is usable, allowed by the task's cpu_set_t, and
 *   registered, unless it was unregistered concurrently with the wakeup
 *   (place_worker_unregister's documented fallback case); -ESRCH only when
 *   some allowed CPU changed registration during the call or none was
 *   registered;
 * - claims: place_task_claimed() names the returned CPU or nothing; a claim
 *   is recorded in owner[cpu] with a CAS that must find the slot free (no
 *   two claims held on one CPU at once); it is still held when its task
 *   starts, and gone after; a release of one's own claim succeeds;
 * - exactly once: a woken task goes into the oracle's queue of the CPU
 *   returned; a task is in at most one place (a CAS on its oracle state at
 *   every step); at the end every queue is empty and, per task, wakeups =
 *   runs that followed a wakeup + releases;
 * - a NOCLAIM answer obeys the same rules and leaves the task record as it
 *   was, byte for byte;
 * - nothing stays behind: after the drain every CPU is available again (a
 *   claiming wakeup of a task allowed only there claims it), and the
 *   statistics agree with the oracle's counts. Leaks: the valgrind stage.
 *
 * Bounded: about 5 s in all by default (one test per topology); the
 * environment variable PLACE_STRESS_SECONDS sets the total for a long run,
 * and PLACE_UNDER_VALGRIND shortens it. Each test prints its operation
 * counts and how much the threads interleaved.
 *
 * The oracle's queues use mutexes: only libplace's paths are lock-free.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "place.h"
#include "stresslib.h"
#include "testlib.h"

#define NTHREADS 6
#define MAX_TASKS 192
#define DEFAULT_SECONDS 5.0
#define VALGRIND_SECONDS 1.0

static const struct row {
	const char *name, *source;
	int policy;
} rows[] = {
	{ "SMT2, 2 LLCs", "synthetic:pack:1 l3:2 core:4 pu:2", PLACE_POLICY_SIS_CORE },
	{ "SMT4", "synthetic:pack:1 l3:1 core:4 pu:4", PLACE_POLICY_EXACT },
	{ "no SMT, 2 packages", "synthetic:pack:2 l3:1 core:4 pu:1", PLACE_POLICY_LINEAR },
	{ "80-CPU LLC (2 mask words)", "synthetic:pack:1 l3:1 core:40 pu:2", PLACE_POLICY_SIS_CORE },
	{ "16 LLCs, 2 nodes", "synthetic:pack:2 [numa] l3:8 core:2 pu:2", PLACE_POLICY_EXACT },
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static const char *const policy_name[] = { "sis_core", "linear", "exact" };

/* Oracle-side task states; every change is a CAS from the expected one. */
enum { T_SLEEPING, T_WAKING, T_QUEUED, T_RUNNING };
/* Why a task sits in a queue. */
enum { Q_WOKEN = 1, Q_PREEMPTED = 2 };

struct task {
	place_task pt;
	cpu_set_t *set;      /* NULL = any CPU */
	atomic_int state;
	/* owned by whoever holds the task (the state says who) */
	int why;             /* Q_WOKEN / Q_PREEMPTED while queued */
	int claim;           /* CPU whose claim the oracle recorded for it, -1 */
	long woken, ran, released;
};

struct cpu {
	struct stress_queue q;
	int owner_thread;
	/* registration sequence: +1 before and +1 after every register and
	 * unregister call, so seq % 4 == 0 stably registered, 2 stably not */
	atomic_uint seq;
	/* worker-private (the owner thread only) */
	bool registered, parked;
	int running;         /* task index, -1 */
	int unreg_ticks;
};

enum op {
	OP_WAKE, OP_WAKE_CLAIMED, OP_WAKE_STACKED, OP_WAKE_ESRCH, OP_WAKE_NOCLAIM, OP_NOCLAIM_ESRCH, OP_WAKE_SYNC,
	OP_WAKE_NEW, OP_WAKE_BY_WORKER, OP_IDLE, OP_BEGIN, OP_STEAL, OP_END_SLEEP, OP_END_EXIT,
	OP_END_PREEMPT, OP_RELEASE, OP_CLAIMED, OP_UNREG, OP_REG, OP_OVERLAP, OP_CALLS, NOPS
};
static const char *const op_name[NOPS] = {
	"wakeups", "claimed", "stacked", "esrch", "noclaim answers", "noclaim esrch", "sync", "new",
	"by a worker",
	"idle_enter", "run_begin", "stolen", "run_end sleep", "exit", "preempt", "claim_release",
	"task_claimed", "unregister", "register", "calls overlapping another", "calls"
};

static struct {
	place *p;
	const place_topo *topo;
	int cpu_limit, nr_cpus, ntasks;
	int *os;                  /* [nr_cpus] usable OS CPUs */
	int *dense;               /* [cpu_limit] OS -> index in os[], -1 */
	struct cpu *cpu;          /* [nr_cpus] */
	struct task task[MAX_TASKS];
	struct stress_queue sleeping;
	atomic_int *owner;        /* [nr_cpus] task + 1 holding the claim, 0 none */
	atomic_int in_call;       /* libplace calls in flight, for the overlap figure */
	atomic_int stop, failed, inflight;
	atomic_int in_main;       /* threads not yet draining (they may still wake tasks) */
	atomic_long ops[NOPS];
	atomic_long nivcsw, nvcsw;
	char why[512];
} g;

#define FAIL(...) stress_fail(&g.failed, g.why, sizeof(g.why), __VA_ARGS__)

static void count(enum op op)
{
	atomic_fetch_add_explicit(&g.ops[op], 1, memory_order_relaxed);
}

/* Around every libplace call of the hammering: how often calls overlap. */
static void call_in(void)
{
	if (atomic_fetch_add(&g.in_call, 1) > 0)
		count(OP_OVERLAP);
	count(OP_CALLS);
}

static void call_out(void)
{
	atomic_fetch_sub(&g.in_call, 1);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool chance(uint64_t *s, unsigned one_in)
{
	return rnd(s) % one_in == 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- queues ---------------------------------------------------------------- */

static void q_push(struct stress_queue *q, int i)
{
	if (!stress_queue_push(q, i))
		FAIL("queue overflow: a task is in two queues");
}

static bool allowed(const struct task *t, int os)
{
	return !t->set || CPU_ISSET_S((size_t)os, CPU_ALLOC_SIZE((size_t)g.cpu_limit), t->set);
}

/* Pop a task that may run on OS CPU os (the oldest first: FIFO-ish so that
 * nothing starves), or -1. */
static int q_pop(struct stress_queue *q, int os)
{
	int i = -1;

	pthread_mutex_lock(&q->lock);
	for (int k = 0; k < q->n; k++) {
		if (!allowed(&g.task[q->item[k]], os))
			continue;
		i = q->item[k];
		memmove(&q->item[k], &q->item[k + 1], (size_t)(q->n - k - 1) * sizeof(int));
		q->n--;
		break;
	}
	pthread_mutex_unlock(&q->lock);
	return i;
}

static void set_state(int i, int from, int to)
{
	int seen = from;

	if (!atomic_compare_exchange_strong(&g.task[i].state, &seen, to))
		FAIL("task %d: state %d, expected %d (in two places at once?)", i, seen, from);
}

/* ---- tasks ----------------------------------------------------------------- */

/* A fresh record, allowed everywhere or (2 in 5) on a random few CPUs. */
static void task_reset(struct task *t, uint64_t *seed)
{
	size_t size = CPU_ALLOC_SIZE((size_t)g.cpu_limit);

	place_task_init(&t->pt, 0, 0);
	t->claim = -1;
	if (rnd(seed) % 5 >= 2) {
		CPU_FREE(t->set);
		t->set = NULL;
		return;
	}
	if (!t->set)
		t->set = CPU_ALLOC((size_t)g.cpu_limit);
	CPU_ZERO_S(size, t->set);
	CPU_SET_S((size_t)g.os[rnd(seed) % (uint64_t)g.nr_cpus], size, t->set);
	for (int k = 0; k < g.nr_cpus; k++)
		if (chance(seed, 4))
			CPU_SET_S((size_t)g.os[k], size, t->set);
	if (place_task_set_cpus(&t->pt, t->set, size) != 0)
		FAIL("place_task_set_cpus failed");
}

/* The oracle forgets t's claim just before libplace may end it. */
static void forget_claim(int i)
{
	struct task *t = &g.task[i];
	int expect = i + 1;

	if (t->claim < 0)
		return;
	if (!atomic_compare_exchange_strong(&g.owner[g.dense[t->claim]], &expect, 0))
		FAIL("CPU %d: claim of task %d recorded as held by task %d", t->claim, i, expect - 1);
	t->claim = -1;
}

static void record_claim(int i, int os)
{
	int expect = 0;

	if (!atomic_compare_exchange_strong(&g.owner[g.dense[os]], &expect, i + 1))
		FAIL("CPU %d claimed for task %d while task %d holds a claim on it", os, i, expect - 1);
	g.task[i].claim = os;
}

static void snapshot_seq(unsigned *seq)
{
	for (int k = 0; k < g.nr_cpus; k++)
		seq[k] = atomic_load(&g.cpu[k].seq);
}

/* Was OS CPU os registered, or unregistered, for the whole call? */
static bool stably(const unsigned *before, int os, unsigned phase)
{
	int k = g.dense[os];

	return before[k] == atomic_load(&g.cpu[k].seq) && before[k] % 4 == phase;
}

/* A returned CPU: usable, allowed, and not stably unregistered. */
static bool check_answer(int i, int cpu, const unsigned *before, const char *what)
{
	if (cpu < 0 || cpu >= g.cpu_limit || g.dense[cpu] < 0) {
		FAIL("%s of task %d returned %d: not a usable CPU", what, i, cpu);
		return false;
	}
	if (!allowed(&g.task[i], cpu)) {
		FAIL("%s of task %d returned CPU %d, outside its cpu_set_t", what, i, cpu);
		return false;
	}
	if (stably(before, cpu, 2)) {
		FAIL("%s of task %d returned CPU %d, unregistered for the whole call", what, i, cpu);
		return false;
	}
	return true;
}

/* -ESRCH: no allowed CPU may have been registered for the whole call. */
static void check_esrch(int i, const unsigned *before)
{
	for (int k = 0; k < g.nr_cpus; k++)
		if (allowed(&g.task[i], g.os[k]) && stably(before, g.os[k], 0))
			FAIL("wakeup of task %d: -ESRCH while CPU %d was registered throughout", i, g.os[k]);
}

/*
 * Wake task i (held by the caller in state T_WAKING). waker is one of the
 * calling thread's CPUs or PLACE_CPU_NONE. Delivers it to the oracle queue
 * of the CPU returned, releases the claim now and then, or sends it back to
 * sleep on -ESRCH.
 */
static void wake(int i, int waker, uint64_t *seed, bool may_release)
{
	struct task *t = &g.task[i];
	unsigned before[g.nr_cpus];
	unsigned flags = 0;
	int cpu, claimed;

	if (chance(seed, 4))
		flags |= PLACE_WAKE_SYNC;
	if (chance(seed, 16))
		flags |= PLACE_WAKE_NEW;
	if (chance(seed, 8)) { /* an answer first: must change nothing we can see */
		place_task copy = t->pt;

		snapshot_seq(before);
		call_in();
		cpu = place_wakeup(g.p, &t->pt, waker, flags | PLACE_WAKE_NOCLAIM);
		claimed = place_task_claimed(g.p, &t->pt);
		call_out();
		count(cpu >= 0 ? OP_WAKE_NOCLAIM : OP_NOCLAIM_ESRCH);
		if (cpu >= 0)
			check_answer(i, cpu, before, "NOCLAIM wakeup");
		else if (cpu == -ESRCH)
			check_esrch(i, before);
		else
			FAIL("NOCLAIM wakeup of task %d: %d", i, cpu);
		if (claimed != PLACE_CPU_NONE)
			FAIL("task %d holds a claim on %d after a NOCLAIM wakeup", i, claimed);
		if (memcmp(&copy, &t->pt, sizeof(copy)) != 0)
			FAIL("a NOCLAIM wakeup changed task %d's record", i);
	}
	/* A claim is held only from its wakeup to its run or release. */
	if (t->claim >= 0)
		FAIL("task %d woken while holding a claim on CPU %d", i, t->claim);
	snapshot_seq(before);
	call_in();
	cpu = place_wakeup(g.p, &t->pt, waker, flags);
	call_out();
	count(OP_WAKE);
	if (flags & PLACE_WAKE_SYNC)
		count(OP_WAKE_SYNC);
	if (flags & PLACE_WAKE_NEW)
		count(OP_WAKE_NEW);
	if (waker >= 0)
		count(OP_WAKE_BY_WORKER);
	if (cpu == -ESRCH) {
		count(OP_WAKE_ESRCH);
		check_esrch(i, before);
		set_state(i, T_WAKING, T_SLEEPING);
		atomic_fetch_sub(&g.inflight, 1);
		q_push(&g.sleeping, i);
		return;
	}
	if (cpu < 0) {
		FAIL("wakeup of task %d: %d (%s)", i, cpu, place_strerror(cpu));
		return;
	}
	if (!check_answer(i, cpu, before, "wakeup"))
		return;
	t->woken++;
	call_in();
	claimed = place_task_claimed(g.p, &t->pt);
	call_out();
	count(OP_CLAIMED);
	if (claimed == cpu) {
		count(OP_WAKE_CLAIMED);
		record_claim(i, cpu);
	} else if (claimed == PLACE_CPU_NONE) {
		count(OP_WAKE_STACKED);
	} else {
		FAIL("task %d woken to CPU %d holds a claim on CPU %d", i, cpu, claimed);
		return;
	}
	if (may_release && t->claim >= 0 && chance(seed, 12)) {
		/* Pretend the delivery failed: give the claim back. */
		int os = t->claim, err;

		forget_claim(i);
		call_in();
		err = place_claim_release(g.p, os);
		claimed = place_task_claimed(g.p, &t->pt);
		call_out();
		count(OP_RELEASE);
		if (err != 0)
			FAIL("releasing task %d's own claim on CPU %d: %d", i, os, err);
		if (claimed != PLACE_CPU_NONE)
			FAIL("task %d still claims %d after its release", i, claimed);
		t->released++;
		set_state(i, T_WAKING, T_SLEEPING);
		atomic_fetch_sub(&g.inflight, 1);
		q_push(&g.sleeping, i);
		return;
	}
	t->why = Q_WOKEN;
	set_state(i, T_WAKING, T_QUEUED);
	q_push(&g.cpu[g.dense[cpu]].q, i);
}

/* ---- workers --------------------------------------------------------------- */

struct thread {
	int id;
	int *mine;   /* dense indexes of the CPUs it serves */
	int nmine;
	uint64_t seed;
};

/* Start task i on the thread's CPU k (the task is held, state T_QUEUED). */
static void start(int k, int i, bool stolen)
{
	struct task *t = &g.task[i];
	int os = g.os[k], err, claimed;

	if (t->claim >= 0) {
		call_in();
		claimed = place_task_claimed(g.p, &t->pt);
		call_out();
		count(OP_CLAIMED);
		if (claimed != t->claim)
			FAIL("task %d: its claim on CPU %d is gone before it ran (task_claimed %d)", i,
			     t->claim, claimed);
	}
	forget_claim(i);
	set_state(i, T_QUEUED, T_RUNNING);
	call_in();
	err = place_run_begin(g.p, os, &t->pt);
	claimed = place_task_claimed(g.p, &t->pt);
	call_out();
	count(OP_BEGIN);
	if (stolen)
		count(OP_STEAL);
	if (err != 0)
		FAIL("run_begin(CPU %d, task %d): %d", os, i, err);
	if (claimed != PLACE_CPU_NONE)
		FAIL("task %d still claims CPU %d while it runs", i, claimed);
	if (t->why == Q_WOKEN)
		t->ran++;
	t->why = 0;
	g.cpu[k].running = i;
	g.cpu[k].parked = false;
}

/* The task running on CPU k stops. */
static void stop_task(struct thread *th, int k, bool draining)
{
	struct cpu *c = &g.cpu[k];
	int i = c->running, os = g.os[k], err;
	struct task *t = &g.task[i];
	unsigned how = (unsigned)(rnd(&th->seed) % 8);

	how = how < 5 ? PLACE_RUN_SLEEP : how < 7 ? PLACE_RUN_PREEMPT : PLACE_RUN_EXIT;
	if (draining && how == PLACE_RUN_PREEMPT)
		how = PLACE_RUN_SLEEP;
	for (volatile int spin = (int)(rnd(&th->seed) % 300); spin > 0; spin--)
		;
	call_in();
	err = place_run_end(g.p, os, &t->pt, how);
	call_out();
	c->running = -1;
	if (err != 0)
		FAIL("run_end(CPU %d, task %d, how %u): %d", os, i, how, err);
	if (how == PLACE_RUN_PREEMPT) {
		count(OP_END_PREEMPT);
		t->why = Q_PREEMPTED;
		set_state(i, T_RUNNING, T_QUEUED);
		q_push(&c->q, i);
		return;
	}
	if (how == PLACE_RUN_EXIT) {
		count(OP_END_EXIT);
		task_reset(t, &th->seed);
	} else {
		count(OP_END_SLEEP);
	}
	if (!draining && how == PLACE_RUN_SLEEP && chance(&th->seed, 2)) {
		/* it woke something: the worker of os is the waker */
		set_state(i, T_RUNNING, T_WAKING);
		wake(i, c->registered ? os : PLACE_CPU_NONE, &th->seed, true);
		return;
	}
	set_state(i, T_RUNNING, T_SLEEPING);
	atomic_fetch_sub(&g.inflight, 1);
	q_push(&g.sleeping, i);
}

static void reg_change(int k, bool reg)
{
	struct cpu *c = &g.cpu[k];
	int err;

	atomic_fetch_add(&c->seq, 1);
	call_in();
	err = reg ? place_worker_register(g.p, g.os[k], 0) : place_worker_unregister(g.p, g.os[k]);
	call_out();
	atomic_fetch_add(&c->seq, 1);
	count(reg ? OP_REG : OP_UNREG);
	if (err != 0)
		FAIL("%s CPU %d: %d", reg ? "register" : "unregister", g.os[k], err);
	c->registered = reg;
	c->parked = false;
}

/* One step of the worker of CPU k. */
static void work(struct thread *th, int k, bool draining)
{
	struct cpu *c = &g.cpu[k];
	int i, err;

	if (!c->registered) {
		if (draining || ++c->unreg_ticks > 20)
			reg_change(k, true);
		return;
	}
	if (c->running >= 0) {
		stop_task(th, k, draining);
		return;
	}
	if (!draining && chance(&th->seed, 150)) {
		c->unreg_ticks = 0;
		reg_change(k, false);
		return;
	}
	i = q_pop(&c->q, g.os[k]);
	if (i >= 0) {
		start(k, i, false);
		return;
	}
	if (chance(&th->seed, 3)) { /* steal, as a pool's idle worker does */
		int v = (int)(rnd(&th->seed) % (uint64_t)g.nr_cpus);

		if (v != k && (i = q_pop(&g.cpu[v].q, g.os[k])) >= 0) {
			start(k, i, true);
			return;
		}
	}
	if (!c->parked || chance(&th->seed, 8)) { /* again while parked: harmless */
		call_in();
		err = place_idle_enter(g.p, g.os[k]);
		call_out();
		count(OP_IDLE);
		if (err != 0)
			FAIL("idle_enter(CPU %d): %d", g.os[k], err);
		c->parked = true;
	}
}

/* Wake a sleeping task, as one of our registered CPUs or as a non-worker. */
static void waker_step(struct thread *th)
{
	int i = stress_queue_pop(&g.sleeping), waker = PLACE_CPU_NONE;

	if (i < 0)
		return;
	atomic_fetch_add(&g.inflight, 1);
	set_state(i, T_SLEEPING, T_WAKING);
	if (chance(&th->seed, 2)) {
		int k = th->mine[rnd(&th->seed) % (uint64_t)th->nmine];

		if (g.cpu[k].registered)
			waker = g.os[k];
	}
	wake(i, waker, &th->seed, true);
}

static void *thread_main(void *arg)
{
	struct thread *th = arg;
	struct rusage ru;

	while (!atomic_load(&g.stop) && !atomic_load(&g.failed)) {
		int k = th->mine[rnd(&th->seed) % (uint64_t)th->nmine];

		if (chance(&th->seed, 3))
			waker_step(th);
		work(th, k, false);
		if (chance(&th->seed, 64))
			sched_yield();
	}
	/* Drain: no new wakeups; everyone runs what is queued until every
	 * task sleeps again and no thread may still wake one. Unregistered
	 * CPUs come back to drain theirs. */
	atomic_fetch_sub(&g.in_main, 1);
	while ((atomic_load(&g.inflight) > 0 || atomic_load(&g.in_main) > 0) && !atomic_load(&g.failed)) {
		for (int n = 0; n < th->nmine; n++)
			work(th, th->mine[n], true);
		sched_yield();
	}
	for (int n = 0; n < th->nmine; n++) {
		struct cpu *c = &g.cpu[th->mine[n]];

		if (!c->registered)
			reg_change(th->mine[n], true);
		if (c->running >= 0)
			FAIL("CPU %d still runs task %d after the drain", g.os[th->mine[n]], c->running);
		if (place_idle_enter(g.p, g.os[th->mine[n]]) != 0)
			FAIL("final idle_enter(CPU %d) failed", g.os[th->mine[n]]);
	}
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		atomic_fetch_add(&g.nivcsw, ru.ru_nivcsw);
		atomic_fetch_add(&g.nvcsw, ru.ru_nvcsw);
	}
	return NULL;
}

/* ---- the test -------------------------------------------------------------- */

static double total_seconds(void)
{
	const char *env = getenv("PLACE_STRESS_SECONDS");
	double s = env ? atof(env) : DEFAULT_SECONDS;

	if (!(s > 0))
		s = DEFAULT_SECONDS;
	if (getenv("PLACE_UNDER_VALGRIND") && s > VALGRIND_SECONDS)
		s = VALGRIND_SECONDS;
	return s;
}

static void setup(const struct row *row)
{
	place_topo *topo;
	place_config cfg;
	uint64_t seed = 0x9e3779b97f4a7c15u;

	memset(&g, 0, sizeof(g));
	ck_assert_msg(place_topo_load(&topo, row->source) == 0, "%s: %s", row->source, place_last_error());
	place_config_init(&cfg);
	cfg.policy = row->policy;
	cfg.util_period_ns = 200000; /* let SIS_UTIL's bound move during the run */
	ck_assert_int_eq(place_create(&g.p, topo, &cfg), 0);
	place_topo_free(topo);
	g.topo = place_get_topo(g.p);
	g.nr_cpus = place_topo_nr_cpus(g.topo);
	g.cpu_limit = place_topo_cpu_limit(g.topo);
	g.os = calloc((size_t)g.nr_cpus, sizeof(int));
	g.dense = malloc((size_t)g.cpu_limit * sizeof(int));
	g.cpu = calloc((size_t)g.nr_cpus, sizeof(*g.cpu));
	g.owner = calloc((size_t)g.nr_cpus, sizeof(*g.owner));
	ck_assert(g.os && g.dense && g.cpu && g.owner);
	for (int c = 0; c < g.cpu_limit; c++)
		g.dense[c] = -1;
	for (int k = 0; k < g.nr_cpus; k++) {
		g.os[k] = place_topo_cpu(g.topo, k);
		g.dense[g.os[k]] = k;
		ck_assert(stress_queue_init(&g.cpu[k].q, MAX_TASKS));
		g.cpu[k].owner_thread = k % NTHREADS;
		g.cpu[k].running = -1;
		g.cpu[k].registered = true;
		ck_assert_int_eq(place_worker_register(g.p, g.os[k], 0), 0);
	}
	ck_assert(stress_queue_init(&g.sleeping, MAX_TASKS));
	g.ntasks = 3 * g.nr_cpus < MAX_TASKS ? 3 * g.nr_cpus : MAX_TASKS;
	for (int i = 0; i < g.ntasks; i++) {
		task_reset(&g.task[i], &seed);
		g.task[i].pt.data = &g.task[i];
		q_push(&g.sleeping, i);
	}
}

static void teardown(void)
{
	for (int i = 0; i < g.ntasks; i++)
		CPU_FREE(g.task[i].set);
	for (int k = 0; k < g.nr_cpus; k++)
		stress_queue_free(&g.cpu[k].q);
	stress_queue_free(&g.sleeping);
	free(g.os);
	free(g.dense);
	free(g.cpu);
	free(g.owner);
	place_destroy(g.p);
}

/* After the drain, nothing may stay claimed or queued anywhere: each CPU,
 * idle with an empty queue, is claimed by a wakeup of a task allowed only
 * there, and that claim is released again. */
static void check_every_cpu_available(void)
{
	size_t size = CPU_ALLOC_SIZE((size_t)g.cpu_limit);
	cpu_set_t *set = CPU_ALLOC((size_t)g.cpu_limit);
	place_task t;

	for (int k = 0; k < g.nr_cpus; k++) {
		int cpu;

		place_task_init(&t, 0, 0);
		CPU_ZERO_S(size, set);
		CPU_SET_S((size_t)g.os[k], size, set);
		ck_assert_int_eq(place_task_set_cpus(&t, set, size), 0);
		cpu = place_wakeup(g.p, &t, PLACE_CPU_NONE, 0);
		ck_assert_int_eq(cpu, g.os[k]);
		ck_assert_msg(place_task_claimed(g.p, &t) == g.os[k],
			      "CPU %d is not available after the drain (a claim or queued count leaked)",
			      g.os[k]);
		ck_assert_int_eq(place_claim_release(g.p, g.os[k]), 0);
	}
	CPU_FREE(set);
}

START_TEST(t_invariants)
{
	const struct row *row = &rows[_i];
	double seconds = total_seconds() / NROWS, t0, elapsed;
	struct thread th[NTHREADS];
	pthread_t tid[NTHREADS];
	place_stats st;
	long woken = 0, ran = 0, released = 0, ops[NOPS];

	setup(row);
	for (int n = 0; n < NTHREADS; n++) {
		th[n].id = n;
		th[n].mine = calloc((size_t)g.nr_cpus, sizeof(int));
		th[n].nmine = 0;
		th[n].seed = 0x2545f4914f6cdd1du * (uint64_t)(n + 1) + (uint64_t)_i;
		for (int k = 0; k < g.nr_cpus; k++)
			if (g.cpu[k].owner_thread == n)
				th[n].mine[th[n].nmine++] = k;
		ck_assert_int_gt(th[n].nmine, 0);
	}
	atomic_store(&g.in_main, NTHREADS);
	t0 = now_s();
	for (int n = 0; n < NTHREADS; n++)
		ck_assert_int_eq(pthread_create(&tid[n], NULL, thread_main, &th[n]), 0);
	while (now_s() - t0 < seconds && !atomic_load(&g.failed)) {
		struct timespec nap = { 0, 10000000 };

		nanosleep(&nap, NULL);
	}
	atomic_store(&g.stop, 1);
	for (int n = 0; n < NTHREADS; n++) {
		pthread_join(tid[n], NULL);
		free(th[n].mine);
	}
	elapsed = now_s() - t0;
	ck_assert_msg(!atomic_load(&g.failed), "%s: %s", row->name, g.why);

	/* Exactly once, and every queue drained. */
	for (int k = 0; k < g.nr_cpus; k++)
		ck_assert_msg(g.cpu[k].q.n == 0, "CPU %d: %d tasks left in its queue", g.os[k], g.cpu[k].q.n);
	ck_assert_int_eq(g.sleeping.n, g.ntasks);
	for (int i = 0; i < g.ntasks; i++) {
		struct task *t = &g.task[i];

		ck_assert_int_eq(atomic_load(&t->state), T_SLEEPING);
		ck_assert_msg(t->woken == t->ran + t->released,
			      "task %d: woken %ld times, ran %ld after a wakeup, released %ld", i, t->woken,
			      t->ran, t->released);
		woken += t->woken;
		ran += t->ran;
		released += t->released;
	}
	for (int k = 0; k < g.nr_cpus; k++)
		ck_assert_int_eq(atomic_load(&g.owner[k]), 0);
	for (int n = 0; n < NOPS; n++)
		ops[n] = atomic_load(&g.ops[n]);

	/* The statistics agree with the oracle (before the final probes). */
	ck_assert_int_eq(place_stats_read(g.p, -1, &st), 0);
	ck_assert_uint_eq(st.wakeups, (uint64_t)(ops[OP_WAKE] - ops[OP_WAKE_ESRCH] + ops[OP_WAKE_NOCLAIM]));
	ck_assert_uint_eq(st.hit_target + st.hit_prev + st.hit_recent + st.hit_idle_core + st.hit_idle_cpu +
				  st.hit_sibling + st.hit_prev_smt + st.hit_fallback + st.hit_widened,
			  st.wakeups);
	ck_assert_uint_eq(st.claims, (uint64_t)ops[OP_WAKE_CLAIMED]);
	ck_assert_uint_eq(st.claims_released, (uint64_t)ops[OP_RELEASE]);
	check_every_cpu_available();

	printf("%s (%s, %d CPUs, %s, %d threads, %d tasks): %.2f s\n", row->name, row->source, g.nr_cpus,
	       policy_name[row->policy], NTHREADS, g.ntasks, elapsed);
	printf("  ");
	for (int n = 0; n < NOPS; n++)
		printf("%s %ld%s", op_name[n], ops[n], n + 1 < NOPS ? ", " : "\n");
	printf("  woken %ld = ran %ld + released %ld; involuntary switches %ld, voluntary %ld; "
	       "library: lost claims %lu, claims stolen %lu, false positives %lu, fail-prone marks %lu\n",
	       woken, ran, released, atomic_load(&g.nivcsw), atomic_load(&g.nvcsw),
	       (unsigned long)st.lost_claims, (unsigned long)st.claims_stolen,
	       (unsigned long)st.false_positives, (unsigned long)st.fail_prone_marks);
	fflush(stdout);
	teardown();
}
END_TEST

static Suite *invariants_suite(void)
{
	Suite *s = suite_create("invariants");
	TCase *tc = tcase_create("stress");

	/* the run itself, the drain, and room for slow sanitizer builds */
	tcase_set_timeout(tc, total_seconds() / NROWS * 4 + 30);
	tcase_add_loop_test(tc, t_invariants, 0, NROWS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	printf("invariant stress: %.1f s over %d topologies (PLACE_STRESS_SECONDS to change)\n",
	       total_seconds(), NROWS);
	fflush(stdout);
	return place_test_run(invariants_suite());
}
