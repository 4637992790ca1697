/*
 * Topology swaps under load (place_set_topology, DESIGN.md mechanism 12):
 * eight worker threads (one per CPU of a synthetic 2-LLC, 4-core, 8-thread
 * machine), two non-worker wakers and one swapper, eleven threads on this
 * 2-CPU VM. Workers run, wake, preempt and park; a worker whose CPU left
 * the topology drains its queue, unregisters, and registers again once its
 * CPU is back (worker detach and attach under load). The swapper moves the
 * instance between four restrictions: the whole machine, LLC 0 only, LLC 1
 * only, SMT off.
 *
 * The oracle.
 * - A swap counter seq: odd while swap k+1 runs, 2(k+1) once it returned;
 *   hist[k] is topology k's CPU mask. A wakeup that read seq s0 before the
 *   call and s1 after it must return a CPU of hist[s0/2] .. hist[(s1+1)/2]
 *   (the topologies that were current at some point of the call); when
 *   s0 == s1 is even, exactly of hist[s0/2]: after a swap returns, no
 *   wakeup returns a CPU the new topology lacks. A claimed answer is
 *   checked the same way (no claim succeeds on an offline CPU).
 * - Claims are exclusive: owner[cpu] is taken by CAS when a claim is
 *   returned and freed when its task starts or the claim is released.
 * - Every woken task runs: at the end every task is asleep, every queue
 *   is empty, and every CPU's QUEUED count and CLAIMED bit are zero.
 *
 * The window the grace period closes (a wakeup that read a state word
 * before the OFFLINE bit and returns that CPU after the swap returned) is
 * a few instructions wide: on this 2-CPU VM the stress above does not hit
 * it even with the grace period removed (tried: 3 runs of 5000 swaps, no
 * report). t_swap_waits_for_readers checks the grace period itself: a
 * swap does not return while a read-side section that began before it is
 * open (the mutant without synchronize fails it at once).
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

#include "rcu.h"
#include "stresslib.h"
#include "test_engine.h"
#include "testlib.h"

#define NCPU 8
#define NTASK 40
#define NEXTERNAL 2
#define RUN_NS 1500000000ull /* wall time of the hammering; a tenth under valgrind */
#define HIST 64              /* a wakeup spans at most two swaps (their grace periods wait for it) */
#define NTOPO 4

static const char *const topo_src[NTOPO] = {
	TOPO_2LLC,                                                /* everything */
	"synthetic:pack:1 l3:1 core:2 pu:2",                      /* LLC 0: CPUs 0-3 */
	"synthetic:pack:1 l3:1 core:2 pu:2(indexes=4,5,6,7)",     /* LLC 1: CPUs 4-7 */
	"synthetic:pack:1 l3:2 core:2 pu:1(indexes=0,2,4,6)",     /* SMT off */
};
static const unsigned topo_mask[NTOPO] = { 0xff, 0x0f, 0xf0, 0x55 };

static struct {
	place *p;
	place_topo *topo[NTOPO];
	place_task task[NTASK];
	struct stress_queue q[NCPU];
	struct stress_queue sleeping;
	atomic_int owner[NCPU];   /* task + 1 holding a claim on the CPU, 0 none */
	atomic_uint seq;          /* swaps: odd while one runs */
	atomic_uint hist[HIST];   /* hist[k % HIST]: topology k's CPU mask */
	atomic_uint registered;   /* CPUs whose worker is registered (set after register,
	                           * cleared before unregister) */
	atomic_int inflight;      /* woken and not yet through run_end (nor released); a
	                           * thread adds the tasks it creates before it takes
	                           * off the one it ends, so 0 means nothing can come */
	atomic_int stop, drain, failed;
	atomic_long wakeups, strict, runs, swaps, releases, leaves, rewakes;
	char why[256];
} g;

static void oracle_fail(const char *fmt, int a, int b, int c)
{
	stress_fail(&g.failed, g.why, sizeof(g.why), fmt, a, b, c);
}

/* The CPUs of every topology current at some point between two reads of seq. */
static unsigned topologies_between(unsigned s0, unsigned s1)
{
	unsigned mask = 0;

	for (unsigned k = s0 / 2; k <= (s1 + 1) / 2; k++)
		mask |= atomic_load(&g.hist[k % HIST]);
	return mask;
}

/* Wake task i (waker: a worker's CPU or PLACE_CPU_NONE), check the answer,
 * record its claim, and deliver it (or now and then release the claim). */
static void wake(int i, int waker, unsigned *seed)
{
	place_task *t = &g.task[i];
	unsigned s0 = atomic_load(&g.seq), s1, allowed;
	int cpu = place_wakeup(g.p, t, waker, stress_rand(seed) % 4 == 0 ? PLACE_WAKE_SYNC : 0);
	struct place_task_rec *r = place__rec(t);
	int expect = 0;

	s1 = atomic_load(&g.seq);
	atomic_fetch_add(&g.wakeups, 1);
	if (cpu < 0 || cpu >= NCPU) {
		/* -ESRCH is legal only if no worker was usable: every worker of the
		 * topology gone at once, which this test never does */
		oracle_fail("place_wakeup returned %d for task %d (seq %d)", cpu, i, (int)s0);
		return;
	}
	allowed = topologies_between(s0, s1);
	if (s0 == s1 && !(s0 & 1))
		atomic_fetch_add(&g.strict, 1);
	if (!(allowed & (1u << cpu)))
		oracle_fail("wakeup of task %d returned CPU %d, outside the topologies current "
			    "during the call (from seq %d)", i, cpu, (int)s0);
	if (r->claim_gen && !atomic_compare_exchange_strong(&g.owner[cpu], &expect, i + 1))
		oracle_fail("CPU %d claimed twice (held by task %d, now %d)", cpu, expect - 1, i);
	atomic_fetch_add(&g.inflight, 1);
	if (r->claim_gen && stress_rand(seed) % 16 == 0) { /* delivery failed: released, back to sleep */
		atomic_store(&g.owner[cpu], 0);
		if (place_claim_release(g.p, cpu) != 0)
			oracle_fail("releasing our own claim on CPU %d failed (task %d)%.0d", cpu, i, 0);
		atomic_fetch_add(&g.releases, 1);
		atomic_fetch_sub(&g.inflight, 1);
		stress_queue_push(&g.sleeping, i);
		return;
	}
	stress_queue_push(&g.q[cpu], i);
}

/* The claim task i holds (if still held) ends when it starts: free the
 * oracle's slot first. */
static void forget_claim(int i)
{
	struct place_task_rec *r = place__rec(&g.task[i]);
	int q = r->queued_cpu;

	if (r->claim_gen && q >= 0 && atomic_load(&g.owner[q]) == i + 1)
		atomic_store(&g.owner[q], 0);
}

/* Worker detach and attach: leave when the CPU is offline and nothing is
 * queued; come back when it is online again. */
static void churn(int cpu, bool *registered)
{
	unsigned s = atomic_load(&g.seq);
	bool online = !(s & 1) && (atomic_load(&g.hist[s / 2 % HIST]) & (1u << cpu));
	int err;

	if (*registered && !(s & 1) && !online) { /* its queue just came up empty */
		atomic_fetch_and(&g.registered, ~(1u << cpu));
		if (place_worker_unregister(g.p, cpu) != 0)
			oracle_fail("unregister of offline CPU %d failed%.0d%.0d", cpu, 0, 0);
		*registered = false;
		atomic_fetch_add(&g.leaves, 1);
	} else if (!*registered && online) {
		err = place_worker_register(g.p, cpu, 0);
		if (err == 0) {
			*registered = true;
			atomic_fetch_or(&g.registered, 1u << cpu);
		}
		else if (err != -ENODEV) /* -ENODEV: a swap took it away meanwhile */
			oracle_fail("register of CPU %d: %d%.0d", cpu, err, 0);
	}
}

/* Task i was sent to cpu: run it, and then put it to sleep, wake it again
 * or preempt it (it stays in flight). A worker that has left (a wakeup in
 * flight during its CPU's swap sent it here just before) sends it on. */
static void run_one(int cpu, int i, bool registered, unsigned *seed)
{
	int err;

	forget_claim(i);
	if (!registered) {
		atomic_fetch_add(&g.rewakes, 1);
		wake(i, PLACE_CPU_NONE, seed); /* gives up its old slot first */
		atomic_fetch_sub(&g.inflight, 1);
		return;
	}
	if ((err = place_run_begin(g.p, cpu, &g.task[i])) != 0) {
		oracle_fail("run_begin on CPU %d: %d (task %d)", cpu, err, i);
		return;
	}
	for (volatile int spin = 0; spin < 200; spin++)
		;
	atomic_fetch_add(&g.runs, 1);
	if (stress_rand(seed) % 8 == 0) {
		place_run_end(g.p, cpu, &g.task[i], PLACE_RUN_PREEMPT);
		stress_queue_push(&g.q[cpu], i);
		return;
	}
	place_run_end(g.p, cpu, &g.task[i], PLACE_RUN_SLEEP);
	if (atomic_load(&g.drain) || stress_rand(seed) % 4 == 0)
		stress_queue_push(&g.sleeping, i);
	else
		wake(i, cpu, seed);
	atomic_fetch_sub(&g.inflight, 1);
}

static void *worker(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	unsigned seed = (unsigned)cpu * 7919u + 1;
	bool registered = true, parked = false;

	for (;;) {
		int i = stress_queue_pop(&g.q[cpu]);

		if (i >= 0) {
			parked = false;
			run_one(cpu, i, registered, &seed);
			continue;
		}
		if (atomic_load(&g.drain) && atomic_load(&g.inflight) == 0)
			break;
		churn(cpu, &registered);
		if (registered && !parked && place_idle_enter(g.p, cpu) != 0)
			oracle_fail("idle_enter on CPU %d failed%.0d%.0d", cpu, 0, 0);
		parked = registered;
		sched_yield();
	}
	return NULL;
}

static void *external(void *arg)
{
	stress_wake_sleepers(&g.stop, &g.sleeping, wake, (unsigned)(intptr_t)arg);
	return NULL;
}

/* One swap to topology r: announce it (hist, then seq odd), do it, say it
 * returned (seq even). */
static void swap_to(int r)
{
	unsigned k = atomic_load(&g.seq) / 2;
	int err;

	atomic_store(&g.hist[(k + 1) % HIST], topo_mask[r]);
	atomic_store(&g.seq, 2 * k + 1);
	err = place_set_topology(g.p, g.topo[r]);
	if (err)
		oracle_fail("place_set_topology(%d): %d%.0d", r, err, 0);
	atomic_store(&g.seq, 2 * k + 2);
	atomic_fetch_add(&g.swaps, 1);
}

/*
 * A usable worker must exist in every topology, or wakeups may rightly
 * fail with -ESRCH (which the oracle then could not tell from a bug): the
 * next topology r must share with the current one a CPU whose worker is
 * registered (online workers never leave, so it stays). Disjoint
 * restrictions (LLC 0 -> LLC 1) go through the whole machine; a worker
 * that left comes back when its queue is next empty, so this waits.
 */
static bool wait_for_worker(unsigned cur, unsigned r)
{
	uint64_t t0 = stress_wall_ns();

	while (!(atomic_load(&g.registered) & topo_mask[cur] & topo_mask[r])) {
		if (stress_wall_ns() - t0 > 2000000000u) {
			oracle_fail("no worker of topology %d registered after 2 s (mask %#x)%.0d", (int)r,
				    (int)atomic_load(&g.registered), 0);
			return false;
		}
		sched_yield();
	}
	return true;
}

static void *swapper(void *arg)
{
	unsigned seed = 12345, cur = 0;

	(void)arg;
	while (!atomic_load(&g.stop)) {
		unsigned r = (cur + 1 + stress_rand(&seed) % (NTOPO - 1)) % NTOPO; /* any other one */

		if (!(topo_mask[cur] & topo_mask[r]))
			r = 0; /* disjoint: by the whole machine */
		if (!wait_for_worker(cur, r))
			break;
		swap_to((int)r);
		cur = r;
		usleep(200);
	}
	swap_to(0); /* everything back for the drain */
	return NULL;
}

/*
 * Issue 14.2 after the load, with the real clock: LLC 1's CPUs, whose run
 * time the stress piled up, leave (LLC 0 only), a recompute runs without
 * them, they come back, and with 2 quiet periods passed the LLC's first
 * recompute must read it nearly idle. Before, their whole-life run time
 * landed in that one sample: util_avg 768 or more.
 */
static void grow_after_shrink(void)
{
	uint64_t period = g.p->util_period_ns;

	for (int cpu = 0; cpu < NCPU; cpu++) {
		int err = place_worker_register(g.p, cpu, 0);

		ck_assert(err == 0 || err == -EEXIST);
	}
	ck_assert_int_eq(place_set_topology(g.p, g.topo[1]), 0); /* LLC 0 only */
	usleep((useconds_t)(2 * period / 1000));
	place__util_refresh(g.p, 1);
	ck_assert_int_eq(place_set_topology(g.p, g.topo[0]), 0);
	usleep((useconds_t)(2 * period / 1000));
	place__util_refresh(g.p, 1);
	printf("LLC 1 back after 2 quiet periods: util %lu/1024, bound %u\n", (unsigned long)g.p->llc[1].util_avg,
	       g.p->llc[1].nr_idle_scan & PLACE_SCAN_NR);
	ck_assert_uint_lt(g.p->llc[1].util_avg, 512);
}

START_TEST(t_swaps_under_load)
{
	place_topo *topo;
	pthread_t w[NCPU], x[NEXTERNAL], s;
	uint64_t t0, run_ns = getenv("PLACE_UNDER_VALGRIND") ? RUN_NS / 10 : RUN_NS;

	memset(&g, 0, sizeof(g));
	for (int r = 0; r < NTOPO; r++)
		ck_assert_int_eq(place_topo_load(&g.topo[r], topo_src[r]), 0);
	topo = g.topo[0];
	ck_assert_int_eq(place_create(&g.p, topo, NULL), 0);
	printf("topology %s; restrictions:", topo_src[0]);
	for (int r = 1; r < NTOPO; r++)
		printf(" %s;", topo_src[r]);
	printf("\n");
	atomic_store(&g.hist[0], topo_mask[0]);
	atomic_store(&g.registered, (1u << NCPU) - 1);
	ck_assert(stress_queue_init(&g.sleeping, NTASK));
	for (int cpu = 0; cpu < NCPU; cpu++) {
		ck_assert(stress_queue_init(&g.q[cpu], NTASK));
		ck_assert_int_eq(place_worker_register(g.p, cpu, 0), 0);
	}
	for (int i = 0; i < NTASK; i++) {
		place_task_init(&g.task[i], 0, 0);
		stress_queue_push(&g.sleeping, i);
	}
	for (int cpu = 0; cpu < NCPU; cpu++)
		pthread_create(&w[cpu], NULL, worker, (void *)(intptr_t)cpu);
	for (int k = 0; k < NEXTERNAL; k++)
		pthread_create(&x[k], NULL, external, (void *)(intptr_t)(k + 101));
	pthread_create(&s, NULL, swapper, NULL);
	t0 = stress_wall_ns();
	while (stress_wall_ns() - t0 < run_ns && !atomic_load(&g.failed))
		usleep(10000);
	atomic_store(&g.stop, 1);
	for (int k = 0; k < NEXTERNAL; k++)
		pthread_join(x[k], NULL);
	pthread_join(s, NULL);
	atomic_store(&g.drain, 1); /* workers finish what is queued, then stop */
	for (int cpu = 0; cpu < NCPU; cpu++)
		pthread_join(w[cpu], NULL);
	printf("%ld wakeups (%ld with no swap in flight, checked exactly), %ld runs, %ld swaps, "
	       "%ld releases, %ld workers left and came back, %ld tasks re-woken from a departed "
	       "worker, %.1f s\n", g.wakeups, g.strict, g.runs, g.swaps, g.releases, g.leaves,
	       g.rewakes, (double)(stress_wall_ns() - t0) / 1e9);
	ck_assert_msg(!g.failed, "%s", g.why);
	ck_assert_int_gt(g.swaps, 10);
	ck_assert_int_gt(g.strict, 100);
	/* every woken task ran: all asleep, nothing queued or claimed anywhere */
	ck_assert_int_eq(g.sleeping.n, NTASK);
	for (int cpu = 0; cpu < NCPU; cpu++) {
		uint64_t st = g.p->cpu[cpu].state;

		ck_assert_int_eq(g.q[cpu].n, 0);
		ck_assert_msg(place__st_queued(st) == 0 && !(st & (PLACE_ST_CLAIMED | PLACE_ST_OFFLINE)),
			      "CPU %d state %#llx at the end", cpu, (unsigned long long)st);
		ck_assert_int_eq(atomic_load(&g.owner[cpu]), 0);
	}
	grow_after_shrink();
	for (int cpu = 0; cpu < NCPU; cpu++)
		stress_queue_free(&g.q[cpu]);
	stress_queue_free(&g.sleeping);
	place_destroy(g.p);
	for (int r = 0; r < NTOPO; r++)
		place_topo_free(g.topo[r]);
}
END_TEST

/* A reader inside a read-side section, as a place_wakeup in flight is. */
static struct {
	atomic_int inside, leave, swapped;
	place *p;
	place_topo *t;
} rd;

static void *reader(void *arg)
{
	(void)arg;
	place__read_lock();
	atomic_store(&rd.inside, 1);
	while (!atomic_load(&rd.leave))
		usleep(1000);
	place__read_unlock(rd.p);
	return NULL;
}

static void *swap_once(void *arg)
{
	(void)arg;
	ck_assert_int_eq(place_set_topology(rd.p, rd.t), 0);
	atomic_store(&rd.swapped, 1);
	return NULL;
}

START_TEST(t_swap_waits_for_readers)
{
	place_topo *u;
	pthread_t r, w;

	ck_assert_int_eq(place_topo_load(&u, topo_src[0]), 0);
	ck_assert_int_eq(place_topo_load(&rd.t, topo_src[1]), 0);
	ck_assert_int_eq(place_create(&rd.p, u, NULL), 0);
	pthread_create(&r, NULL, reader, NULL);
	while (!atomic_load(&rd.inside))
		usleep(1000);
	pthread_create(&w, NULL, swap_once, NULL);
	usleep(100000);
	/* the bits are set (claims already fail there), but the call waits */
	ck_assert(place_load_64(&rd.p->cpu[5].state) & PLACE_ST_OFFLINE);
	ck_assert_msg(!atomic_load(&rd.swapped), "place_set_topology returned inside a read section");
	atomic_store(&rd.leave, 1);
	pthread_join(r, NULL);
	pthread_join(w, NULL);
	ck_assert(atomic_load(&rd.swapped));
	place_destroy(rd.p);
	place_topo_free(rd.t);
	place_topo_free(u);
}
END_TEST

static Suite *reconf_stress_suite(void)
{
	Suite *s = suite_create("reconf_stress");
	TCase *tc = tcase_create("swaps");

	tcase_add_test(tc, t_swap_waits_for_readers);
	tcase_add_test(tc, t_swaps_under_load);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(reconf_stress_suite());
}
