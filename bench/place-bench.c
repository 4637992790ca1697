/*
 * place-bench: what one placement decision costs.
 *
 * For each policy (linear, sis_core, exact) side by side, on synthetic SMT2
 * topologies of 16, 64, 256 and 1024 CPUs, at 0%, 50%, 90% and 99% busy, it
 * times place_wakeup() and the idle edges (place_run_begin, place_run_end,
 * place_idle_enter) and place_claim_release(), a direct switch
 * (place_run_switch) beside the two calls it replaces, and reads the CPUs
 * probed per wakeup from place_stats_read().
 *
 * How the load is held still. A busy CPU runs a dummy task (place_run_begin)
 * for the whole row. Each measured step copies a task record from a fixed
 * set of templates (each template last ran on a random CPU, so its prev_cpu
 * is busy with the row's probability), wakes it with no waker
 * (PLACE_CPU_NONE: an I/O thread, placement around prev_cpu; --waker worker
 * makes a random busy CPU's worker the waker instead, single-thread rows
 * only), and then undoes the wakeup: a claimed idle CPU either gets its
 * claim released or runs the task and goes idle again (chosen at random;
 * place_task_claimed tells whether the claim is this task's: with two
 * threads an idle answer may be another thread's claim, stacked behind, and
 * is run); a stacked wakeup (a busy CPU returned) is run by that CPU's
 * worker between two slices of its dummy task. So every
 * wakeup sees the same busy set. Everything is drawn from one seed, and the
 * draws do not depend on the library's answers: every policy of a row gets
 * the same busy set, templates and sequence of wakeups.
 *
 * Time. The library runs on a virtual clock that advances a fixed step per
 * wakeup (after a 1 s jump once the load is set), so the scan bound sees the
 * row's utilization and a run under valgrind takes the same decisions as a
 * native one. Wall time is read around each call with clock_gettime (a
 * call's undo must stay outside the timed region, which rules out timing
 * whole batches); the clock's own cost, measured at start, is subtracted.
 * The machine is small and noisy: compare policies as ratios within one run.
 *
 * Instructions. --one POLICY TOPO LOAD runs one row's fixed number of calls;
 * under valgrind --tool=callgrind --toggle-collect=bench_measured the
 * inclusive cost of each place_* function over its call count is its
 * instructions per call (a mean). --callgrind does that for every row.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opt.h"
#include "place.h"

/* --dump-each needs callgrind's client requests (valgrind's headers). */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND_H 1
#endif
#endif
#ifndef HAVE_CALLGRIND_H
#define CALLGRIND_DUMP_STATS do { } while (0)
#endif

/* ------------------------------------------------------------------------ */
/* What is measured                                                          */

enum op { OP_WAKE, OP_IDLE, OP_BEGIN, OP_END, OP_REL, OP_PAIR, OP_SWITCH, NR_OPS };

static const char *const op_fn[NR_OPS] = {
	"place_wakeup", "place_idle_enter", "place_run_begin", "place_run_end",
	"place_claim_release", "bench_pair", "place_run_switch",
};
static const char *const op_short[NR_OPS] = { "wake", "idle", "begin", "end", "rel", "pair", "switch" };

struct topo_def {
	const char *name;
	const char *spec;
};

/* 256 is the 2x64-core Zen3 (2x64C/128T) the SIS_CORE patches were measured on. */
static const struct topo_def topo_defs[] = {
	{ "16", "pack:1 [numa] l3:1 core:8 pu:2(indexes=core)" },
	{ "64", "pack:2 [numa] l3:1 core:16 pu:2(indexes=core)" },
	{ "256", "pack:2 [numa] l3:8 core:8 pu:2(indexes=core)" },
	{ "1024", "pack:16 [numa] l3:1 core:32 pu:2(indexes=core)" },
};
#define NR_TOPOS ((int)(sizeof(topo_defs) / sizeof(topo_defs[0])))
enum { T_256 = 2 }; /* topo_defs[T_256]: the 2-thread rows' model */

struct policy_def {
	const char *name;
	int policy;
};

static const struct policy_def policy_defs[] = {
	{ "linear", PLACE_POLICY_LINEAR },
	{ "sis_core", PLACE_POLICY_SIS_CORE },
	{ "exact", PLACE_POLICY_EXACT },
};
#define NR_POLICIES ((int)(sizeof(policy_defs) / sizeof(policy_defs[0])))

/* Feature names for --without. */
static const struct feat_def {
	const char *name;
	unsigned bit;
} feat_defs[] = {
	{ "claim", PLACE_FEAT_CLAIM },
	{ "scan_sibling", PLACE_FEAT_SCAN_SIBLING },
	{ "short_affine", PLACE_FEAT_SHORT_AFFINE },
	{ "wake_wide", PLACE_FEAT_WAKE_WIDE },
	{ "sis_util", PLACE_FEAT_SIS_UTIL },
#ifdef PLACE_FEAT_COOKIES
	{ "cookies", PLACE_FEAT_COOKIES },
#endif
#ifdef PLACE_FEAT_NUMA
	{ "numa", PLACE_FEAT_NUMA },
#endif
#ifdef PLACE_FEAT_WIDEN
	{ "widen", PLACE_FEAT_WIDEN },
	{ "cluster", PLACE_FEAT_CLUSTER },
	{ "pull_idle", PLACE_FEAT_PULL_IDLE },
	{ "hub_stays", PLACE_FEAT_HUB_STAYS },
	{ "hub_queue", PLACE_FEAT_HUB_QUEUE },
	{ "busy_stays", PLACE_FEAT_BUSY_STAYS },
#endif
};
#define NR_FEATS ((int)(sizeof(feat_defs) / sizeof(feat_defs[0])))

/* Wakeup flags for --flags. CURRENT needs a waker: a wakeup without one
 * (--waker none, or 0% busy) drops it. */
static const struct feat_def flag_defs[] = {
	{ "sync", PLACE_WAKE_SYNC },
	{ "current", PLACE_WAKE_CURRENT },
	{ "new", PLACE_WAKE_NEW },
	{ "spread", PLACE_WAKE_SPREAD },
};
#define NR_FLAGS ((int)(sizeof(flag_defs) / sizeof(flag_defs[0])))

static const int load_defs[] = { 0, 50, 90, 99, 100 }; /* 100: only when asked (--load) */
#define NR_LOADS ((int)(sizeof(load_defs) / sizeof(load_defs[0])))

#define NR_TEMPLATES 512
#define VCLOCK_STEP_NS 1000ull       /* virtual time per measured step */
#define VCLOCK_SETTLE_NS 1000000000ull /* jump once the load is set */

struct opts {
	long calls;          /* measured steps per row (per thread) */
	long warmup;         /* unmeasured steps before them */
	long cg_calls;       /* measured steps per row under callgrind */
	uint64_t seed;
	unsigned features;
	int groups;          /* --groups: tasks spread over NUMA groups 1..groups (0 = none) */
	bool tsv;
	bool callgrind;
	bool worker_waker;   /* --waker worker */
	unsigned wake_flags; /* --flags: PLACE_WAKE_* of every measured wakeup */
	bool dump_each;      /* --dump-each: a callgrind dump after each measured wakeup */
	bool contended;      /* also the 2-thread rows */
	unsigned topo_mask;  /* bit i: topo_defs[i] */
	unsigned load_mask;
	unsigned policy_mask;
	const char *self;    /* this program, for --callgrind */
};

/* Where the wakeups landed, and the repairs (per 100 wakeups), for tsv. */
static const struct level_def {
	const char *name;
	size_t off;
} level_defs[] = {
	{ "target", offsetof(place_stats, hit_target) },
	{ "prev", offsetof(place_stats, hit_prev) },
	{ "recent", offsetof(place_stats, hit_recent) },
	{ "idle_core", offsetof(place_stats, hit_idle_core) },
	{ "prev_smt", offsetof(place_stats, hit_prev_smt) },
	{ "idle_cpu", offsetof(place_stats, hit_idle_cpu) },
	{ "sibling", offsetof(place_stats, hit_sibling) },
	{ "fallback", offsetof(place_stats, hit_fallback) },
	{ "false_pos", offsetof(place_stats, false_positives) },
	{ "fail_prone", offsetof(place_stats, fail_prone_marks) },
	{ "numa_move", offsetof(place_stats, numa_moves) },
	{ "numa_cap_skip", offsetof(place_stats, numa_cap_skips) },
	{ "numa_cool_skip", offsetof(place_stats, numa_cooldown_skips) },
};
#define NR_LEVELS ((int)(sizeof(level_defs) / sizeof(level_defs[0])))

/* One row's results. */
struct row {
	int topo, load, policy, threads;
	int nr_cpus, llc_cpus, busy;
	long n[NR_OPS];      /* timed calls */
	long calls[NR_OPS];  /* all calls in the measured steps */
	double med[NR_OPS], p90[NR_OPS];
	double ir[NR_OPS];   /* instructions per call, -1 when not measured */
	double ir_med, ir_p90; /* of place_wakeup, per call; -1 when not measured */
	double probes, stacked, lost;
	double level[NR_LEVELS]; /* per 100 wakeups */
	double timer;            /* the clock cost subtracted */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "place-bench: %s: %s", what, place_strerror(err));
	if (*place_last_error())
		fprintf(stderr, " (%s)", place_last_error());
	fputc('\n', stderr);
	exit(1);
}

static int check(const char *what, int rc)
{
	if (rc < 0)
		die(what, rc);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Clocks, random numbers, samples                                           */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t vclock_read(void *arg)
{
	return __atomic_load_n((uint64_t *)arg, __ATOMIC_RELAXED);
}

static uint64_t rng_next(uint64_t *s) /* xorshift64* */
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static uint64_t rng_seed(uint64_t seed, int a, int b)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)a * 1000003u + (uint64_t)b + 1;

	return s ? s : 1;
}

/* Each call is timed on its own (its undo stays outside the timed region),
 * but this clock ticks in steps of about 10 ns: single readings are too
 * coarse. A batch of BATCH consecutive calls of one op is summed instead;
 * the tick phase is random, so the batch mean is unbiased once the mean cost
 * of the clock itself is subtracted. Median and p90 are over batch means. */
#define BATCH 64

struct samples {
	double *v;      /* batch means, ns per call */
	long nv, cap;
	long n;         /* timed calls */
	uint64_t sum;   /* of the current batch */
	int k;          /* calls in the current batch */
	long untimed;   /* calls made but not timed (the stacked undo) */
};

static void samples_init(struct samples *s, long calls)
{
	*s = (struct samples){ .cap = calls / BATCH + 1 };
	s->v = calloc((size_t)s->cap, sizeof(*s->v));
	if (!s->v)
		die("samples", -ENOMEM);
}

static double timer_cost; /* cost of one now_ns() pair, see timer_calibrate() */

static void samples_add(struct samples *s, uint64_t dt)
{
	s->n++;
	s->sum += dt;
	if (++s->k < BATCH)
		return;
	if (s->nv < s->cap)
		s->v[s->nv++] = (double)s->sum / BATCH - timer_cost;
	s->sum = 0;
	s->k = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median and p90 of the union of the per-thread batch means. */
static void samples_summary(struct samples *s, int nr, double *med, double *p90)
{
	long total;

	for (int i = 1; i < nr; i++) {
		memcpy(s[0].v + s[0].nv, s[i].v, (size_t)s[i].nv * sizeof(*s->v));
		s[0].nv += s[i].nv;
	}
	total = s[0].nv;
	if (total == 0) {
		*med = *p90 = -1;
		return;
	}
	qsort(s[0].v, (size_t)total, sizeof(*s->v), cmp_double);
	*med = s[0].v[total / 2] > 0 ? s[0].v[total / 2] : 0;
	*p90 = s[0].v[total * 9 / 10] > 0 ? s[0].v[total * 9 / 10] : 0;
}

/* The clock's own cost, measured as the samples are: the median of the
 * means of batches of BATCH back-to-back pairs (a median, so that a
 * preemption during calibration does not skew it). Redone before each
 * (topology, load) group: the machine is shared. */
static void timer_calibrate(void)
{
	enum { NB = 1025 };
	static double mean[NB];
	for (int b = 0; b < NB; b++) {
		uint64_t sum = 0;

		for (int i = 0; i < BATCH; i++) {
			uint64_t t0 = now_ns();

			sum += now_ns() - t0;
		}
		mean[b] = (double)sum / BATCH;
	}
	qsort(mean, NB, sizeof(mean[0]), cmp_double);
	timer_cost = mean[NB / 2];
}

/* Time one call and keep the sample when s is not NULL. */
#define TIMED(s, expr)                                                        \
	({                                                                    \
		uint64_t t0_ = now_ns();                                      \
		int rc_ = (expr);                                             \
		if (s)                                                        \
			samples_add((s), now_ns() - t0_);                     \
		rc_;                                                          \
	})

/* ------------------------------------------------------------------------ */
/* A row's instance and load                                                 */

struct bench {
	place *p;
	const place_topo *topo;
	int nr_cpus;
	int *os;              /* [nr_cpus] dense -> OS number */
	bool *busy;           /* [cpu_limit] runs a dummy task */
	int *busy_cpus;       /* [nr_busy] */
	int *owner;           /* [cpu_limit] bench-side guard for the stacked undo */
	place_task *dummy;    /* [cpu_limit] the busy CPUs' tasks */
	place_task tmpl[NR_TEMPLATES];
	uint64_t vclock;
	int nr_busy;
	bool worker_waker;
	unsigned wake_flags;
	bool dump_each;
	int groups;
};

/* Task i's NUMA group under --groups (0 = none): templates and dummies
 * alike, so that the groups run on every node. */
static uint32_t group_of(const struct bench *b, int i)
{
	return b->groups ? (uint32_t)(i % b->groups) + 1 : 0;
}

/* Each template last ran on a random CPU, before the load is set. */
static void bench_templates(struct bench *b, uint64_t *rng)
{
	for (int i = 0; i < NR_TEMPLATES; i++) {
		int cpu = b->os[rng_next(rng) % (uint64_t)b->nr_cpus];

		place_task_init(&b->tmpl[i], 0, group_of(b, i));
		check("run_begin", place_run_begin(b->p, cpu, &b->tmpl[i]));
		check("run_end", place_run_end(b->p, cpu, &b->tmpl[i], PLACE_RUN_SLEEP));
		check("idle_enter", place_idle_enter(b->p, cpu));
	}
}

/* floor(nr_cpus * load / 100) CPUs, a random subset, run dummy tasks. */
static void bench_load(struct bench *b, int load, uint64_t *rng)
{
	int *perm = malloc((size_t)b->nr_cpus * sizeof(*perm));

	if (!perm)
		die("load", -ENOMEM);
	memcpy(perm, b->os, (size_t)b->nr_cpus * sizeof(*perm));
	b->nr_busy = b->nr_cpus * load / 100;
	for (int i = 0; i < b->nr_busy; i++) {
		int j = i + (int)(rng_next(rng) % (uint64_t)(b->nr_cpus - i));
		int cpu = perm[j];

		perm[j] = perm[i];
		b->busy[cpu] = true;
		b->busy_cpus[i] = cpu;
		place_task_init(&b->dummy[cpu], 0, group_of(b, cpu));
		check("run_begin dummy", place_run_begin(b->p, cpu, &b->dummy[cpu]));
	}
	free(perm);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		die("alloc", -ENOMEM);
	return p;
}

static struct bench *bench_create(const place_topo *topo, int policy, int load,
				  const struct opts *o, uint64_t *rng)
{
	struct bench *b = xcalloc(1, sizeof(*b));
	int limit = check("cpu_limit", place_topo_cpu_limit(topo));
	place_config cfg;

	place_config_init(&cfg);
	cfg.policy = policy;
	cfg.features = o->features;
	cfg.clock = vclock_read;
	cfg.clock_arg = &b->vclock;
	if (o->groups > 64)
		cfg.max_groups = (uint32_t)o->groups;
	check("place_create", place_create(&b->p, topo, &cfg));
	b->groups = o->groups;
	b->topo = topo;
	b->nr_cpus = check("nr_cpus", place_topo_nr_cpus(topo));
	b->os = xcalloc((size_t)b->nr_cpus, sizeof(*b->os));
	b->busy = xcalloc((size_t)limit, sizeof(*b->busy));
	b->busy_cpus = xcalloc((size_t)b->nr_cpus, sizeof(*b->busy_cpus));
	b->owner = xcalloc((size_t)limit, sizeof(*b->owner));
	b->dummy = xcalloc((size_t)limit, sizeof(*b->dummy));
	for (int i = 0; i < b->nr_cpus; i++) {
		b->os[i] = check("topo_cpu", place_topo_cpu(topo, i));
		check("worker_register", place_worker_register(b->p, b->os[i], 0));
	}
	bench_templates(b, rng);
	bench_load(b, load, rng);
	b->vclock += VCLOCK_SETTLE_NS;
	return b;
}

static void bench_destroy(struct bench *b)
{
	place_destroy(b->p);
	free(b->os);
	free(b->busy);
	free(b->busy_cpus);
	free(b->owner);
	free(b->dummy);
	free(b);
}

/* ------------------------------------------------------------------------ */
/* One step: a wakeup and its undo                                           */

static void guard_take(struct bench *b, int cpu)
{
	while (__atomic_exchange_n(&b->owner[cpu], 1, __ATOMIC_ACQUIRE))
		;
}

static void guard_drop(struct bench *b, int cpu)
{
	__atomic_store_n(&b->owner[cpu], 0, __ATOMIC_RELEASE);
}

/* What a direct switch replaces: prev ends, next begins (out of line, so
 * that callgrind counts the pair's inclusive cost). */
__attribute__((noinline)) static int bench_pair(place *p, int cpu, place_task *prev, unsigned how,
						place_task *next)
{
	int rc = place_run_end(p, cpu, prev, how);

	return rc ? rc : place_run_begin(p, cpu, next);
}

/* The worker of busy cpu runs the stacked task t between two slices of its
 * dummy: two switches, each either the two calls (pair) or one
 * place_run_switch, drawn at random (both leave the same state). The guard
 * waits while another thread does the same on cpu (the API allows one
 * worker per CPU). */
static void undo_stacked(struct bench *b, int cpu, place_task *t, bool sw, struct samples *s)
{
	int (*fn)(place *, int, place_task *, unsigned, place_task *) = sw ? place_run_switch : bench_pair;
	struct samples *st = s ? &s[sw ? OP_SWITCH : OP_PAIR] : NULL;
	place *p = b->p;

	guard_take(b, cpu);
	if (s && !sw) {
		s[OP_BEGIN].untimed += 2;
		s[OP_END].untimed += 2;
	}
	check("switch to stacked", TIMED(st, fn(p, cpu, &b->dummy[cpu], PLACE_RUN_PREEMPT, t)));
	check("switch to dummy", TIMED(st, fn(p, cpu, t, PLACE_RUN_SLEEP, &b->dummy[cpu])));
	guard_drop(b, cpu);
}

/* The claimed idle cpu runs t and goes idle again: the idle edges. */
static void undo_run(struct bench *b, int cpu, place_task *t, struct samples *s)
{
	place *p = b->p;

	guard_take(b, cpu);
	check("run_begin", TIMED(s ? &s[OP_BEGIN] : NULL, place_run_begin(p, cpu, t)));
	check("run_end", TIMED(s ? &s[OP_END] : NULL, place_run_end(p, cpu, t, PLACE_RUN_SLEEP)));
	check("idle_enter", TIMED(s ? &s[OP_IDLE] : NULL, place_idle_enter(p, cpu)));
	guard_drop(b, cpu);
}

static int waker_of(const struct bench *b, uint64_t r)
{
	if (!b->worker_waker || b->nr_busy == 0)
		return PLACE_CPU_NONE;
	return b->busy_cpus[(r >> 20) % (uint64_t)b->nr_busy];
}

static void step(struct bench *b, place_task *t, uint64_t *rng, struct samples *s)
{
	uint64_t r = rng_next(rng);
	unsigned flags;
	int cpu, waker;

	*t = b->tmpl[r % NR_TEMPLATES];
	__atomic_fetch_add(&b->vclock, VCLOCK_STEP_NS, __ATOMIC_RELAXED);
	if (s && b->dump_each && s[OP_WAKE].n == 0)
		CALLGRIND_DUMP_STATS; /* part 1: the warm-up */
	waker = waker_of(b, r);
	flags = waker == PLACE_CPU_NONE ? b->wake_flags & ~PLACE_WAKE_CURRENT : b->wake_flags;
	cpu = check("wakeup", TIMED(s ? &s[OP_WAKE] : NULL, place_wakeup(b->p, t, waker, flags)));
	if (s && b->dump_each)
		CALLGRIND_DUMP_STATS; /* parts 2..: one wakeup each */
	if (b->busy[cpu])
		undo_stacked(b, cpu, t, r & (1ull << 41), s);
	else if (place_task_claimed(b->p, t) != cpu || (r & (1ull << 40)) || b->groups)
		/* Also for a stack behind another thread's claim; and always
		 * with groups: a NUMA-moved task holds its move-cap slot until
		 * it runs, and this copy is thrown away after the step (a
		 * released claim would leave the slot taken for good). */
		undo_run(b, cpu, t, s);
	else
		check("claim_release", TIMED(s ? &s[OP_REL] : NULL,
					     place_claim_release(b->p, cpu)));
}

/* The measured steps, kept out of line: callgrind collects inside it only. */
__attribute__((noinline)) static void bench_measured(struct bench *b, place_task *t,
						     uint64_t *rng, struct samples *s, long n)
{
	for (long i = 0; i < n; i++)
		step(b, t, rng, s);
}

__attribute__((noinline)) static void bench_warmup(struct bench *b, place_task *t,
						   uint64_t *rng, long n)
{
	for (long i = 0; i < n; i++)
		step(b, t, rng, NULL);
}

/* ------------------------------------------------------------------------ */
/* Running a row                                                             */

/* One policy's instance as one thread drives it. */
struct lane {
	struct bench *b;
	uint64_t rng;
	struct samples s[NR_OPS];
	place_task t;
};

struct worker {
	struct lane lane[NR_POLICIES];
	int nr_lanes;
	const struct opts *o;
	pthread_barrier_t *bar;
	int cpu;                  /* pin here, -1 = do not pin */
};

/* The policies of a (topology, load) take turns, CHUNK steps each, so that
 * the machine's noise falls on all of them alike. */
#define CHUNK 256

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set); /* best effort */
}

static void worker_warmup(struct worker *w)
{
	for (int i = 0; i < w->nr_lanes; i++)
		bench_warmup(w->lane[i].b, &w->lane[i].t, &w->lane[i].rng, w->o->warmup);
}

static void worker_measure(struct worker *w)
{
	for (long done = 0; done < w->o->calls; done += CHUNK) {
		long n = w->o->calls - done < CHUNK ? w->o->calls - done : CHUNK;

		for (int i = 0; i < w->nr_lanes; i++) {
			struct lane *l = &w->lane[i];

			bench_measured(l->b, &l->t, &l->rng, l->s, n);
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pin(w->cpu);
	worker_warmup(w);
	pthread_barrier_wait(w->bar); /* all warmed up: the main thread reads the stats */
	pthread_barrier_wait(w->bar);
	worker_measure(w);
	return NULL;
}

static void stats_delta(const place_stats *a, const place_stats *z, struct row *r)
{
	double wakeups = (double)(z->wakeups - a->wakeups);

	if (wakeups <= 0)
		wakeups = 1;
	r->probes = (double)(z->cpus_probed - a->cpus_probed) / wakeups;
	r->stacked = 100.0 * (double)(z->hit_fallback - a->hit_fallback) / wakeups;
	r->lost = (double)(z->lost_claims - a->lost_claims) / wakeups;
	for (int i = 0; i < NR_LEVELS; i++) {
		uint64_t za = *(const uint64_t *)(const void *)((const char *)z + level_defs[i].off);
		uint64_t aa = *(const uint64_t *)(const void *)((const char *)a + level_defs[i].off);

		r->level[i] = 100.0 * (double)(za - aa) / wakeups;
	}
}

/* The rows of one (topology, load, threads): one instance per policy. */
struct group {
	int nr;
	struct bench *b[NR_POLICIES];
	struct row *rows;
	int threads;
};

static void stats_all(const struct group *g, place_stats *st)
{
	for (int i = 0; i < g->nr; i++)
		check("stats", place_stats_read(g->b[i]->p, -1, &st[i]));
}

/* The stats are read between warm-up and measurement (the main thread joins
 * the workers' barriers in the contended case). */
static void group_measure(struct group *g, struct worker *w)
{
	pthread_t tid[8];
	pthread_barrier_t bar;
	place_stats a[NR_POLICIES], z[NR_POLICIES];

	if (g->threads == 1) {
		worker_warmup(&w[0]);
		stats_all(g, a);
		worker_measure(&w[0]);
	} else {
		pthread_barrier_init(&bar, NULL, (unsigned)g->threads + 1);
		for (int i = 0; i < g->threads; i++) {
			w[i].bar = &bar;
			pthread_create(&tid[i], NULL, worker_main, &w[i]);
		}
		pthread_barrier_wait(&bar);
		stats_all(g, a);
		pthread_barrier_wait(&bar);
		for (int i = 0; i < g->threads; i++)
			pthread_join(tid[i], NULL);
		pthread_barrier_destroy(&bar);
	}
	stats_all(g, z);
	for (int i = 0; i < g->nr; i++)
		stats_delta(&a[i], &z[i], &g->rows[i]);
}

static void row_summary(struct worker *w, int threads, int lane, struct row *r)
{
	for (int op = 0; op < NR_OPS; op++) {
		struct samples s[8];

		r->n[op] = r->calls[op] = 0;
		for (int i = 0; i < threads; i++) {
			s[i] = w[i].lane[lane].s[op];
			r->n[op] += s[i].n;
			r->calls[op] += s[i].n + s[i].untimed;
		}
		samples_summary(s, threads, &r->med[op], &r->p90[op]);
		r->ir[op] = -1;
	}
	r->ir_med = r->ir_p90 = -1;
}

/* Every policy in pmask gets the same busy set, templates and draws. */
static void group_add(struct group *g, struct worker *w, const place_topo *topo, int ti,
		      int li, int pi, const struct opts *o)
{
	uint64_t rng = rng_seed(o->seed, ti, li);
	struct bench *b = bench_create(topo, policy_defs[pi].policy, load_defs[li], o, &rng);
	struct row *r = &g->rows[g->nr];

	b->worker_waker = o->worker_waker && g->threads == 1;
	b->wake_flags = o->wake_flags;
	b->dump_each = o->dump_each;
	for (int i = 0; i < g->threads; i++) {
		struct lane *l = &w[i].lane[g->nr];

		l->b = b;
		l->rng = rng_seed(rng, i, 7);
		for (int op = 0; op < NR_OPS; op++)
			samples_init(&l->s[op], o->calls * g->threads);
		w[i].nr_lanes = g->nr + 1;
	}
	*r = (struct row){ .topo = ti, .load = li, .policy = pi, .threads = g->threads,
			   .nr_cpus = b->nr_cpus, .busy = b->nr_busy, .timer = timer_cost };
	r->llc_cpus = check("llc_cpus", place_topo_llc_cpus(topo, b->os[0], NULL, 0));
	g->b[g->nr++] = b;
}

/* Run the policies in pmask on (topology ti, load li); fill rows; return
 * how many. */
static int group_run(const place_topo *topo, int ti, int li, unsigned pmask, int threads,
		     const struct opts *o, struct row *rows)
{
	struct group g = { .rows = rows, .threads = threads };
	struct worker w[8];
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);

	memset(w, 0, sizeof(w));
	timer_calibrate();
	for (int i = 0; i < threads; i++)
		w[i] = (struct worker){ .o = o, .cpu = threads > 1 ? i % ncpu : -1 };
	for (int pi = 0; pi < NR_POLICIES; pi++)
		if (pmask & (1u << pi))
			group_add(&g, w, topo, ti, li, pi, o);
	group_measure(&g, w);
	for (int k = 0; k < g.nr; k++) {
		row_summary(w, threads, k, &rows[k]);
		for (int i = 0; i < threads; i++)
			for (int op = 0; op < NR_OPS; op++)
				free(w[i].lane[k].s[op].v);
		bench_destroy(g.b[k]);
	}
	return g.nr;
}

/* ------------------------------------------------------------------------ */
/* Instructions: one row under callgrind                                     */

/* Inclusive cost of each op's function in a callgrind output file written
 * with --compress-strings=no --compress-pos=no: its own cost lines plus the
 * cost lines that follow its calls= lines. */
static int callgrind_fn(const char *name)
{
	for (int op = 0; op < NR_OPS; op++)
		if (!strcmp(name, op_fn[op]))
			return op;
	return -1;
}

static void callgrind_parse(const char *path, double ir[NR_OPS])
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int cur = -1;

	if (!f)
		die(path, -errno);
	for (int op = 0; op < NR_OPS; op++)
		ir[op] = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long pos, cost;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "fn=", 3))
			cur = callgrind_fn(line + 3);
		else if (cur >= 0 && line[0] >= '0' && line[0] <= '9' &&
			 sscanf(line, "%llu %llu", &pos, &cost) == 2)
			ir[cur] += (double)cost;
	}
	fclose(f);
}

/* The command that runs row r's --one under callgrind into out. */
static void cg_command(const struct opts *o, const struct row *r, const char *toggle,
		       const char *out, long calls, bool dump_each, char *cmd, size_t size)
{
	snprintf(cmd, size,
		 "valgrind --tool=callgrind --toggle-collect=%s --compress-strings=no "
		 "--compress-pos=no --callgrind-out-file=%s '%s' --one %s %s %d --calls %ld "
		 "--warmup %ld --seed %" PRIu64 " --features %u --groups %d --waker %s --flags %u%s 2>/dev/null",
		 toggle, out, o->self, policy_defs[r->policy].name, topo_defs[r->topo].name,
		 load_defs[r->load], calls, o->warmup < 10000 ? o->warmup : 10000, o->seed,
		 o->features, o->groups, o->worker_waker ? "worker" : "none", o->wake_flags,
		 dump_each ? " --dump-each" : "");
}

/* Run cmd; read the call counts that --one prints. */
static bool cg_run(const char *cmd, long n[NR_OPS])
{
	FILE *pipe = popen(cmd, "r");
	int got;

	if (!pipe)
		return false;
	got = fscanf(pipe, "calls");
	for (int op = 0; op < NR_OPS && got == 0; op++)
		got = fscanf(pipe, " %ld", &n[op]) == 1 ? 0 : -1;
	return pclose(pipe) == 0 && got == 0;
}

/* Mean instructions per call of each op: inclusive cost over call count. */
static bool callgrind_means(const struct opts *o, struct row *r)
{
	char out[64], cmd[1024];
	long n[NR_OPS];

	snprintf(out, sizeof(out), "/tmp/place-bench.%d.cg", (int)getpid());
	cg_command(o, r, "bench_measured", out, o->cg_calls, false, cmd, sizeof(cmd));
	if (!cg_run(cmd, n))
		return false;
	callgrind_parse(out, r->ir);
	unlink(out);
	for (int op = 0; op < NR_OPS; op++)
		r->ir[op] = n[op] ? r->ir[op] / (double)n[op] : -1;
	return true;
}

#ifdef HAVE_CALLGRIND_H
/* The "summary:" of one callgrind dump, or -1. */
static double cg_summary(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];
	double v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "summary: %lf", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/* Median and p90 instructions of place_wakeup: --dump-each writes one dump
 * per measured wakeup, parts 2 .. calls + 1 (part 1 is the warm-up). */
static bool callgrind_medians(const struct opts *o, struct row *r)
{
	enum { MAX = 1000 };
	static double v[MAX];
	long calls = o->cg_calls < MAX ? o->cg_calls : MAX, n[NR_OPS];
	char out[64], part[96], cmd[1024];
	int nv = 0;

	snprintf(out, sizeof(out), "/tmp/place-bench.%d.med", (int)getpid());
	cg_command(o, r, "place_wakeup", out, calls, true, cmd, sizeof(cmd));
	if (!cg_run(cmd, n))
		return false;
	for (long k = 1; k <= calls + 1; k++) {
		snprintf(part, sizeof(part), "%s.%ld", out, k);
		if (k >= 2 && (v[nv] = cg_summary(part)) >= 0)
			nv++;
		unlink(part);
	}
	unlink(out);
	if (nv == 0)
		return false;
	qsort(v, (size_t)nv, sizeof(v[0]), cmp_double);
	r->ir_med = v[nv / 2];
	r->ir_p90 = v[nv * 9 / 10];
	return true;
}
#endif

/* Both, for one row. The medians need valgrind's callgrind.h at build time. */
static bool callgrind_row(const struct opts *o, struct row *r)
{
	if (!callgrind_means(o, r))
		return false;
#ifdef HAVE_CALLGRIND_H
	return callgrind_medians(o, r);
#else
	return true;
#endif
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

static const char *row_name(const struct row *r)
{
	return policy_defs[r->policy].name;
}

static void print_tsv_header(void)
{
	printf("threads\ttopo\tcpus\tllc_cpus\tload\tbusy\tpolicy\tclock_ns\tprobes\tstacked_pct"
	       "\tlost_per_wake");
	for (int op = 0; op < NR_OPS; op++)
		printf("\t%s_med_ns\t%s_p90_ns\t%s_n", op_short[op], op_short[op], op_short[op]);
	for (int op = 0; op < NR_OPS; op++)
		printf("\t%s_ir", op_short[op]);
	printf("\twake_ir_med\twake_ir_p90");
	for (int i = 0; i < NR_LEVELS; i++)
		printf("\t%s_pct", level_defs[i].name);
	putchar('\n');
}

static void print_tsv_row(const struct row *r)
{
	printf("%d\t%s\t%d\t%d\t%d\t%d\t%s\t%.1f\t%.3f\t%.2f\t%.4f", r->threads,
	       topo_defs[r->topo].name, r->nr_cpus, r->llc_cpus, load_defs[r->load], r->busy,
	       row_name(r), r->timer, r->probes, r->stacked, r->lost);
	for (int op = 0; op < NR_OPS; op++)
		printf("\t%.0f\t%.0f\t%ld", r->med[op], r->p90[op], r->n[op]);
	for (int op = 0; op < NR_OPS; op++)
		printf("\t%.1f", r->ir[op]);
	printf("\t%.0f\t%.0f", r->ir_med, r->ir_p90);
	for (int i = 0; i < NR_LEVELS; i++)
		printf("\t%.2f", r->level[i]);
	putchar('\n');
}

static void print_ns(double v)
{
	if (v < 0)
		printf(" %6s", "-");
	else
		printf(" %6.1f", v);
}

static void print_count(double v)
{
	if (v < 0)
		printf(" %5s", "-");
	else
		printf(" %5.0f", v);
}

/* Instructions per call: wakeup mean, median, p90 | the other ops' means. */
static void print_ir(const struct row *r)
{
	printf(" |");
	print_count(r->ir[OP_WAKE]);
	print_count(r->ir_med);
	print_count(r->ir_p90);
	printf(" |");
	for (int op = OP_IDLE; op < NR_OPS; op++)
		print_count(r->ir[op]);
}

static void print_table_header(bool ir)
{
	printf("%-5s %8s %4s %4s %-8s | %6s %6s | %6s %6s %6s | %6s %6s %6s %6s %6s %6s",
	       "cpus", "llc_cpus", "load", "busy", "policy", "wake", "p90", "probes", "stack%",
	       "lost", "idle", "begin", "end", "rel", "pair", "switch");
	if (ir)
		printf(" | %5s %5s %5s | %5s %5s %5s %5s %5s %5s", "Irwk", "med", "p90", "idle", "begin",
		       "end", "rel", "pair", "switch");
	putchar('\n');
}

static void print_table_row(const struct row *r, bool ir)
{
	printf("%-5s %8d %3d%% %4d %-8s |", topo_defs[r->topo].name, r->llc_cpus,
	       load_defs[r->load], r->busy, row_name(r));
	print_ns(r->med[OP_WAKE]);
	print_ns(r->p90[OP_WAKE]);
	printf(" | %6.2f %6.1f %6.3f |", r->probes, r->stacked, r->lost);
	for (int op = OP_IDLE; op < NR_OPS; op++)
		print_ns(r->med[op]);
	if (ir)
		print_ir(r);
	putchar('\n');
}

static const char table_legend[] =
	"cpus: CPUs of the synthetic machine; llc_cpus: CPUs per LLC; load: share of CPUs busy\n"
	"(busy: how many), each running a dummy task for the whole row\n"
	"wake, p90: place_wakeup ns per call: median and 90th percentile of the means of\n"
	"batches of 64 calls, each call timed alone with clock_gettime, its cost subtracted\n"
	"probes: CPUs probed per wakeup (place_stats_read); stack%: wakeups that found no idle CPU\n"
	"lost: lost claims per wakeup; idle, begin, end, rel: median ns of place_idle_enter,\n"
	"place_run_begin, place_run_end (the claimed CPU runs the task and parks again) and\n"
	"place_claim_release; pair, switch: a busy CPU's worker going from its task to a stacked\n"
	"one and back, with place_run_end + place_run_begin (pair) or place_run_switch (each\n"
	"undo draws one); Irwk, med, p90: callgrind instructions per place_wakeup (mean,\n"
	"median, 90th percentile); idle..switch: instructions per call of the others (means)\n";

/* A row of policy pi with the same topology, load and threads as r. */
static const struct row *find_row(const struct row *rows, int nr, int ti, int li, int pi,
				  int threads)
{
	for (int i = 0; i < nr; i++)
		if (rows[i].topo == ti && rows[i].load == li && rows[i].policy == pi &&
		    rows[i].threads == threads)
			return &rows[i];
	return NULL;
}

static void print_ratio(const struct row *x, const struct row *base)
{
	printf("  %s/%s time %.2fx probes %.2fx", row_name(x), row_name(base),
	       base->med[OP_WAKE] > 0 ? x->med[OP_WAKE] / base->med[OP_WAKE] : 0,
	       base->probes > 0 ? x->probes / base->probes : 0);
	if (x->ir[OP_WAKE] > 0 && base->ir[OP_WAKE] > 0)
		printf(" Ir %.2fx", x->ir[OP_WAKE] / base->ir[OP_WAKE]);
}

/* After the SIS_CORE row of a (topo, load) group: the others as ratios to it. */
static void print_ratios(const struct row *rows, int nr, const struct row *r)
{
	const struct row *base = find_row(rows, nr, r->topo, r->load, 1, r->threads);

	if (!base)
		return;
	printf("%32s", "ratios to sis_core:");
	for (int pi = 0; pi < NR_POLICIES; pi++) {
		const struct row *x = find_row(rows, nr, r->topo, r->load, pi, r->threads);

		if (x && pi != 1)
			print_ratio(x, base);
	}
	putchar('\n');
}

static void print_table(const struct row *rows, int nr, int threads, bool ir)
{
	bool any = false;

	for (int i = 0; i < nr; i++) {
		if (rows[i].threads != threads)
			continue;
		if (!any)
			print_table_header(ir);
		any = true;
		print_table_row(&rows[i], ir);
		if (i + 1 == nr || rows[i + 1].load != rows[i].load ||
		    rows[i + 1].topo != rows[i].topo || rows[i + 1].threads != threads)
			print_ratios(rows, nr, &rows[i]);
	}
}

/* ------------------------------------------------------------------------ */
/* Options and main                                                          */

static const char usage_text[] =
	"usage: place-bench [options]\n"
	"       place-bench [options] --one POLICY TOPO LOAD\n"
	"  --calls N        measured wakeups per row and thread (default 200000)\n"
	"  --warmup N       unmeasured wakeups before them (default 20000)\n"
	"  --seed N         random seed (default 1)\n"
	"  --features N     place_config.features as a number (default PLACE_FEAT_DEFAULT)\n"
	"  --without LIST   those features off, e.g. sis_util (of claim, scan_sibling,\n"
	"                   short_affine, wake_wide, sis_util, cookies, numa, widen,\n"
	"                   cluster, pull_idle, hub_stays, hub_queue, busy_stays;\n"
	"                   any case)\n"
	"  --groups N       tasks (and the busy CPUs' dummies) in NUMA groups 1..N,\n"
	"                   round robin (default 0: no group); a NUMA decision needs\n"
	"                   a waker on another node than prev: use --waker worker\n"
	"  --topo LIST      of 16,64,256,1024 (CPUs; default all)\n"
	"  --load LIST      of 0,50,90,99,100 (per cent of the CPUs busy; default\n"
	"                   0,50,90,99; 100: nothing idle)\n"
	"  --policy LIST    of linear,sis_core,exact (any case; default all)\n"
	"  --waker W        none (default: PLACE_CPU_NONE) or worker (a random busy\n"
	"                   CPU wakes; single-thread rows only)\n"
	"  --flags LIST     every wakeup's flags, of sync, current (the waker hands\n"
	"                   off its CPU; dropped without a waker), new (with a worker\n"
	"                   waker: fork-local), spread; or a number (default none)\n"
	"  --no-contended   skip the 2-thread rows (256 CPUs, shared instance)\n"
	"  --callgrind      also count instructions per call: each row once more\n"
	"                   under valgrind --tool=callgrind, with min(--calls, 5000)\n"
	"                   and min(--warmup, 10000)\n"
	"  --one P T L      run one row, print its call counts (for callgrind:\n"
	"                   valgrind --tool=callgrind --toggle-collect=bench_measured)\n"
	"  --dump-each      with --one under callgrind: a dump after each measured\n"
	"                   wakeup (--callgrind uses it for median instructions)\n"
	"  --format F       table (default) or tsv\n"
	"  --help, --version\n";

#define PROG "place-bench"

/* The index of name in a table of structs whose first member is the name
 * (stride bytes apart), any case; -1 after a message naming the option. */
static int name_index(const char *opt, const char *arg, const char *const *names, int nr,
		      size_t stride)
{
	for (int i = 0; i < nr; i++)
		if (!strcasecmp(arg, *(const char *const *)((const char *)names + (size_t)i * stride)))
			return i;
	fprintf(stderr, PROG ": bad value '%s' for --%s: want", arg, opt);
	for (int i = 0; i < nr; i++)
		fprintf(stderr, "%s%s", i ? ", " : " ", *(const char *const *)((const char *)names +
									 (size_t)i * stride));
	fputc('\n', stderr);
	return -1;
}

/* A comma-separated list of names: a mask of their indexes; 0 after a message. */
static unsigned parse_mask(const char *opt, const char *arg, const char *const *names, int nr,
			   size_t stride)
{
	unsigned mask = 0;
	char *copy = strdup(arg), *save = NULL;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i = name_index(opt, tok, names, nr, stride);

		if (i < 0) {
			free(copy);
			return 0;
		}
		mask |= 1u << i;
	}
	free(copy);
	if (!mask)
		fprintf(stderr, PROG ": bad value '%s' for --%s: an empty list\n", arg, opt);
	return mask;
}

#define MASK_OF(opt, arg, defs) parse_mask((opt), (arg), &(defs)[0].name, \
					   (int)(sizeof(defs) / sizeof((defs)[0])), sizeof((defs)[0]))

/* The bits of the names selected in mask (bit i: defs[i]). */
static unsigned def_bits(const struct feat_def *defs, int nr, unsigned mask)
{
	unsigned bits = 0;

	for (int i = 0; i < nr; i++)
		if (mask & (1u << i))
			bits |= defs[i].bit;
	return bits;
}

/* --features: a number, decimal or 0x hex. */
static int parse_features(const char *arg, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 0);

	if (end == arg || *end || arg[0] == '-' || v > 0xffffffffUL) {
		fprintf(stderr, PROG ": bad value '%s' for --features: want a number such as 0x1f\n", arg);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

enum { O_CALLS = 256, O_WARMUP, O_SEED, O_FEATURES, O_TOPO, O_LOAD, O_POLICY,
       O_NO_CONTENDED, O_CALLGRIND, O_ONE, O_FORMAT, O_WAKER, O_DUMP_EACH, O_WITHOUT, O_GROUPS,
       O_FLAGS };

static const struct option long_opts[] = {
	{ "calls", required_argument, NULL, O_CALLS },
	{ "warmup", required_argument, NULL, O_WARMUP },
	{ "seed", required_argument, NULL, O_SEED },
	{ "features", required_argument, NULL, O_FEATURES },
	{ "topo", required_argument, NULL, O_TOPO },
	{ "load", required_argument, NULL, O_LOAD },
	{ "policy", required_argument, NULL, O_POLICY },
	{ "no-contended", no_argument, NULL, O_NO_CONTENDED },
	{ "callgrind", no_argument, NULL, O_CALLGRIND },
	{ "one", required_argument, NULL, O_ONE },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "waker", required_argument, NULL, O_WAKER },
	{ "dump-each", no_argument, NULL, O_DUMP_EACH },
	{ "without", required_argument, NULL, O_WITHOUT },
	{ "groups", required_argument, NULL, O_GROUPS },
	{ "flags", required_argument, NULL, O_FLAGS },
	OPT_COMMON_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

static const char *const load_names[NR_LOADS] = { "0", "50", "90", "99", "100" };

/* Options with a number: 0, or -1 after a message. */
static int parse_number(int c, const char *arg, struct opts *o)
{
	const char *name = opt_long_name(long_opts, c);
	uint64_t v;

	if (c == O_SEED)
		return opt_u64(PROG, name, arg, 0, UINT64_MAX, &o->seed);
	if (opt_u64(PROG, name, arg, c == O_CALLS ? 1 : 0, c == O_GROUPS ? 1000000 : 1000000000, &v) < 0)
		return -1;
	if (c == O_CALLS)
		o->calls = (long)v;
	else if (c == O_WARMUP)
		o->warmup = (long)v;
	else
		o->groups = (int)v;
	return 0;
}

/* One option: 0, or -1 after a message naming it. */
static int parse_opt(int c, const char *arg, struct opts *o, const char **one)
{
	static const char *const formats[] = { "table", "tsv" }, *const wakers[] = { "none", "worker" };
	int i;

	switch (c) {
	case O_CALLS: case O_WARMUP: case O_SEED: case O_GROUPS: return parse_number(c, arg, o);
	case O_FEATURES: return parse_features(arg, &o->features);
	case O_TOPO: return (o->topo_mask = MASK_OF("topo", arg, topo_defs)) ? 0 : -1;
	case O_LOAD:
		o->load_mask = parse_mask("load", arg, load_names, NR_LOADS, sizeof(char *));
		return o->load_mask ? 0 : -1;
	case O_POLICY: return (o->policy_mask = MASK_OF("policy", arg, policy_defs)) ? 0 : -1;
	case O_NO_CONTENDED: o->contended = false; return 0;
	case O_CALLGRIND: o->callgrind = true; return 0;
	case O_ONE: *one = arg; return 0;
	case O_FORMAT:
		if ((i = opt_choice(PROG, "format", arg, formats, 2)) < 0)
			return -1;
		o->tsv = i == 1;
		return 0;
	case O_WAKER:
		if ((i = opt_choice(PROG, "waker", arg, wakers, 2)) < 0)
			return -1;
		o->worker_waker = i == 1;
		return 0;
	case O_DUMP_EACH: o->dump_each = true; return 0;
	case O_WITHOUT: {
		unsigned mask = MASK_OF("without", arg, feat_defs);

		o->features &= ~def_bits(feat_defs, NR_FEATS, mask);
		return mask ? 0 : -1;
	}
	case O_FLAGS: {
		uint64_t v;

		if (arg[0] >= '0' && arg[0] <= '9') {
			if (opt_u64(PROG, "flags", arg, 0, UINT32_MAX, &v) < 0)
				return -1;
			o->wake_flags = (unsigned)v;
			return 0;
		}
		o->wake_flags = def_bits(flag_defs, NR_FLAGS, MASK_OF("flags", arg, flag_defs));
		return o->wake_flags ? 0 : -1;
	}
	default: return -1; /* OPT_ERROR: opt_next said why */
	}
}

/* The options; exits 2 after a message on bad usage. */
static const char *parse_opts(int argc, char **argv, struct opts *o)
{
	const char *one = NULL;
	int c;

	*o = (struct opts){ .calls = 200000, .warmup = 20000, .cg_calls = 5000, .seed = 1,
			    .features = PLACE_FEAT_DEFAULT, .contended = true,
			    .topo_mask = ~0u, .load_mask = 0xfu, .policy_mask = ~0u,
			    .self = "/proc/self/exe" };
	while ((c = opt_next(PROG, argc, argv, long_opts, usage_text, 1)) != -1)
		if (parse_opt(c, optarg, o, &one) < 0)
			exit(2);
	if (o->cg_calls > o->calls)
		o->cg_calls = o->calls;
	if (one && argc - optind != 2) {
		fprintf(stderr, PROG ": --one POLICY TOPO LOAD: want TOPO and LOAD after the options\n");
		exit(2);
	}
	if (!one && optind != argc) {
		fprintf(stderr, PROG ": unexpected argument '%s' (see --help)\n", argv[optind]);
		exit(2);
	}
	return one;
}

static place_topo *topo_load(int ti)
{
	char src[256];
	place_topo *t;

	snprintf(src, sizeof(src), "synthetic:%s", topo_defs[ti].spec);
	check(src, place_topo_load(&t, src));
	return t;
}

static int index_of(const char *opt, const char *arg, const char *const *names, int nr, size_t stride)
{
	int i = name_index(opt, arg, names, nr, stride);

	if (i < 0)
		exit(2);
	return i;
}

/* --one POLICY TOPO LOAD: one single-thread row; its call counts on stdout. */
static int run_one(const char *policy, char **argv, const struct opts *o)
{
	int pi = index_of("one", policy, &policy_defs[0].name, NR_POLICIES, sizeof(policy_defs[0]));
	int ti = index_of("one", argv[0], &topo_defs[0].name, NR_TOPOS, sizeof(topo_defs[0]));
	int li = index_of("one", argv[1], load_names, NR_LOADS, sizeof(char *));
	place_topo *t = topo_load(ti);
	struct row r;

	group_run(t, ti, li, 1u << pi, 1, o, &r);
	place_topo_free(t);
	printf("calls");
	for (int op = 0; op < NR_OPS; op++)
		printf(" %ld", r.calls[op]);
	printf("\nplace_wakeup calls %ld (%ld warm-up + %ld measured); probes %.3f stacked %.2f%%\n",
	       o->warmup + o->calls, o->warmup, o->calls, r.probes, r.stacked);
	return 0;
}

static bool selected(unsigned mask, int i)
{
	return mask & (1u << i);
}

/* Every selected (topology, load, policy), single-thread; then the 2-thread
 * rows on the 256-CPU model. */
static int run_rows(const struct opts *o, struct row *rows)
{
	int nr = 0;

	for (int threads = 1; threads <= 2; threads++) {
		for (int ti = 0; ti < NR_TOPOS; ti++) {
			place_topo *t;

			if (!selected(o->topo_mask, ti) ||
			    (threads == 2 && (ti != T_256 || !o->contended)))
				continue;
			t = topo_load(ti);
			for (int li = 0; li < NR_LOADS; li++)
				if (selected(o->load_mask, li))
					nr += group_run(t, ti, li, o->policy_mask & 7u, threads, o,
							rows + nr);
			place_topo_free(t);
		}
	}
	return nr;
}

static void run_callgrind(struct opts *o, struct row *rows, int nr)
{
	static char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		die("readlink /proc/self/exe", -errno);
	self[len] = '\0';
	o->self = self;
	for (int i = 0; i < nr; i++) {
		if (rows[i].threads != 1)
			continue;
		if (!callgrind_row(o, &rows[i])) {
			fprintf(stderr, "place-bench: valgrind --tool=callgrind failed "
					"(is valgrind installed?)\n");
			return;
		}
	}
}

static void print_header(const struct opts *o)
{
	printf("place-bench %s: seed %" PRIu64 ", %ld calls per row (+%ld warm-up), features 0x%x, groups %d,\n"
	       "waker %s, flags 0x%x, virtual clock +%llu ns per wakeup, clock_gettime pair %.1f ns (subtracted;\n"
	       "measured again before each topology and load: this is the last)\n",
	       place_version_string(), o->seed, o->calls, o->warmup, o->features, o->groups,
	       o->worker_waker ? "a busy CPU's worker" : "PLACE_CPU_NONE", o->wake_flags, VCLOCK_STEP_NS,
	       timer_cost);
	for (int ti = 0; ti < NR_TOPOS; ti++)
		if (selected(o->topo_mask, ti))
			printf("  %-5s %s\n", topo_defs[ti].name, topo_defs[ti].spec);
	fputs(table_legend, stdout);
}

static void print_all(const struct opts *o, const struct row *rows, int nr)
{
	if (o->tsv) {
		print_tsv_header();
		for (int i = 0; i < nr; i++)
			print_tsv_row(&rows[i]);
		return;
	}
	print_header(o);
	printf("\nsingle thread:\n");
	print_table(rows, nr, 1, o->callgrind);
	if (nr > 0 && rows[nr - 1].threads == 2) {
		printf("\n2 threads on one instance (this machine's CPUs), 256-CPU model:\n");
		print_table(rows, nr, 2, false);
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	const char *one = parse_opts(argc, argv, &o);
	struct row rows[NR_TOPOS * NR_LOADS * NR_POLICIES * 2];
	int nr;

	if (one)
		return run_one(one, argv + optind, &o);
	nr = run_rows(&o, rows);
	if (o.callgrind)
		run_callgrind(&o, rows, nr);
	print_all(&o, rows, nr);
	return 0;
}
