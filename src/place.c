/*
 * Lifecycle, configuration and features, worker registration, task records.
 * Nothing here is on the hot path: these calls may allocate.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cookie.h"
#include "idle.h"
#include "internal.h"
#include "numa.h"
#include "widen.h"

#define PLACE_FEAT(name, why) | PLACE_FEAT_##name
_Static_assert((0
#include "place_features.h"
	       ) == PLACE_FEAT_ALL, "place_features.h lists exactly the PLACE_FEAT_* bits");
#undef PLACE_FEAT

#define DEFAULT_SHORT_TASK_NS UINT64_C(500000)   /* the kernel's sysctl_sched_migration_cost */
/* Every run of a task whose average run is this long is timed (idle.c):
 * two clock reads (~20 ns each) are then under 0.1% of it. */
#define TIMED_RUN_NS UINT64_C(50000)
#define DEFAULT_UTIL_PERIOD_NS UINT64_C(4000000) /* a few ms, as the kernel's periodic balance */
#define DEFAULT_MAX_GROUPS 64u                   /* one 512-byte block per node */
#define DEFAULT_NUMA_MOVE_CAP 4u                 /* a few moves in flight per node, not a herd */
#define DEFAULT_NUMA_COOLDOWN_NS UINT64_C(10000000) /* 10 ms: a few of the kernel's balance periods */
#define MAX_GROUPS_LIMIT 65536u

static uint64_t clock_monotonic(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

PLACE_EXTERN void place_config_init(place_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->policy = PLACE_POLICY_SIS_CORE;
	cfg->features = PLACE_FEAT_DEFAULT;
	cfg->short_task_ns = DEFAULT_SHORT_TASK_NS;
	cfg->util_period_ns = DEFAULT_UTIL_PERIOD_NS;
	cfg->max_groups = DEFAULT_MAX_GROUPS;
	cfg->numa_move_cap = DEFAULT_NUMA_MOVE_CAP;
	cfg->numa_cooldown_ns = DEFAULT_NUMA_COOLDOWN_NS;
}

static int check_config(const place_config *cfg)
{
	if (cfg->size != sizeof(*cfg))
		return place__fail(-EINVAL, "place_config.size is %zu, expected %zu (call place_config_init)",
				   cfg->size, sizeof(*cfg));
	if (cfg->policy < PLACE_POLICY_SIS_CORE || cfg->policy > PLACE_POLICY_EXACT)
		return place__fail(-EINVAL, "unknown policy %d", cfg->policy);
	if (cfg->features & ~PLACE_FEAT_ALL)
		return place__fail(-EINVAL, "unknown feature bits 0x%x", cfg->features & ~PLACE_FEAT_ALL);
	if (cfg->runtime & ~(uint64_t)PLACE_RUNTIME_ALL)
		return place__fail(-EINVAL, "unknown runtime bits 0x%llx",
				   (unsigned long long)(cfg->runtime & ~(uint64_t)PLACE_RUNTIME_ALL));
	if (cfg->max_groups > MAX_GROUPS_LIMIT)
		return place__fail(-EINVAL, "max_groups %u is above %u", cfg->max_groups, MAX_GROUPS_LIMIT);
	for (size_t i = 0; i < sizeof(cfg->reserved) / sizeof(cfg->reserved[0]); i++)
		if (cfg->reserved[i])
			return place__fail(-EINVAL, "place_config.reserved[%zu] is not zero", i);
	return 0;
}

static void *alloc_lines(size_t n, size_t size)
{
	size_t bytes = (n * size + PLACE_CACHELINE - 1) / PLACE_CACHELINE * PLACE_CACHELINE;
	void *mem = aligned_alloc(PLACE_CACHELINE, bytes ? bytes : PLACE_CACHELINE);

	if (mem)
		memset(mem, 0, bytes ? bytes : PLACE_CACHELINE);
	return mem;
}

/* Per-CPU map: where each CPU's bit and its SMT siblings sit in its LLC.
 * topo.h groups each LLC's CPUs core by core; check it rather than trust it,
 * since every sibling loop relies on [core_lo, core_lo + smt). */
static int build_map(struct place *p)
{
	const struct place_topo *t = p->topo;

	for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct place_cpu_map *m = &p->map[cpu];
		int core = t->cpu[cpu].core;

		m->os = t->os_of[cpu];
		m->llc = t->cpu[cpu].llc;
		m->pos = t->cpu[cpu].llc_pos;
		m->core = core;
		m->node = t->cpu[cpu].node;
		m->smt = place__core_weight(t, core);
		p->cookie_cores |= m->smt > 1 && place__feat(p, PLACE_FEAT_COOKIES);
		m->core_lo = m->pos;
		for (int i = t->core_start[core]; i < t->core_start[core + 1]; i++)
			if (t->cpu[t->core_cpus[i]].llc_pos < m->core_lo)
				m->core_lo = t->cpu[t->core_cpus[i]].llc_pos;
		m->core_at = t->llc_start[m->llc] + m->core_lo;
		p->cpu[cpu].llc = &p->llc[m->llc];
	}
	for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
		const struct place_cpu_map *m = &p->map[cpu];

		for (int i = t->core_start[m->core]; i < t->core_start[m->core + 1]; i++) {
			int pos = t->cpu[t->core_cpus[i]].llc_pos;

			if (pos < m->core_lo || pos >= m->core_lo + m->smt || t->cpu[t->core_cpus[i]].llc != m->llc)
				return place__fail(-EINVAL, "topology: core %d is not contiguous in LLC %d",
						   m->core, m->llc);
		}
		p->sib_next[cpu] = p->llc_cpus[m->core_at + (m->pos - m->core_lo + 1) % m->smt];
	}
	return 0;
}

/* LLC blocks; every mask gets whole cache lines of its own. The SIS_CORE
 * mask starts full (seed 001: "fixed after SIS scan failures"), EXACT empty
 * (filled as workers register), LINEAR's span is all ones. */
static int build_llcs(struct place *p, uint64_t now)
{
	const struct place_topo *t = p->topo;
	size_t per_mask = 0, off = 0;

	for (int l = 0; l < t->nr_llcs; l++) {
		int w = PLACE_MASK_WORDS(place__llc_weight(t, l));

		per_mask += (size_t)(w + 7) / 8 * 8; /* round up to 64 bytes */
	}
	p->words = alloc_lines(3 * per_mask, sizeof(uint64_t));
	if (!p->words)
		return -ENOMEM;
	for (int l = 0; l < t->nr_llcs; l++) {
		struct place_llc *llc = &p->llc[l];
		uint64_t *span;

		llc->first = t->llc_start[l];
		llc->weight = place__llc_weight(t, l);
		llc->nr_words = PLACE_MASK_WORDS(llc->weight);
		llc->icpus = p->words + off;
		llc->icores = p->words + per_mask + off;
		span = p->words + 2 * per_mask + off;
		llc->span = span;
		off += (size_t)(llc->nr_words + 7) / 8 * 8;
		for (int pos = 0; pos < llc->weight; pos++) {
			span[pos / 64] |= UINT64_C(1) << (pos % 64);
			if (p->policy == PLACE_POLICY_SIS_CORE)
				llc->icpus[pos / 64] |= UINT64_C(1) << (pos % 64);
		}
		for (int pos = 0; pos < llc->weight; pos++)
			if (p->map[place__llc_cpu(p, l, pos)].smt > 1)
				llc->smt = true;
		llc->has_idle_cores = !llc->smt; /* see internal.h */
		llc->nr_idle_scan = (uint32_t)llc->weight;
		llc->util_stamp = now;
	}
	return 0;
}

/* A new instance's id for task records: random, so that no other instance
 * (one created later at the same address included) shares it; even and not
 * 0 (0 is a fresh record's owner). The
 * clock and the address stand in when getrandom() fails. */
static uint64_t instance_id(const struct place *p)
{
	uint64_t id;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id))
		id = (clock_monotonic(NULL) ^ (uint64_t)(uintptr_t)p) * UINT64_C(0x9e3779b97f4a7c15);
	return id | 2;
}

PLACE_EXTERN int place_create(place **out, const place_topo *topo, const place_config *cfg)
{
	place_config defaults;
	struct place *p;
	int err;

	place__clear_error();
	if (!out || !topo)
		return place__fail(-EINVAL, "place_create: NULL %s", out ? "topo" : "out");
	if (!cfg) {
		place_config_init(&defaults);
		cfg = &defaults;
	}
	if ((err = check_config(cfg)))
		return err;
	p = calloc(1, sizeof(*p));
	if (!p)
		return place__fail(-ENOMEM, "place_create: out of memory");
	p->policy = cfg->policy;
	p->feat = cfg->features;
	p->id = instance_id(p);
	p->scan_bounded = p->policy != PLACE_POLICY_EXACT && place__feat(p, PLACE_FEAT_SIS_UTIL);
	p->clock = cfg->clock ? cfg->clock : clock_monotonic;
	p->clock_arg = cfg->clock_arg;
	p->short_task_ns = cfg->short_task_ns;
	p->widen_short_ns = cfg->runtime & PLACE_RUNTIME_THIEVES ? cfg->short_task_ns : 0;
	p->widen_budget = cfg->runtime & PLACE_RUNTIME_THIEVES ? PLACE_WIDEN_BUDGET : INT_MAX;
	p->hub_queue = place__feat(p, PLACE_FEAT_HUB_QUEUE) && (cfg->runtime & PLACE_RUNTIME_THIEVES);
	p->busy_stays = place__feat(p, PLACE_FEAT_BUSY_STAYS) && (cfg->runtime & PLACE_RUNTIME_THIEVES);
	p->util_period_ns = cfg->util_period_ns;
	/* and every run near the short-task threshold: its decision is exact */
	p->timed_run_ns = cfg->short_task_ns / 2 < TIMED_RUN_NS ? cfg->short_task_ns / 2 : TIMED_RUN_NS;
	err = -ENOMEM;
	if (!(p->topo = place__topo_dup(topo)))
		goto fail;
	p->cur = p->topo; /* the universe is the first current topology */
	pthread_mutex_init(&p->ctl, NULL);
	p->cpu_limit = p->topo->cpu_limit;
	p->dense_of = p->topo->dense_of;
	p->llc_cpus = p->topo->llc_cpus;
	p->cpu = alloc_lines((size_t)p->topo->nr_cpus, sizeof(*p->cpu));
	p->map = calloc((size_t)p->topo->nr_cpus, sizeof(*p->map));
	p->seat = calloc((size_t)p->topo->nr_cpus, sizeof(*p->seat));
	p->sib_next = calloc((size_t)p->topo->nr_cpus, sizeof(*p->sib_next));
	p->core = alloc_lines((size_t)p->topo->nr_cores, sizeof(*p->core));
	p->llc = alloc_lines((size_t)p->topo->nr_llcs, sizeof(*p->llc));
	p->slot = alloc_lines((size_t)p->topo->nr_cpus, sizeof(*p->slot));
	p->ext = alloc_lines((size_t)p->topo->nr_llcs, sizeof(*p->ext));
	p->util_seen = calloc((size_t)p->topo->nr_cpus, sizeof(*p->util_seen));
	if (!p->cpu || !p->map || !p->seat || !p->sib_next || !p->core || !p->llc || !p->slot || !p->ext ||
	    !p->util_seen)
		goto fail;
	if ((err = build_map(p)) || (err = build_llcs(p, place__now(p))))
		goto fail;
	err = place__numa_create(p, cfg->max_groups ? cfg->max_groups : DEFAULT_MAX_GROUPS,
				 cfg->numa_move_cap ? cfg->numa_move_cap : DEFAULT_NUMA_MOVE_CAP,
				 cfg->numa_cooldown_ns);
	if (err || (err = place__widen_create(p)))
		goto fail;
	*out = p;
	return 0;
fail:
	place_destroy(p);
	return err == -ENOMEM ? place__fail(err, "place_create: out of memory") : err;
}

static void drop_bound(struct place_bound *b)
{
	while (b) {
		struct place_bound *next = b->next;

		CPU_FREE(b->mask);
		free(b);
		b = next;
	}
}

PLACE_EXTERN void place_destroy(place *p)
{
	if (!p)
		return;
	place__numa_destroy(p);
	place__widen_destroy(p);
	free(p->words);
	free(p->util_seen);
	free(p->ext);
	free(p->slot);
	free(p->llc);
	free(p->core);
	free(p->sib_next);
	free(p->map);
	for (int d = 0; p->seat && d < p->topo->nr_cpus; d++)
		drop_bound(p->seat[d].bound);
	free(p->seat);
	free(p->cpu);
	if (p->cur != p->topo)
		place_topo_free(p->cur);
	if (p->topo) /* else ctl was never initialised */
		pthread_mutex_destroy(&p->ctl);
	place_topo_free(p->topo);
	free(p);
}

PLACE_EXTERN const place_topo *place_get_topo(const place *p)
{
	return p ? p->topo : NULL;
}

/* ---- workers ----------------------------------------------------------- */

/* The calling thread's mask, in a set as large as the kernel needs
 * (EINVAL: too small for its CPU numbers); NULL with *err. */
static cpu_set_t *caller_mask(size_t *size, int *err)
{
	for (size_t n = 1024; n <= (size_t)PLACE_CPU_OS_MAX + 1; n *= 2) {
		cpu_set_t *set = CPU_ALLOC(n);

		if (!set)
			break;
		*size = CPU_ALLOC_SIZE(n);
		if (!sched_getaffinity(0, *size, set))
			return set;
		CPU_FREE(set);
		if (errno != EINVAL) {
			*err = place__fail(-errno, "sched_getaffinity failed");
			return NULL;
		}
	}
	*err = place__fail(-ENOMEM, "place_worker_register: no memory for the thread's mask");
	return NULL;
}

/* Pin the calling thread to cpu; the mask it had is returned (to give
 * back at its unregister), NULL with *err when anything failed (nothing
 * changed then). */
static struct place_bound *bind_caller(int cpu, int *err)
{
	struct place_bound *b = calloc(1, sizeof(*b));
	cpu_set_t *set = CPU_ALLOC((size_t)cpu + 1);
	size_t size = CPU_ALLOC_SIZE((size_t)cpu + 1);

	if (!b || !set || !(b->mask = caller_mask(&b->size, err))) {
		if (!b || !set)
			*err = place__fail(-ENOMEM, "place_worker_register: out of memory");
		CPU_FREE(set);
		free(b);
		return NULL;
	}
	CPU_ZERO_S(size, set);
	CPU_SET_S((size_t)cpu, size, set);
	if (sched_setaffinity(0, size, set)) {
		int e = errno;

		*err = place__fail(-e, "place_worker_register: sched_setaffinity(cpu %d) failed (%s): "
				   "under a modelled topology (PLACE_TOPOLOGY, a synthetic: or xml: "
				   "source) the CPU may not exist on this machine; register without "
				   "PLACE_WORKER_BIND then", cpu, strerror(e));
		drop_bound(b);
		b = NULL;
	}
	CPU_FREE(set);
	if (b)
		b->tid = gettid();
	return b;
}

/* The calling thread unregisters from seat: the mask its BIND replaced
 * there comes back (best effort: a mask whose CPUs all left the cpuset is
 * refused by the kernel and the thread stays pinned). */
static void unbind_caller(struct place_seat *seat)
{
	pid_t tid = gettid();

	for (struct place_bound **b = &seat->bound; *b; b = &(*b)->next) {
		if ((*b)->tid != tid)
			continue;
		struct place_bound *mine = *b;

		*b = mine->next;
		mine->next = NULL;
		(void)sched_setaffinity(0, mine->size, mine->mask);
		drop_bound(mine);
		return;
	}
}

/* Under p->ctl: OFFLINE and REGISTERED cannot change meanwhile except by
 * the worker's own IDLE edges and wakers' claims (other bits). */
static int register_locked(struct place *p, int d, int cpu, unsigned flags)
{
	struct place_cpu *c = &p->cpu[d];
	struct place_bound *b = NULL;
	uint64_t before;
	int err = 0;

	if (place__state(p, d) & PLACE_ST_OFFLINE)
		return place__fail(-ENODEV, "place_worker_register: cpu %d is not in the current topology",
				   cpu);
	if (p->seat[d].workers && !(flags & PLACE_WORKER_SHARED))
		return place__fail(-EEXIST, "place_worker_register: cpu %d already has a worker "
				   "(PLACE_WORKER_SHARED adds another)", cpu);
	if ((flags & PLACE_WORKER_BIND) && !(b = bind_caller(cpu, &err)))
		return err;
	if (b) {
		b->next = p->seat[d].bound;
		p->seat[d].bound = b;
	}
	if (p->seat[d].workers++) /* one more thread for a served CPU: nothing else changes */
		return 0;
	/* A fresh worker: idle, running nothing. Claims and queued tasks from
	 * before survive (their tasks may still arrive). */
	place_store_32(&c->running, 0);
	place_store_ptr((void **)&c->curr, NULL);
	place_store_64(&c->curr_avg_ns, 0);
	place_store_32(&c->scan_sibling, 0);
	/* RMW: from here claims may succeed (place__st_claim needs REGISTERED) */
	before = place__st_change(&c->state, PLACE_ST_REGISTERED | PLACE_ST_IDLE, 0);
	place_add_64(&p->llc[p->map[d].llc].nr_registered, 1);
	place_store_64(&p->nr_workers, p->nr_workers + 1);
	if (place__st_available(before | PLACE_ST_REGISTERED | PLACE_ST_IDLE))
		place__idle_publish(p, d);
	return 0;
}

PLACE_EXTERN int place_worker_register(place *p, int cpu, unsigned flags)
{
	int d, err;

	place__clear_error();
	if (!p || (flags & ~(PLACE_WORKER_BIND | PLACE_WORKER_SHARED)))
		return place__fail(-EINVAL, "place_worker_register: %s", p ? "unknown flags" : "NULL instance");
	if ((d = place__dense(p, cpu)) < 0)
		return -ENODEV;
	pthread_mutex_lock(&p->ctl);
	err = register_locked(p, d, cpu, flags);
	pthread_mutex_unlock(&p->ctl);
	return err;
}

static int unregister_locked(struct place *p, int d)
{
	uint64_t before;

	if (!(place__state(p, d) & PLACE_ST_REGISTERED) || !p->seat[d].workers)
		return -ENOENT; /* another unregister got there first */
	unbind_caller(&p->seat[d]);
	if (--p->seat[d].workers) /* other threads still serve it */
		return 0;
	drop_bound(p->seat[d].bound); /* threads that never unregistered themselves */
	p->seat[d].bound = NULL;
	place__cookie_unregister(p, d); /* a task still running leaves its core */
	if (place_load_32(&p->cpu[d].running))
		place__numa_end(p, d); /* and its node's running count */
	/* RMW: no claim succeeds after this (place__st_claim needs REGISTERED) */
	before = place__st_change(&p->cpu[d].state, 0, PLACE_ST_REGISTERED | PLACE_ST_IDLE);
	place_store_32(&p->cpu[d].running, 0);
	place_store_ptr((void **)&p->cpu[d].curr, NULL);
	place_store_64(&p->nr_workers, p->nr_workers - 1);
	if (!(before & PLACE_ST_OFFLINE)) /* an offline CPU no longer counted */
		place_add_64(&p->llc[p->map[d].llc].nr_registered, (uint64_t)-1);
	place__idle_withdraw(p, d);
	return 0;
}

PLACE_EXTERN int place_worker_unregister(place *p, int cpu)
{
	int d = place__worker_cpu(p, cpu);

	if (d < 0)
		return d;
	pthread_mutex_lock(&p->ctl);
	d = unregister_locked(p, d);
	pthread_mutex_unlock(&p->ctl);
	return d;
}

/* ---- tasks ------------------------------------------------------------- */

_Static_assert(sizeof(place_task) == sizeof(void *) + sizeof(void *) + sizeof(size_t) + 12 * 8,
	       "place_task layout is ABI");

/* An initialiser: it never reads t (fresh memory from malloc is the
 * common case, and anything read there would be garbage, or a freed task's
 * stale record at the same address). What a record still holds must be
 * given up with place_task_forget() first: init has no instance to give it
 * up on. */
PLACE_EXTERN void place_task_init(place_task *t, uint64_t cookie, uint32_t group)
{
	struct place_task_rec *r;

	if (!t)
		return;
	r = place__rec(t);
	t->cpus = NULL;
	t->cpus_size = 0;
	memset(t->priv, 0, sizeof(t->priv));
	r->magic = PLACE_TASK_MAGIC;
	r->prev_cpu = -1;
	r->recent_used_cpu = -1;
	r->queued_cpu = -1;
	r->cookie = cookie;
	r->group = group;
}

/*
 * A record whose owner is not p's id, about to be used with p (a wakeup,
 * run_begin, place_task_claimed, place_task_forget). -EXDEV when it holds
 * something on another instance (a queue slot or claim, a pending NUMA
 * move): a call on p must not give up, nor end, nor count what only means
 * something there (another instance's claim generations and node numbers);
 * nothing changes then. Else 0. Only compares ids: the owner may have been
 * destroyed. What the record holds on p stays.
 */
int place__task_check(const struct place *p, const struct place_task_rec *r)
{
	if (!place__rec_holds(r) || r->owner == p->id)
		return 0;
	return place__fail(-EXDEV, "the task record holds a %s of another instance "
			   "(place_task_forget it there first)",
			   r->queued_cpu >= 0 ? "claim or queue slot" : "NUMA move");
}

PLACE_EXTERN int place_task_set_cpus(place_task *t, const cpu_set_t *set, size_t size)
{
	if (!place__task_rec(t) || (set && !size))
		return -EINVAL;
	t->cpus = set;
	t->cpus_size = set ? size : 0;
	return 0;
}

PLACE_EXTERN size_t place_task_size(void)
{
	return sizeof(place_task);
}
