/*
 * The hot path allocates nothing and takes no lock (DESIGN.md, "Concurrency
 * rules"): place_wakeup, place_idle_enter, place_run_begin, place_run_end
 * and place_claim_release, over thousands of calls on synthetic SMT
 * topologies, every policy, one thread and two.
 *
 * How. This executable defines malloc, calloc, realloc, free, the aligned
 * allocators, the pthread lock calls, sem_wait and syscall(). It is linked
 * with -export-dynamic, so the dynamic linker binds libplace.so's (and
 * liburcu's) calls to these definitions: each forwards to the real function
 * and, while the window is armed, counts. That sees every call made through
 * the PLT/GOT. It does not see a lock built from inline atomics plus an
 * inline futex system call (no such code is in libplace; a futex issued
 * through syscall(), as liburcu's wake-ups are, is counted).
 *
 * The positive controls prove the counters can fail the test: an
 * allocation and a lock inside the window are counted exactly once, and
 * place_create() inside the window (libplace.so allocating) is seen.
 *
 * The first call on a thread may register it with liburcu-bp (which
 * allocates, once per thread): each hot loop warms up unarmed first.
 *
 * Under AddressSanitizer (whose allocator must stay the interposer) the
 * counting functions are compiled out, and under valgrind (which redirects
 * libplace.so's malloc calls to its own) they would see nothing: there the
 * hot loops still run, for the sanitizer's sake, but counts are not checked,
 * and each test says so.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "place.h"
#include "testlib.h"

#if defined(__SANITIZE_ADDRESS__)
#define HOTPATH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOTPATH_ASAN 1
#endif
#endif

/* ------------------------------------------------------------------------ */
/* The counting window                                                       */

enum count { C_MALLOC, C_CALLOC, C_REALLOC, C_FREE, C_MEMALIGN, C_MUTEX, C_SPIN,
	     C_RWLOCK, C_SEM, C_SYSCALL, C_FUTEX, NR_COUNTS };

static const char *const count_name[NR_COUNTS] = {
	"malloc", "calloc", "realloc", "free", "memalign/aligned_alloc", "pthread_mutex_*lock",
	"pthread_spin_*lock", "pthread_rwlock_*lock", "sem_*wait", "syscall()", "futex",
};

static int armed;
static unsigned long counts[NR_COUNTS];

__attribute__((unused)) static void count(enum count c)
{
	if (__atomic_load_n(&armed, __ATOMIC_RELAXED))
		__atomic_fetch_add(&counts[c], 1, __ATOMIC_RELAXED);
}

static void window_open(void)
{
	memset(counts, 0, sizeof(counts));
	__atomic_store_n(&armed, 1, __ATOMIC_SEQ_CST);
}

static void window_close(void)
{
	__atomic_store_n(&armed, 0, __ATOMIC_SEQ_CST);
}

static unsigned long window_total(void)
{
	unsigned long total = 0;

	for (int c = 0; c < NR_COUNTS; c++)
		total += counts[c];
	return total;
}

static void window_print(const char *what)
{
	printf("%s:", what);
	for (int c = 0; c < NR_COUNTS; c++)
		if (counts[c])
			printf(" %s=%lu", count_name[c], counts[c]);
	printf(window_total() ? "\n" : " nothing\n");
	fflush(stdout);
}

/* Why counts cannot be trusted in this process, or NULL. */
static const char *uncounted(void)
{
#ifdef HOTPATH_ASAN
	return "AddressSanitizer build: its allocator stays the interposer";
#else
	const char *preload = getenv("LD_PRELOAD");

	if (getenv("PLACE_UNDER_VALGRIND") || (preload && strstr(preload, "vgpreload")))
		return "under valgrind: it redirects the library's malloc calls";
	return NULL;
#endif
}

/* True (and says why) when the counts of this test are not to be checked. */
static bool skip_counts(const char *test)
{
	const char *why = uncounted();

	if (why)
		printf("%s: counts not checked (%s)\n", test, why);
	return why != NULL;
}

/* ------------------------------------------------------------------------ */
/* Interposed functions                                                      */

#ifndef HOTPATH_ASAN

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t size);

void *malloc(size_t size)
{
	count(C_MALLOC);
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	count(C_CALLOC);
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	count(C_REALLOC);
	return __libc_realloc(p, size);
}

void free(void *p)
{
	count(C_FREE);
	__libc_free(p);
}

void *aligned_alloc(size_t align, size_t size)
{
	count(C_MEMALIGN);
	return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	count(C_MEMALIGN);
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* The real lock functions, found once (dlsym may allocate: not armed then). */
#define REAL(name) static __typeof__(name) *real_##name
REAL(pthread_mutex_lock);
REAL(pthread_mutex_trylock);
REAL(pthread_spin_lock);
REAL(pthread_spin_trylock);
REAL(pthread_rwlock_rdlock);
REAL(pthread_rwlock_wrlock);
REAL(sem_wait);
REAL(sem_trywait);
static long (*real_syscall)(long, ...);

#define FIND(name) (real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name))

__attribute__((constructor)) static void find_real(void)
{
	FIND(pthread_mutex_lock);
	FIND(pthread_mutex_trylock);
	FIND(pthread_spin_lock);
	FIND(pthread_spin_trylock);
	FIND(pthread_rwlock_rdlock);
	FIND(pthread_rwlock_wrlock);
	FIND(sem_wait);
	FIND(sem_trywait);
	FIND(syscall);
}

/* Count, then forward with the same argument. Found here too when called
 * before find_real(): liburcu-bp's constructor (libplace.so's dependency,
 * so initialised before this executable) already locks and calls syscall(). */
#define FORWARD(counter, name, type)                  \
	int name(type *x)                             \
	{                                             \
		count(counter);                       \
		if (!real_##name)                     \
			FIND(name);                   \
		return real_##name(x);                \
	}

FORWARD(C_MUTEX, pthread_mutex_lock, pthread_mutex_t)
FORWARD(C_MUTEX, pthread_mutex_trylock, pthread_mutex_t)
FORWARD(C_SPIN, pthread_spin_lock, pthread_spinlock_t)
FORWARD(C_SPIN, pthread_spin_trylock, pthread_spinlock_t)
FORWARD(C_RWLOCK, pthread_rwlock_rdlock, pthread_rwlock_t)
FORWARD(C_RWLOCK, pthread_rwlock_wrlock, pthread_rwlock_t)
FORWARD(C_SEM, sem_wait, sem_t)
FORWARD(C_SEM, sem_trywait, sem_t)

/* syscall() takes at most six integer arguments after the number. */
long syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	count(C_SYSCALL);
	if (nr == SYS_futex)
		count(C_FUTEX);
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall)
		FIND(syscall); /* before find_real(): see FORWARD */
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
#endif /* !HOTPATH_ASAN */

/* ------------------------------------------------------------------------ */
/* Positive controls: the counters can fail the test                          */

START_TEST(t_control_malloc)
{
	void *volatile p;

	if (skip_counts("malloc control"))
		return;
	window_open();
	p = malloc(24);
	window_close();
	window_print("malloc in the window");
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(counts[C_MALLOC], 1);
	ck_assert_uint_eq(window_total(), 1);
	window_open();
	free(p);
	window_close();
	ck_assert_uint_eq(counts[C_FREE], 1);
}
END_TEST

START_TEST(t_control_lock)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	if (skip_counts("lock control"))
		return;
	window_open();
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	window_close();
	window_print("a mutex in the window");
	ck_assert_uint_eq(counts[C_MUTEX], 1);
	ck_assert_uint_eq(window_total(), 1);
}
END_TEST

/* libplace.so's own allocations reach this executable's malloc family. */
START_TEST(t_control_library)
{
	place_topo *topo;
	place *p = NULL;
	unsigned long allocs;

	if (skip_counts("library control"))
		return;
	ck_assert_int_eq(place_topo_load(&topo, "synthetic:pack:1 l3:1 core:4 pu:2"), 0);
	window_open();
	place_create(&p, topo, NULL);
	window_close();
	window_print("place_create in the window");
	allocs = counts[C_MALLOC] + counts[C_CALLOC] + counts[C_REALLOC] + counts[C_MEMALIGN];
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_gt(allocs, 0);
	place_destroy(p);
	place_topo_free(topo);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The hot loop                                                              */

#define NR_TMPL 64
#define STEPS 5000
#define WARMUP 300

static const char *const topo_src[] = {
	"synthetic:pack:1 [numa] l3:2 core:8 pu:2(indexes=core)",  /* 32 CPUs, 2 LLCs */
	"synthetic:pack:2 [numa] l3:1 core:40 pu:2(indexes=core)", /* LLCs of 80: multi-word masks */
};
#define NR_TOPO ((int)(sizeof(topo_src) / sizeof(topo_src[0])))

static const int policies[] = { PLACE_POLICY_LINEAR, PLACE_POLICY_SIS_CORE, PLACE_POLICY_EXACT };
static const char *const policy_name[] = { "LINEAR", "SIS_CORE", "EXACT" };
#define NR_POLICY ((int)(sizeof(policies) / sizeof(policies[0])))

static const unsigned wake_flags[] = { 0, PLACE_WAKE_SYNC, PLACE_WAKE_NOCLAIM, PLACE_WAKE_NEW };

static uint64_t vnow;

static uint64_t vclock(void *arg)
{
	(void)arg;
	return __atomic_load_n(&vnow, __ATOMIC_RELAXED);
}

struct loop {
	place *p;
	place_topo *topo;
	int nr;
	int *os;              /* dense -> OS CPU */
	bool *busy;           /* [cpu_limit] runs its dummy task */
	place_task *dummy;    /* [cpu_limit] */
	place_task tmpl[NR_TMPL];
	cpu_set_t *set;       /* the even CPUs: a restriction for some templates */
	size_t set_size;
	int nr_busy;
	int target_busy;      /* percent: the owner's load changes move towards it */
	bool cookies;         /* tasks carry core-scheduling cookies 0..2 */
	int err;              /* first failing return code, checked after the window */
	const char *err_what;
};

static uint64_t rng_next(uint64_t *s) /* xorshift64* */
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Keep the first error (no Check call inside the window: it writes). */
static int note(struct loop *l, const char *what, int rc)
{
	if (rc < 0 && !l->err) {
		l->err = rc;
		l->err_what = what;
	}
	return rc;
}

static void loop_set(struct loop *l)
{
	int limit = place_topo_cpu_limit(l->topo);

	l->set = CPU_ALLOC((size_t)limit);
	l->set_size = CPU_ALLOC_SIZE((size_t)limit);
	CPU_ZERO_S(l->set_size, l->set);
	for (int i = 0; i < l->nr; i += 2)
		CPU_SET_S((size_t)l->os[i], l->set_size, l->set);
}

/* Templates last ran on a random allowed CPU; every third one is restricted. */
static void loop_templates(struct loop *l, uint64_t *rng)
{
	for (int i = 0; i < NR_TMPL; i++) {
		place_task *t = &l->tmpl[i];
		int cpu = l->os[(rng_next(rng) % (uint64_t)l->nr) & ~1ull];

		place_task_init(t, l->cookies ? (uint64_t)i % 3 : 0, 0);
		if (i % 3 == 0)
			ck_assert_int_eq(place_task_set_cpus(t, l->set, l->set_size), 0);
		ck_assert_int_eq(place_run_begin(l->p, cpu, t), 0); /* nothing runs yet */
		ck_assert_int_eq(place_run_end(l->p, cpu, t, PLACE_RUN_SLEEP), 0);
		ck_assert_int_eq(place_idle_enter(l->p, cpu), 0);
	}
}

/* place_run_begin, which core scheduling may refuse (-EBUSY while a
 * sibling runs another cookie): false then, and nothing changed. */
static bool try_run(struct loop *l, int cpu, place_task *t, const char *what)
{
	int rc = place_run_begin(l->p, cpu, t);

	if (rc == -EBUSY && l->cookies)
		return false;
	note(l, what, rc);
	return rc == 0;
}

static void loop_busy(struct loop *l, int cpu, bool busy)
{
	place_task *d = &l->dummy[cpu];

	if (busy) {
		place_task_init(d, l->cookies ? (uint64_t)cpu % 3 : 0, 0);
		if (!try_run(l, cpu, d, "run_begin dummy")) {
			note(l, "idle_enter", place_idle_enter(l->p, cpu)); /* forced idle */
			return;
		}
	} else {
		note(l, "run_end dummy", place_run_end(l->p, cpu, d, PLACE_RUN_EXIT));
		note(l, "idle_enter", place_idle_enter(l->p, cpu));
	}
	l->busy[cpu] = busy;
	l->nr_busy += busy ? 1 : -1;
}

/* Start or stop a random CPU's dummy, towards target_busy percent. */
static void loop_drift(struct loop *l, uint64_t r)
{
	int c = l->os[r % (uint64_t)l->nr];
	bool below = l->nr_busy * 100 < l->target_busy * l->nr;

	if (l->busy[c] != below)
		loop_busy(l, c, below);
}

static void loop_init(struct loop *l, int topo, int policy, int busy_pct, bool cookies)
{
	uint64_t rng = 12345 + (uint64_t)topo * 7 + (uint64_t)policy;
	place_config cfg;
	int limit;

	memset(l, 0, sizeof(*l));
	l->cookies = cookies;
	ck_assert_int_eq(place_topo_load(&l->topo, topo_src[topo]), 0);
	place_config_init(&cfg);
	cfg.policy = policies[policy];
	cfg.clock = vclock;
	ck_assert_int_eq(place_create(&l->p, l->topo, &cfg), 0);
	l->nr = place_topo_nr_cpus(l->topo);
	limit = place_topo_cpu_limit(l->topo);
	l->os = calloc((size_t)l->nr, sizeof(*l->os));
	l->busy = calloc((size_t)limit, sizeof(*l->busy));
	l->dummy = calloc((size_t)limit, sizeof(*l->dummy));
	for (int i = 0; i < l->nr; i++) {
		l->os[i] = place_topo_cpu(l->topo, i);
		ck_assert_int_eq(place_worker_register(l->p, l->os[i], 0), 0);
	}
	loop_set(l);
	loop_templates(l, &rng);
	l->target_busy = busy_pct;
	for (int i = 0; i < l->nr; i++)
		if ((int)(rng_next(&rng) % 100) < busy_pct)
			loop_busy(l, l->os[i], true);
}

static void loop_fini(struct loop *l)
{
	place_destroy(l->p);
	place_topo_free(l->topo);
	CPU_FREE(l->set);
	free(l->os);
	free(l->busy);
	free(l->dummy);
}

/* Undo a wakeup onto busy cpu: its worker runs t between dummy slices (a
 * refused t stays queued there: this suite checks calls, not placement). */
static void undo_stacked(struct loop *l, int cpu, place_task *t)
{
	note(l, "run_end preempt", place_run_end(l->p, cpu, &l->dummy[cpu], PLACE_RUN_PREEMPT));
	if (try_run(l, cpu, t, "run_begin stacked"))
		note(l, "run_end stacked", place_run_end(l->p, cpu, t, PLACE_RUN_SLEEP));
	note(l, "run_begin dummy", place_run_begin(l->p, cpu, &l->dummy[cpu]));
}

/* Run t on idle cpu and park cpu again; false when core scheduling refused. */
static bool run_idle(struct loop *l, int cpu, place_task *t, uint64_t r)
{
	if (!try_run(l, cpu, t, "run_begin"))
		return false;
	note(l, "run_end", place_run_end(l->p, cpu, t,
					  r & (1ull << 41) ? PLACE_RUN_SLEEP : PLACE_RUN_EXIT));
	note(l, "idle_enter", place_idle_enter(l->p, cpu));
	return true;
}

/* Undo t's claim on cpu: release it, or run t there (or, for the owner, on
 * another idle CPU: a thief); a refused run releases it. */
static void undo_claim(struct loop *l, int cpu, place_task *t, uint64_t r, bool owner)
{
	int thief = l->os[(r >> 24) % (uint64_t)l->nr];
	int where = owner && !l->busy[thief] && (r & (1ull << 42)) ? thief : cpu;

	/* The thief is idle and unclaimed: the only claim out is ours. */
	if ((r & (1ull << 40)) || !run_idle(l, where, t, r))
		note(l, "claim_release", place_claim_release(l->p, cpu));
}

/* One wakeup with random flags and waker, and its undo. The owner also acts
 * as the busy CPUs' workers: it runs stacked tasks and moves the load. */
static void loop_step(struct loop *l, place_task *t, uint64_t *rng, bool owner)
{
	uint64_t r = rng_next(rng);
	unsigned flags = wake_flags[r % 4];
	int waker = (r >> 8) & 1 ? PLACE_CPU_NONE : l->os[(r >> 16) % (uint64_t)l->nr];
	int cpu;

	*t = l->tmpl[(r >> 32) % NR_TMPL];
	__atomic_fetch_add(&vnow, 50000, __ATOMIC_RELAXED);
	cpu = note(l, "wakeup", place_wakeup(l->p, t, waker, flags));
	if (cpu < 0 || (flags & PLACE_WAKE_NOCLAIM))
		;
	else if (place_task_claimed(l->p, t) == cpu)
		undo_claim(l, cpu, t, r, owner);
	else if (owner && l->busy[cpu])
		undo_stacked(l, cpu, t);
	else if (owner)
		run_idle(l, cpu, t, r); /* stacked on an idle CPU that was not available */
	if (owner && (r >> 44) % 8 == 0)
		loop_drift(l, r >> 48);
}

static void loop_run(struct loop *l, uint64_t seed, int steps, bool owner)
{
	place_task t;

	for (int i = 0; i < steps; i++)
		loop_step(l, &t, &seed, owner);
}

/* What the loop exercised, for the log: claims and releases, stacking,
 * repair, lost claims. */
static void print_coverage(struct loop *l)
{
	place_stats st;

	ck_assert_int_eq(place_stats_read(l->p, -1, &st), 0);
	printf("  wakeups %lu: claimed %lu, released %lu, stolen %lu, stacked %lu, idle core %lu, "
	       "idle cpu %lu, sibling %lu, false positives %lu, lost claims %lu, idle enters %lu\n",
	       (unsigned long)st.wakeups, (unsigned long)st.claims,
	       (unsigned long)st.claims_released, (unsigned long)st.claims_stolen,
	       (unsigned long)st.hit_fallback, (unsigned long)st.hit_idle_core,
	       (unsigned long)st.hit_idle_cpu, (unsigned long)st.hit_sibling,
	       (unsigned long)st.false_positives, (unsigned long)st.lost_claims,
	       (unsigned long)st.idle_enters);
	ck_assert_uint_gt(st.claims, 0);
}

static void assert_clean(struct loop *l, const char *what)
{
	ck_assert_msg(!l->err, "%s returned %d (%s)", l->err_what, l->err, place_strerror(l->err));
	if (skip_counts(what))
		return;
	window_print(what);
	print_coverage(l);
	ck_assert_msg(window_total() == 0, "%s: %lu allocations or locks", what, window_total());
}

/* One thread, 50% then 95% busy, in one window. */
static void hot_single(int topo, int policy, bool cookies)
{
	struct loop l;
	char what[160];

	loop_init(&l, topo, policy, 50, cookies);
	loop_run(&l, 99, WARMUP, true);
	window_open();
	loop_run(&l, 100, STEPS / 2, true);
	l.target_busy = 95; /* the owner's changes take the load there */
	loop_run(&l, 101, STEPS / 2, true);
	window_close();
	snprintf(what, sizeof(what), "%s, %s%s, %d steps", topo_src[topo], policy_name[policy],
		 cookies ? ", cookies 0..2" : "", STEPS);
	assert_clean(&l, what);
	loop_fini(&l);
}

/* _i = topology * NR_POLICY + policy. */
START_TEST(t_hot_single)
{
	hot_single(_i / NR_POLICY, _i % NR_POLICY, false);
}
END_TEST

/* Tasks and busy CPUs carry cookies: core scheduling's checks (and its
 * refusals) are on the hot path too. */
START_TEST(t_hot_cookies)
{
	hot_single(0, _i, true);
}
END_TEST

/* Two threads wake, release and run claimed CPUs concurrently, 90% busy.
 * The busy set stays fixed: no thread acts as a busy CPU's worker. */
struct hot_thread {
	struct loop *l;
	pthread_barrier_t *bar;
	uint64_t seed;
};

static void *hot_thread_main(void *arg)
{
	struct hot_thread *h = arg;

	loop_run(h->l, h->seed, WARMUP, false);
	pthread_barrier_wait(h->bar); /* warmed up */
	pthread_barrier_wait(h->bar); /* window open */
	loop_run(h->l, h->seed + 1, STEPS, false);
	pthread_barrier_wait(h->bar); /* done */
	pthread_barrier_wait(h->bar); /* window closed: exit may allocate */
	return NULL;
}

START_TEST(t_hot_threads)
{
	struct loop l;
	pthread_barrier_t bar;
	pthread_t tid[2];
	struct hot_thread h[2];
	char what[128];

	loop_init(&l, 1, _i, 90, false);
	pthread_barrier_init(&bar, NULL, 3);
	for (int i = 0; i < 2; i++) {
		h[i] = (struct hot_thread){ .l = &l, .bar = &bar, .seed = 1000 + (uint64_t)i * 77 };
		ck_assert_int_eq(pthread_create(&tid[i], NULL, hot_thread_main, &h[i]), 0);
	}
	pthread_barrier_wait(&bar);
	window_open();
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	window_close();
	pthread_barrier_wait(&bar);
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&bar);
	snprintf(what, sizeof(what), "%s, %s, 2 threads x %d steps", topo_src[1],
		 policy_name[_i], STEPS);
	assert_clean(&l, what);
	loop_fini(&l);
}
END_TEST

static Suite *hotpath_suite(void)
{
	Suite *s = suite_create("hotpath");
	TCase *controls = tcase_create("controls");
	TCase *single = tcase_create("single");
	TCase *threads = tcase_create("threads");
	TCase *cookies = tcase_create("cookies");

	tcase_add_test(controls, t_control_malloc);
	tcase_add_test(controls, t_control_lock);
	tcase_add_test(controls, t_control_library);
	tcase_add_loop_test(single, t_hot_single, 0, NR_TOPO * NR_POLICY);
	tcase_add_loop_test(threads, t_hot_threads, 0, NR_POLICY);
	tcase_add_loop_test(cookies, t_hot_cookies, 0, NR_POLICY);
	suite_add_tcase(s, controls);
	suite_add_tcase(s, single);
	suite_add_tcase(s, threads);
	suite_add_tcase(s, cookies);
	return s;
}

int main(void)
{
	return place_test_run(hotpath_suite());
}
