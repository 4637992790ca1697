/*
 * ult: a small user-level-thread runtime on libplace (see ult.h).
 *
 * The rule that keeps libplace's record right: a ULT is woken (by
 * place_wakeup, through wake()) only after its run has ended. A ULT that
 * blocks cannot publish itself as a future's waiter before it stops: the
 * setter could wake it while it still runs, and another worker resume it
 * from a half-saved context. So a ULT that leaves a worker writes what it
 * leaves for (w->after: yield, block on f, exit) and switches; whoever runs
 * next on that worker (the worker loop, or the next ULT after a direct
 * switch) first ends the run edge if the switch did not, then does it
 * (after_switch()). That also frees an exited ULT's stack only once nothing
 * runs on it.
 *
 * Locks: each worker's pool and parking under its mutex; a future under its
 * own; the live count and LIFO's parked stack under rt->lock. Nothing is
 * held across a context switch.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "ult.h"

/* ThreadSanitizer follows swapcontext only when told (its fiber API). */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define FIBER_NEW() __tsan_create_fiber(0)
#define FIBER_FREE(f) __tsan_destroy_fiber(f)
#define FIBER_SELF() __tsan_get_current_fiber()
#define FIBER_TO(f) __tsan_switch_to_fiber((f), 0)
#else
#define FIBER_NEW() NULL
#define FIBER_FREE(f) ((void)(f))
#define FIBER_SELF() NULL
#define FIBER_TO(f) ((void)(f))
#endif
/* valgrind takes a switch between two heap stacks for a huge frame unless
 * the stacks are registered. */
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define STACK_ADD(lo, size) VALGRIND_STACK_REGISTER((lo), (char *)(lo) + (size))
#define STACK_DEL(id) VALGRIND_STACK_DEREGISTER(id)
#else
#define STACK_ADD(lo, size) 0u
#define STACK_DEL(id) ((void)(id))
#endif

enum { LEFT_YIELD, LEFT_BLOCK, LEFT_EXIT };

struct ult {
	place_task task;        /* libplace's record */
	ucontext_t ctx;
	ult_rt *rt;
	struct worker *w;       /* the worker running it (set by who resumes it) */
	ult_fn fn;
	void *arg;
	void *stack;
	void *fiber;            /* TSan only */
	unsigned vg_stack;      /* valgrind only */
	ult *next;              /* pool link */
	ult_future done;        /* set when fn returned (join) */
	/* A hand-off in its worker's runnext that libplace has not seen yet
	 * (wake): its PLACE_WAKE_* flags, told at the switch (leave:
	 * place_run_handoff) or by a late place_wakeup; 0 none. That worker's
	 * thread only, as runnext. */
	unsigned handoff;
};

struct worker {
	ult_rt *rt;
	int idx, cpu;
	pthread_t thread;
	pthread_mutex_t lock;   /* head, tail, parked, kick */
	pthread_cond_t cond;
	ult *head, *tail;       /* the pool, FIFO */
	bool parked, kick;      /* kick: woken by place_idle_near, release the claim */
	/* The worker's thread only (its ULTs run on it): */
	ult *runnext;           /* a hand-off: runs next, by a direct switch */
	ucontext_t sched;       /* the worker loop's context */
	void *sched_fiber;
	struct after {
		ult *u;         /* the ULT that left, NULL when none */
		int what;       /* LEFT_* */
		ult_future *f;  /* LEFT_BLOCK */
		bool ended;     /* its run edge is done (place_run_switch) */
	} after;
	int *victims, nvictims; /* worker indexes, nearest first */
	uint64_t runs, switches, steals, parks; /* relaxed, read by ult_stats_read */
};

struct ult_rt {
	place_topo *topo;
	place *place;           /* NULL in LIFO mode */
	size_t stack_size;
	int n;
	struct worker *w;
	int *widx;              /* [cpu_limit] OS CPU -> worker index */
	pthread_mutex_t lock;   /* live, lifo, nlifo */
	pthread_cond_t cond;    /* live reached 0 */
	long live;              /* ULTs not yet returned */
	int *lifo, nlifo;       /* LIFO: parked workers, the last parked on top */
	bool stop;              /* __atomic */
};

static void count(uint64_t *c)
{
	__atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

static void check(const char *what, int rc)
{
	if (rc < 0) {
		fprintf(stderr, "ult: %s: %s\n", what, place_strerror(rc));
		abort();
	}
}

static unsigned how_of(int what)
{
	return what == LEFT_YIELD ? PLACE_RUN_PREEMPT : what == LEFT_EXIT ? PLACE_RUN_EXIT : PLACE_RUN_SLEEP;
}

static void switch_to(ucontext_t *from, ucontext_t *to, void *fiber)
{
	FIBER_TO(fiber);
	swapcontext(from, to);
}

/* ---- pools, parking, waking --------------------------------------------- */

/* Returns whether the pool held work already. */
static bool push(struct worker *w, ult *u)
{
	bool behind;

	pthread_mutex_lock(&w->lock);
	behind = w->head;
	u->next = NULL;
	if (w->tail)
		w->tail->next = u;
	else
		w->head = u;
	w->tail = u;
	if (w->parked)
		pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return behind;
}

static ult *pop(struct worker *w)
{
	ult *u;

	pthread_mutex_lock(&w->lock);
	u = w->head;
	if (u && !(w->head = u->next))
		w->tail = NULL;
	pthread_mutex_unlock(&w->lock);
	return u;
}

/* LIFO: the most recently parked worker, or -1. */
static int lifo_pop(ult_rt *rt)
{
	int i;

	pthread_mutex_lock(&rt->lock);
	i = rt->nlifo ? rt->lifo[--rt->nlifo] : -1;
	pthread_mutex_unlock(&rt->lock);
	return i;
}

static void lifo_park(ult_rt *rt, int idx, bool in)
{
	pthread_mutex_lock(&rt->lock);
	for (int k = 0; k < rt->nlifo; k++)
		if (rt->lifo[k] == idx)
			rt->lifo[k] = rt->lifo[--rt->nlifo];
	if (in)
		rt->lifo[rt->nlifo++] = idx;
	pthread_mutex_unlock(&rt->lock);
}

/* A second ULT waits in w's pool: wake a parked thief near w,
 * its CPU claimed for it (it gives the claim back when it wakes). */
static void call_thief(ult_rt *rt, struct worker *w)
{
	int cpu = place_idle_near(rt->place, w->cpu, 0);
	struct worker *t;

	if (cpu < 0)
		return;
	t = &rt->w[rt->widx[cpu]];
	pthread_mutex_lock(&t->lock);
	t->kick = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* u, a hand-off in w's runnext that libplace has not seen, left the slot
 * without place_run_handoff (refused, evicted, or taken by the loop): wake
 * it now as wake() would have; back into the free slot (slot) when the
 * answer is w's CPU, else into the pool the answer names. */
static void late_wake(ult_rt *rt, struct worker *w, ult *u, bool slot)
{
	int cpu = place_wakeup(rt->place, &u->task, w->cpu, u->handoff);
	struct worker *to;

	check("place_wakeup", cpu);
	u->handoff = 0;
	to = &rt->w[rt->widx[cpu]];
	if (slot && to == w && !w->runnext)
		w->runnext = u;
	else if (push(to, u))
		call_thief(rt, to);
}

/* u (its run ended, or never begun) is runnable. wk: the waking worker, on
 * its thread, or NULL from a thread that is no worker. A plain hand-off
 * (PLACE_WAKE_CURRENT, with SYNC or alone) from a worker whose runnext is
 * free goes there without place_wakeup: leave() tells libplace with
 * place_run_handoff, its wakeup and the switch in one call. */
static void wake(ult_rt *rt, struct worker *wk, ult *u, unsigned flags)
{
	struct worker *to;
	int i;

	if (rt->place && wk && (flags & ~PLACE_WAKE_SYNC) == PLACE_WAKE_CURRENT && !wk->runnext) {
		u->handoff = flags;
		wk->runnext = u;
		return;
	}
	if (rt->place) {
		int cpu = place_wakeup(rt->place, &u->task, wk ? wk->cpu : PLACE_CPU_NONE, flags);

		check("place_wakeup", cpu);
		to = &rt->w[rt->widx[cpu]];
	} else if (!(flags & PLACE_WAKE_CURRENT) && (i = lifo_pop(rt)) >= 0) {
		to = &rt->w[i];
	} else {
		to = wk ? wk : &rt->w[0];
	}
	if (to == wk && (flags & PLACE_WAKE_CURRENT)) { /* a hand-off: next here */
		ult *old = wk->runnext;

		wk->runnext = u;
		if (old && old->handoff)
			late_wake(rt, wk, old, false);
		else if (old)
			push(wk, old);
		return;
	}
	if (push(to, u) && rt->place)
		call_thief(rt, to); /* a second ULT waits there */
}

/* ---- leaving and resuming ---------------------------------------------- */

static void complete(ult_rt *rt, struct worker *w, ult *u);

/* On w's thread, right after a switch: what the ULT that left asked for. */
static void after_switch(struct worker *w)
{
	struct after a = w->after;
	ult_rt *rt = w->rt;

	if (!a.u)
		return;
	w->after.u = NULL;
	if (!a.ended && rt->place)
		check("place_run_end", place_run_end(rt->place, w->cpu, &a.u->task, how_of(a.what)));
	if (a.what == LEFT_YIELD) {
		push(w, a.u); /* PREEMPT counted it as queued on this CPU */
	} else if (a.what == LEFT_BLOCK) {
		bool ready;

		pthread_mutex_lock(&a.f->lock);
		ready = a.f->done;
		if (!ready)
			a.f->waiter = a.u; /* its run ended: now it may be woken */
		pthread_mutex_unlock(&a.f->lock);
		if (ready)
			wake(rt, w, a.u, 0); /* set in the meantime */
	} else {
		complete(rt, w, a.u);
	}
}

/* self leaves its worker (what: LEFT_*): straight to the hand-off in
 * runnext with one place_run_switch, else back to the worker loop. */
static void leave(ult *self, int what, ult_future *f)
{
	struct worker *w = self->w;
	ult *next = w->runnext;
	bool handed = false;

	w->after = (struct after){ .u = self, .what = what, .f = f };
	if (next && next->handoff) { /* libplace has not seen this hand-off */
		w->runnext = NULL;
		handed = !place_run_handoff(w->rt->place, w->cpu, &self->task, how_of(what), &next->task);
		if (handed)
			next->handoff = 0;
		else
			late_wake(w->rt, w, next, true); /* refused: woken as before */
		next = handed ? next : w->runnext;
	}
	if (next) {
		w->runnext = NULL;
		if (!handed && w->rt->place)
			check("place_run_switch",
			      place_run_switch(w->rt->place, w->cpu, &self->task, how_of(what), &next->task));
		w->after.ended = true;
		next->w = w;
		count(&w->runs);
		count(&w->switches);
		switch_to(&self->ctx, &next->ctx, next->fiber);
	} else {
		switch_to(&self->ctx, &w->sched, w->sched_fiber);
	}
	after_switch(self->w); /* resumed, perhaps on another worker */
}

static void trampoline(unsigned lo, unsigned hi)
{
	ult *self = (ult *)(((uintptr_t)hi << 32) | lo);

	after_switch(self->w);
	self->fn(self, self->arg);
	leave(self, LEFT_EXIT, NULL); /* never returns */
}

/* ---- futures ------------------------------------------------------------ */

void ult_future_init(ult_future *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
}

void ult_future_destroy(ult_future *f)
{
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
}

/* Set f; wake its waiter. w: the setting worker (its thread), or NULL. */
static void future_set(struct worker *w, ult_future *f, void *value, unsigned flags)
{
	ult *waiter;

	pthread_mutex_lock(&f->lock);
	f->value = value;
	f->done = 1;
	waiter = f->waiter;
	pthread_cond_broadcast(&f->cond); /* a waiter that is no ULT */
	pthread_mutex_unlock(&f->lock);
	if (waiter)
		wake(waiter->rt, w, waiter, flags);
}

void ult_future_set(ult *self, ult_future *f, void *value, unsigned flags)
{
	future_set(self ? self->w : NULL, f, value, self && (flags & ULT_HANDOFF) ? PLACE_WAKE_CURRENT : 0);
}

void *ult_future_get(ult *self, ult_future *f)
{
	void *v;

	pthread_mutex_lock(&f->lock);
	while (!self && !f->done)
		pthread_cond_wait(&f->cond, &f->lock);
	if (f->done) {
		v = f->value;
		pthread_mutex_unlock(&f->lock);
		return v;
	}
	pthread_mutex_unlock(&f->lock);
	leave(self, LEFT_BLOCK, f); /* after_switch publishes self as the waiter */
	pthread_mutex_lock(&f->lock);
	v = f->value;
	pthread_mutex_unlock(&f->lock);
	return v;
}

/* ---- ULTs --------------------------------------------------------------- */

/* u's first switch enters trampoline(u) on its own stack. Apart from
 * ult_spawn: getcontext returns twice, which would clobber its locals. */
static void make_context(ult *u)
{
	getcontext(&u->ctx);
	u->ctx.uc_stack.ss_sp = u->stack;
	u->ctx.uc_stack.ss_size = u->rt->stack_size;
	u->ctx.uc_link = NULL;
	makecontext(&u->ctx, (void (*)(void))trampoline, 2, (unsigned)(uintptr_t)u,
		    (unsigned)((uintptr_t)u >> 32));
}

ult *ult_spawn(ult *self, ult_rt *rt, ult_fn fn, void *arg)
{
	ult *u = calloc(1, sizeof(*u));

	if (!u || !(u->stack = malloc(rt->stack_size))) {
		free(u);
		return NULL;
	}
	u->rt = rt;
	u->fn = fn;
	u->arg = arg;
	u->fiber = FIBER_NEW();
	u->vg_stack = STACK_ADD(u->stack, rt->stack_size);
	place_task_init(&u->task, 0, 0);
	ult_future_init(&u->done);
	make_context(u);
	pthread_mutex_lock(&rt->lock);
	rt->live++;
	pthread_mutex_unlock(&rt->lock);
	if (self && rt->place) { /* work-first: the parent runs on, the child waits here */
		if (push(self->w, u))
			call_thief(rt, self->w);
	} else {
		wake(rt, self ? self->w : NULL, u, 0);
	}
	return u;
}

/* u returned (on w's thread, off u's stack): its joiner may go on. */
static void complete(ult_rt *rt, struct worker *w, ult *u)
{
	future_set(w, &u->done, NULL, 0);
	pthread_mutex_lock(&rt->lock);
	if (--rt->live == 0)
		pthread_cond_broadcast(&rt->cond);
	pthread_mutex_unlock(&rt->lock);
}

void ult_join(ult *self, ult *u)
{
	ult_future_get(self, &u->done);
	/* the setter may still hold the lock it woke us under */
	pthread_mutex_lock(&u->done.lock);
	pthread_mutex_unlock(&u->done.lock);
	ult_future_destroy(&u->done);
	FIBER_FREE(u->fiber);
	STACK_DEL(u->vg_stack);
	free(u->stack);
	free(u);
}

void ult_yield(ult *self)
{
	leave(self, LEFT_YIELD, NULL);
}

int ult_cpu(const ult *self)
{
	return self->w->cpu;
}

/* ---- workers ------------------------------------------------------------ */

/* runnext, the own pool, then the victims' pools (nearest first). */
static ult *take(struct worker *w)
{
	ult *u = w->runnext;

	if (u && u->handoff) { /* no run to hand over from: woken now */
		w->runnext = NULL;
		late_wake(w->rt, w, u, true);
		u = w->runnext;
	}
	if (u) {
		w->runnext = NULL;
		return u;
	}
	if ((u = pop(w)))
		return u;
	for (int k = 0; k < w->nvictims; k++)
		if ((u = pop(&w->rt->w[w->victims[k]]))) {
			count(&w->steals);
			return u;
		}
	return NULL;
}

/* Nothing to run: park until work comes, a thief's kick or the stop.
 * Returns false at the stop. */
static bool park(struct worker *w)
{
	ult_rt *rt = w->rt;
	bool kicked, stop;

	if (rt->place)
		check("place_idle_enter", place_idle_enter(rt->place, w->cpu));
	else
		lifo_park(rt, w->idx, true);
	pthread_mutex_lock(&w->lock);
	while (!w->head && !w->kick && !__atomic_load_n(&rt->stop, __ATOMIC_ACQUIRE)) {
		w->parked = true;
		pthread_cond_wait(&w->cond, &w->lock);
		w->parked = false;
	}
	kicked = w->kick;
	w->kick = false;
	stop = !w->head && __atomic_load_n(&rt->stop, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&w->lock);
	if (!rt->place)
		lifo_park(rt, w->idx, false);
	if (kicked) /* place_idle_near claimed this CPU for us */
		place_claim_release(rt->place, w->cpu);
	count(&w->parks);
	return !stop;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	ult_rt *rt = w->rt;

	w->sched_fiber = FIBER_SELF();
	for (;;) {
		ult *u = take(w);

		if (!u) {
			if (!park(w))
				break;
			continue;
		}
		if (rt->place)
			check("place_run_begin", place_run_begin(rt->place, w->cpu, &u->task));
		u->w = w;
		count(&w->runs);
		switch_to(&w->sched, &u->ctx, u->fiber);
		after_switch(w);
	}
	return NULL;
}

static int victims(ult_rt *rt, struct worker *w)
{
	int *cpus = calloc((size_t)rt->n, sizeof(int)), n = 0;

	w->victims = calloc((size_t)rt->n, sizeof(int));
	if (!cpus || !w->victims) {
		free(cpus);
		return -ENOMEM;
	}
	if (rt->place) {
		n = place_steal_order(rt->place, w->cpu, cpus, rt->n);
		for (int k = 0; k < n && k < rt->n; k++)
			w->victims[w->nvictims++] = rt->widx[cpus[k]];
	} else {
		for (int k = 1; k < rt->n; k++)
			w->victims[w->nvictims++] = (w->idx + k) % rt->n;
	}
	free(cpus);
	return n < 0 ? n : 0;
}

static int start(ult_rt *rt, const struct ult_config *cfg)
{
	int err = 0;

	for (int i = 0; i < rt->n && !err; i++) {
		struct worker *w = &rt->w[i];

		w->rt = rt;
		w->idx = i;
		w->cpu = place_topo_cpu(rt->topo, i);
		rt->widx[w->cpu] = i;
		pthread_mutex_init(&w->lock, NULL);
		pthread_cond_init(&w->cond, NULL);
		if (rt->place)
			err = place_worker_register(rt->place, w->cpu, 0);
	}
	for (int i = 0; i < rt->n && !err; i++)
		err = victims(rt, &rt->w[i]);
	for (int i = 0; i < rt->n && !err; i++) {
		pthread_attr_t attr;
		cpu_set_t set;

		pthread_attr_init(&attr);
		CPU_ZERO(&set);
		CPU_SET(rt->w[i].cpu, &set);
		if (!cfg->no_pin)
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		err = -pthread_create(&rt->w[i].thread, &attr, worker_main, &rt->w[i]);
		pthread_attr_destroy(&attr);
	}
	return err;
}

/* Idle workers steal from other pools (take()), so libplace may queue
 * a wakeup behind a busy worker and bound its search beyond the LLC. */
static int create_place(ult_rt *rt)
{
	place_config cfg;

	place_config_init(&cfg);
	cfg.runtime = PLACE_RUNTIME_THIEVES;
	return place_create(&rt->place, rt->topo, &cfg);
}

int ult_rt_create(ult_rt **out, const struct ult_config *cfg)
{
	static const struct ult_config defaults;
	ult_rt *rt = calloc(1, sizeof(*rt));
	int err;

	cfg = cfg ? cfg : &defaults;
	if (!rt)
		return -ENOMEM;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_cond_init(&rt->cond, NULL);
	rt->stack_size = cfg->stack_size ? cfg->stack_size : 64 * 1024;
	err = place_topo_load(&rt->topo, cfg->topology);
	if (err) {
		free(rt);
		return err;
	}
	rt->n = place_topo_nr_cpus(rt->topo);
	if (cfg->max_workers > 0 && cfg->max_workers < rt->n)
		rt->n = cfg->max_workers;
	rt->w = calloc((size_t)rt->n, sizeof(*rt->w));
	rt->lifo = calloc((size_t)rt->n, sizeof(int));
	rt->widx = calloc((size_t)place_topo_cpu_limit(rt->topo), sizeof(int));
	err = !rt->w || !rt->lifo || !rt->widx ? -ENOMEM : 0;
	if (!err && cfg->mode == ULT_MODE_PLACE)
		err = create_place(rt);
	if (!err)
		err = start(rt, cfg);
	if (err) {
		fprintf(stderr, "ult_rt_create: %s\n", place_strerror(err));
		abort(); /* an example: threads may run, no unwinding */
	}
	*out = rt;
	return 0;
}

void ult_rt_destroy(ult_rt *rt)
{
	pthread_mutex_lock(&rt->lock);
	while (rt->live)
		pthread_cond_wait(&rt->cond, &rt->lock);
	pthread_mutex_unlock(&rt->lock);
	for (int i = 0; i < rt->n; i++) {
		struct worker *w = &rt->w[i];

		pthread_mutex_lock(&w->lock);
		__atomic_store_n(&rt->stop, true, __ATOMIC_RELEASE);
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	for (int i = 0; i < rt->n; i++) /* all: the others may still look at a pool */
		pthread_join(rt->w[i].thread, NULL);
	for (int i = 0; i < rt->n; i++) {
		if (rt->place)
			place_worker_unregister(rt->place, rt->w[i].cpu);
		pthread_mutex_destroy(&rt->w[i].lock);
		pthread_cond_destroy(&rt->w[i].cond);
		free(rt->w[i].victims);
	}
	place_destroy(rt->place);
	place_topo_free(rt->topo);
	pthread_mutex_destroy(&rt->lock);
	pthread_cond_destroy(&rt->cond);
	free(rt->w);
	free(rt->lifo);
	free(rt->widx);
	free(rt);
}

void ult_stats_read(ult_rt *rt, struct ult_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < rt->n; i++) {
		out->runs += __atomic_load_n(&rt->w[i].runs, __ATOMIC_RELAXED);
		out->switches += __atomic_load_n(&rt->w[i].switches, __ATOMIC_RELAXED);
		out->steals += __atomic_load_n(&rt->w[i].steals, __ATOMIC_RELAXED);
		out->parks += __atomic_load_n(&rt->w[i].parks, __ATOMIC_RELAXED);
	}
}

place *ult_place(ult_rt *rt)
{
	return rt->place;
}
