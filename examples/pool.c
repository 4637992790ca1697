/*
 * pool: a pinned thread pool that asks libplace where each woken task runs.
 * See pool.h for the contract.
 *
 * Concurrency, field by field:
 * - task.state: IDLE -> QUEUED by the first waker (CAS; only that waker
 *   queues it, so one wakeup edge at a time), QUEUED -> RUNNING by the worker
 *   that dequeued it, RUNNING -> NOTIFIED by a waker (CAS), RUNNING/NOTIFIED
 *   -> IDLE/QUEUED/DONE by the running worker. All __ATOMIC_SEQ_CST: a state
 *   word is touched a few times per run, clarity beats the cycles.
 * - worker.ring: ck_ring MPMC. Producers: any waker; consumers: the owner and
 *   thieves. A task pointer is in at most one ring, runnext slot or the
 *   overflow list.
 * - worker.next: the runnext slot, read and written by its worker's thread
 *   only (a sync wakeup from that worker to itself), never stolen. A run
 *   ends with place_run_switch to the next task taken (end_or_switch): one
 *   call instead of run_end + run_begin, and the CPU never looks idle. A
 *   hand-off (PLACE_WAKE_CURRENT) goes there before any place_wakeup, its
 *   flags in task.flags (owner only, as the slot), and the run's end hands
 *   over with place_run_handoff (or wakes it then: late_wake).
 * - worker.parked: the futex word, 1 while the worker is (about to be)
 *   asleep. The worker stores 1, then re-checks every queue; a waker pushes,
 *   then reads parked. Both sides are sequentially consistent (Dekker), so
 *   either the worker sees the push or the waker sees 1 and wakes it.
 * - pool.pending: tasks queued or running; with pool.stopping it tells the
 *   workers when a shutdown has drained (same Dekker pattern with parked).
 * - pool.lock: the overflow list (wakes that found the chosen ring full,
 *   rare) and the LIFO mode's stack of parked workers, as Tokio keeps its
 *   sleepers under a mutex. in_idle[] is also read without the lock by the
 *   parking worker (seq_cst, against lifo_pop's clear: see park()).
 * - worker counters: written by their worker only (relaxed), read by anyone.
 * - worker.deferred: tasks whose place_run_begin a cookie refused (-EBUSY:
 *   an SMT sibling runs another cookie) and that place_run_refused() left
 *   here (nothing fits better; else they go to the worker it names, as a
 *   wakeup does), owner only, never stolen; they stay QUEUED. worker.retry: set (seq_cst) by the sibling's worker whose
 *   place_run_end_retry() named this CPU, then wake_worker(); the owner
 *   exchanges it to 0 and retries each deferred task once (as after each of
 *   its own runs: the run_end that empties the core never names its own CPU).
 *   The park re-check reads it after storing parked (Dekker, as a push).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ck_ring.h>

#include "pool.h"

enum { T_IDLE, T_QUEUED, T_RUNNING, T_NOTIFIED, T_DONE };

/* ThreadSanitizer cannot see ck_ring's synchronization (ck_pr is inline
 * assembly) but sees its plain copies into the slots, so it would report
 * every hand-off as a race. Under TSan each ring is also guarded by a mutex:
 * the ring itself is validated by Concurrency Kit's own tests, and TSan then
 * checks everything else (task states, runnext, parking, libplace's calls). */
#if defined(__SANITIZE_THREAD__)
#define POOL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POOL_TSAN 1
#endif
#endif

#define CACHELINE 64

struct worker {
	ck_ring_t ring;             /* padded by ck between consumer and producer sides */
	ck_ring_buffer_t *buf;
#ifdef POOL_TSAN
	pthread_mutex_t ring_lock;  /* see POOL_TSAN */
#endif
	struct pool *p;
	int cpu;                    /* OS CPU */
	int idx;
	int *victims;               /* worker indexes, nearest first */
	int nvictims;
	pool_task *next;            /* the runnext slot: owner only, never stolen */
	pool_task *deferred;        /* refused by a cookie, FIFO (last: deferred_tail) */
	pool_task *deferred_tail;
	unsigned ndeferred, nretry; /* owner only: deferred tasks, and how many to retry now */
	unsigned retry;             /* a sibling's run_end named this CPU, see the header */
	int *sibs;                  /* place_run_end_retry's buffer, [nsibs] */
	int nsibs;
	pthread_t thread;
	bool started;
	unsigned parked;            /* futex word, see the header comment */
	uint64_t runs, steals, parks, overflow, switches, handoffs;
} __attribute__((aligned(CACHELINE)));

/* Three cache lines, so that a write to one does not take the others from
 * the CPUs that read them on every wake: the read-only setup, the pending
 * count (two RMWs per task run, from any worker), and what p->lock guards. */
struct pool {
	place_topo *topo;
	place *place;               /* the wakeup path in PLACE mode; steal order in both */
	int mode;
	int n;
	struct worker *w;
	int *worker_of;             /* [cpu_limit] OS CPU -> worker index, -1 */
	int cpu_limit;
	int *idle;                  /* LIFO mode: parked workers, top = most recent */
	bool *in_idle;
	unsigned long pending __attribute__((aligned(CACHELINE)));
	unsigned stopping;
	pthread_mutex_t lock __attribute__((aligned(CACHELINE)));
	pool_task *ovf_head, *ovf_tail;
	unsigned novf;              /* overflow list length, read lock-free as a hint */
	int nidle;
};

/* Does libplace see this pool's edges? (LIFO mode keeps it for the steal order only.) */
static bool placed(const struct pool *p)
{
	return p->mode == POOL_WAKE_PLACE;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void futex_wait(unsigned *addr, unsigned val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(unsigned *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void pool_task_init(pool_task *t, pool_fn fn, void *arg)
{
	memset(t, 0, sizeof(*t));
	place_task_init(&t->place, 0, 0);
	t->fn = fn;
	t->arg = arg;
	t->state = T_IDLE;
}

/* ---- the rings (any thread) ------------------------------------------- */

#ifdef POOL_TSAN
#define RING_LOCK(w) pthread_mutex_lock(&(w)->ring_lock)
#define RING_UNLOCK(w) pthread_mutex_unlock(&(w)->ring_lock)
#else
#define RING_LOCK(w) ((void)(w))
#define RING_UNLOCK(w) ((void)(w))
#endif

static bool ring_push(struct worker *w, pool_task *t)
{
	bool ok;

	RING_LOCK(w);
	ok = ck_ring_enqueue_mpmc(&w->ring, w->buf, t);
	RING_UNLOCK(w);
	return ok;
}

static pool_task *ring_pop(struct worker *w)
{
	pool_task *t = NULL;

	RING_LOCK(w);
	if (!ck_ring_dequeue_mpmc(&w->ring, w->buf, &t))
		t = NULL;
	RING_UNLOCK(w);
	return t;
}

/* A snapshot, for deciding whether to look (ck_pr loads, unseen by TSan). */
static bool ring_busy(const struct worker *w)
{
	return ck_ring_size(&w->ring) != 0;
}

/* ---- waking workers ------------------------------------------------------ */

static void wake_worker(struct worker *w)
{
	/* Pairs with park(): our push is visible before we read parked. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->parked, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&w->parked, 0, __ATOMIC_SEQ_CST))
		futex_wake(&w->parked);
}

static void wake_all(struct pool *p)
{
	for (int i = 0; i < p->n; i++)
		wake_worker(&p->w[i]);
}

/* ---- the LIFO baseline's stack of parked workers (under p->lock) --------- */

static void lifo_remove_locked(struct pool *p, int idx)
{
	int j = 0;

	if (!p->in_idle[idx])
		return;
	while (p->idle[j] != idx)
		j++;
	memmove(&p->idle[j], &p->idle[j + 1], (size_t)(p->nidle - j - 1) * sizeof(int));
	p->nidle--;
	__atomic_store_n(&p->in_idle[idx], false, __ATOMIC_SEQ_CST);
}

static void lifo_push(struct pool *p, int idx)
{
	pthread_mutex_lock(&p->lock);
	lifo_remove_locked(p, idx);
	p->idle[p->nidle++] = idx;
	__atomic_store_n(&p->in_idle[idx], true, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&p->lock);
}

static void lifo_remove(struct pool *p, int idx)
{
	pthread_mutex_lock(&p->lock);
	lifo_remove_locked(p, idx);
	pthread_mutex_unlock(&p->lock);
}

static int lifo_pop(struct pool *p)
{
	int idx = -1;

	pthread_mutex_lock(&p->lock);
	if (p->nidle) {
		idx = p->idle[--p->nidle];
		/* Pairs with park(): we clear this, push, then read parked; it
		 * sets parked, then reads this. */
		__atomic_store_n(&p->in_idle[idx], false, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&p->lock);
	return idx;
}

/* ---- queues ------------------------------------------------------------------ */

static void overflow_push(struct pool *p, pool_task *t)
{
	pthread_mutex_lock(&p->lock);
	t->next = NULL;
	if (p->ovf_tail)
		p->ovf_tail->next = t;
	else
		p->ovf_head = t;
	p->ovf_tail = t;
	__atomic_add_fetch(&p->novf, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&p->lock);
}

static pool_task *overflow_pop(struct pool *p)
{
	pool_task *t;

	if (!__atomic_load_n(&p->novf, __ATOMIC_SEQ_CST))
		return NULL;
	pthread_mutex_lock(&p->lock);
	t = p->ovf_head;
	if (t) {
		p->ovf_head = t->next;
		if (!p->ovf_head)
			p->ovf_tail = NULL;
		__atomic_sub_fetch(&p->novf, 1, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&p->lock);
	return t;
}

/* Queue t on w, or on the overflow list when w's ring is full; then make
 * sure somebody runs it. A full ring means t is not delivered to w: if this
 * wakeup claimed w for t, give the claim back (place_task_claimed says so;
 * the answer alone does not, and releasing blindly could drop another
 * task's claim on w). Rare: a claimed CPU was idle, its ring empty; so the
 * pool asks then, rather than on every wakeup with place_wakeup_ex (about
 * 20 instructions more per wakeup). */
static void push(struct pool *p, struct worker *w, pool_task *t)
{
	if (ring_push(w, t)) {
		wake_worker(w);
		return;
	}
	if (placed(p) && place_task_claimed(p->place, &t->place) == w->cpu)
		place_claim_release(p->place, w->cpu);
	__atomic_add_fetch(&w->overflow, 1, __ATOMIC_RELAXED);
	overflow_push(p, t);
	if (p->mode == POOL_WAKE_LIFO) {
		int idx = lifo_pop(p);

		if (idx >= 0)
			wake_worker(&p->w[idx]);
	}
	wake_worker(w);
}

/* A sync or hand-off (PLACE_WAKE_CURRENT) wakeup onto the waker's own
 * worker goes to its runnext slot (Go's
 * runnext, Tokio's LIFO slot): the waker is about to sleep, so t runs next,
 * here, with hot caches, and no idle thief can take it meanwhile (which
 * would bounce a ping-pong pair between CPUs). Only the waker's own thread
 * gets here with w->cpu == waker_cpu (pool_wake's contract), so the slot
 * needs no atomics. */
static void push_woken(struct pool *p, struct worker *w, pool_task *t, int waker_cpu, unsigned flags)
{
	if ((flags & (PLACE_WAKE_SYNC | PLACE_WAKE_CURRENT)) && w->cpu == waker_cpu && !w->next) {
		w->next = t;
		return;
	}
	push(p, w, t);
}

/* A hand-off (PLACE_WAKE_CURRENT, with SYNC or alone: other flags, and
 * errors, are place_wakeup's) from a worker whose runnext slot is free
 * goes there without a wakeup: the run's end tells libplace in one
 * call with the switch (place_run_handoff, end_or_switch), or wakes t then
 * if that call refuses (late_wake). t->flags keeps the wake's flags till
 * then. Owner only, as the slot. */
static bool handoff_slot(struct pool *p, pool_task *t, int waker_cpu, unsigned flags)
{
	struct worker *w;

	if ((flags & ~PLACE_WAKE_SYNC) != PLACE_WAKE_CURRENT || waker_cpu < 0 || waker_cpu >= p->cpu_limit ||
	    p->worker_of[waker_cpu] < 0 || (w = &p->w[p->worker_of[waker_cpu]])->next)
		return false;
	t->flags = (int)flags;
	w->next = t;
	return true;
}

/* Choose a worker for t and queue it there. t is QUEUED, counted in pending. */
static int enqueue(struct pool *p, pool_task *t, int waker_cpu, unsigned flags)
{
	int idx;

	t->woken_ns = now_ns();
	if (p->mode == POOL_WAKE_PLACE) {
		int cpu;

		if (handoff_slot(p, t, waker_cpu, flags))
			return 0;
		cpu = place_wakeup(p->place, &t->place, waker_cpu, flags);

		if (cpu < 0)
			return cpu;
		push_woken(p, &p->w[p->worker_of[cpu]], t, waker_cpu, flags);
		return 0;
	}
	idx = lifo_pop(p);
	if (idx < 0 && waker_cpu >= 0 && waker_cpu < p->cpu_limit)
		idx = p->worker_of[waker_cpu];
	if (idx >= 0) {
		push_woken(p, &p->w[idx], t, waker_cpu, flags);
		return 0;
	}
	/* Nobody parked and no waker queue: the overflow list, then a second
	 * look for a worker that parked meanwhile (it re-checks the list after
	 * pushing itself, so one of us sees the other: both under p->lock). */
	overflow_push(p, t);
	idx = lifo_pop(p);
	if (idx >= 0)
		wake_worker(&p->w[idx]);
	return 0;
}

int pool_wake(pool *p, pool_task *t, int waker_cpu, unsigned flags)
{
	for (;;) {
		unsigned s = __atomic_load_n(&t->state, __ATOMIC_SEQ_CST);
		int err;

		switch (s) {
		case T_IDLE:
			if (!__atomic_compare_exchange_n(&t->state, &s, T_QUEUED, false, __ATOMIC_SEQ_CST,
							 __ATOMIC_SEQ_CST))
				continue;
			__atomic_add_fetch(&p->pending, 1, __ATOMIC_SEQ_CST);
			err = enqueue(p, t, waker_cpu, flags);
			if (err < 0) {
				__atomic_store_n(&t->state, T_IDLE, __ATOMIC_SEQ_CST);
				__atomic_sub_fetch(&p->pending, 1, __ATOMIC_SEQ_CST);
			}
			return err;
		case T_RUNNING:
			if (!__atomic_compare_exchange_n(&t->state, &s, T_NOTIFIED, false, __ATOMIC_SEQ_CST,
							 __ATOMIC_SEQ_CST))
				continue;
			return 0;
		case T_DONE:
			return -EINVAL;
		default:
			return 0; /* already queued or notified: this wake is absorbed */
		}
	}
}

/* ---- workers ----------------------------------------------------------------- */

/* ---- tasks a cookie refused (owner only) ---------------------------------- */

static void deferred_push(struct worker *w, pool_task *t)
{
	t->next = NULL;
	if (w->deferred_tail)
		w->deferred_tail->next = t;
	else
		w->deferred = t;
	w->deferred_tail = t;
	w->ndeferred++;
}

static pool_task *deferred_pop(struct worker *w)
{
	pool_task *t = w->deferred;

	w->deferred = t->next;
	if (!w->deferred)
		w->deferred_tail = NULL;
	w->ndeferred--;
	return t;
}

/* The run on w ended: the SMT siblings whose tasks a cookie refused while
 * this one ran retry now (place_run_end_retry names them): the one wake
 * edge forced idle has. */
static void end_run(struct worker *w, pool_task *t, unsigned how)
{
	struct pool *p = w->p;
	int n = place_run_end_retry(p->place, w->cpu, &t->place, how, w->sibs, w->nsibs);

	for (int i = 0; i < n && i < w->nsibs; i++) {
		int idx = w->sibs[i] < p->cpu_limit ? p->worker_of[w->sibs[i]] : -1;

		if (idx >= 0) {
			__atomic_store_n(&p->w[idx].retry, 1, __ATOMIC_SEQ_CST);
			wake_worker(&p->w[idx]);
		}
	}
	if (w->ndeferred)
		w->nretry = w->ndeferred; /* our run_end may have emptied the core: not named */
}

static pool_task *runnext_pop(struct worker *w)
{
	pool_task *t = w->next;

	w->next = NULL;
	return t;
}

/* inline at both callers (the loop, end_or_switch): a call here cost every run 30 instructions */
static inline __attribute__((always_inline)) pool_task *take(struct worker *w, bool *stolen)
{
	struct pool *p = w->p;
	pool_task *t;

	*stolen = false;
	if (w->ndeferred && !w->nretry && __atomic_exchange_n(&w->retry, 0, __ATOMIC_SEQ_CST))
		w->nretry = w->ndeferred;
	if (w->nretry) { /* each deferred task once: a refused one goes back to the end */
		w->nretry--;
		return deferred_pop(w);
	}
	if (w->next)
		return runnext_pop(w);
	t = ring_pop(w);
	if (t)
		return t;
	t = overflow_pop(p);
	if (t)
		return t;
	for (int i = 0; i < w->nvictims; i++) {
		struct worker *v = &p->w[w->victims[i]];

		if (ring_busy(v) && (t = ring_pop(v))) {
			*stolen = true;
			return t;
		}
	}
	return NULL;
}

static bool has_work(const struct worker *w)
{
	const struct pool *p = w->p;

	if (ring_busy(w) || __atomic_load_n(&p->novf, __ATOMIC_SEQ_CST))
		return true;
	for (int i = 0; i < w->nvictims; i++)
		if (ring_busy(&p->w[w->victims[i]]))
			return true;
	return false;
}

static bool drained(struct pool *p)
{
	return __atomic_load_n(&p->stopping, __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&p->pending, __ATOMIC_SEQ_CST);
}

static void park(struct worker *w)
{
	struct pool *p = w->p;

	if (placed(p))
		place_idle_enter(p->place, w->cpu);
	else
		lifo_push(p, w->idx);
	__atomic_store_n(&w->parked, 1, __ATOMIC_SEQ_CST);
	/* Pairs with wake_worker(): re-check after announcing the park. In
	 * LIFO mode also make sure we are still on the stack of parked
	 * workers: a waker that popped us after our push may have seen
	 * parked == 0 (no futex wake) and its task may be stolen before we
	 * look; sleeping now would leave us parked where no wake finds us. */
	if (!has_work(w) && !drained(p) && !__atomic_load_n(&w->retry, __ATOMIC_SEQ_CST) &&
	    (placed(p) || __atomic_load_n(&p->in_idle[w->idx], __ATOMIC_SEQ_CST))) {
		__atomic_add_fetch(&w->parks, 1, __ATOMIC_RELAXED);
		futex_wait(&w->parked, 1);
	}
	__atomic_store_n(&w->parked, 0, __ATOMIC_SEQ_CST);
	if (!placed(p))
		lifo_remove(p, w->idx);
}

/* A run is over (state already IDLE or DONE): shutdown may have drained. */
static void retire(struct pool *p)
{
	if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_SEQ_CST) == 0 &&
	    __atomic_load_n(&p->stopping, __ATOMIC_SEQ_CST))
		wake_all(p);
}

/* What a worker runs next, taken before the run that ended was reported. */
struct pick {
	pool_task *t;  /* NULL: nothing, the loop looks again and parks */
	bool begun;    /* a switch began it: libplace saw its run_begin */
	bool stolen;   /* from another worker's ring */
};

/* A hand-off that libplace has not seen (handoff_slot) and that will not
 * go on with place_run_handoff (refused, or the run already ended): wake
 * t now, as enqueue() would have; NULL when it went to another worker. */
static pool_task *late_wake(struct worker *w, pool_task *t)
{
	struct pool *p = w->p;
	unsigned flags = (unsigned)t->flags;
	int cpu;

	t->flags = 0;
	cpu = place_wakeup(p->place, &t->place, w->cpu, flags);
	if (cpu < 0 || cpu == w->cpu || cpu >= p->cpu_limit || p->worker_of[cpu] < 0)
		return t; /* here (after an error too, as after_sleep's re-wake) */
	push(p, &p->w[p->worker_of[cpu]], t);
	return NULL;
}

/*
 * t's run on w ends with how. The worker takes its next task first (the
 * hand-off in the runnext slot, else its ring, the overflow list, a
 * victim's ring, as the loop would), and one place_run_switch() ends t's
 * run and begins next's: one call instead of run_end + run_begin, and the
 * CPU never looks idle between them; a hand-off libplace has not seen yet
 * goes on with place_run_handoff(), its wakeup and the switch in one call.
 * With deferred tasks (COOKIES) the run ends first, as before: end_run()
 * decides which of them retry now. A switch that fails (-EAGAIN: a sibling
 * must be named or the core drains; or next's begin would fail) changed
 * nothing: the two calls decide (a refused hand-off is woken first).
 */
/* inline: out of line, the pingpong hop paid 27 instructions for the call */
static inline __attribute__((always_inline)) struct pick end_or_switch(struct worker *w, pool_task *t,
								      unsigned how)
{
	struct pick n = { NULL, false, false };

	if (!w->ndeferred) /* the runnext slot first, as take() (inline: the hand-off's path) */
		n.t = w->next ? runnext_pop(w) : take(w, &n.stolen);
	if (n.t && n.t->flags) {
		if (!place_run_handoff(w->p->place, w->cpu, &t->place, how, &n.t->place)) {
			n.t->flags = 0;
			__atomic_store_n(&w->switches, w->switches + 1, __ATOMIC_RELAXED);
			__atomic_store_n(&w->handoffs, w->handoffs + 1, __ATOMIC_RELAXED);
			n.begun = true;
			return n;
		}
		n.t = late_wake(w, n.t);
	}
	if (n.t && !place_run_switch(w->p->place, w->cpu, &t->place, how, &n.t->place)) {
		__atomic_store_n(&w->switches, w->switches + 1, __ATOMIC_RELAXED);
		n.begun = true;
		return n;
	}
	end_run(w, t, how);
	return n;
}

/* t returned POOL_SLEEP on w. Returns what runs next, if taken. */
static struct pick after_sleep(struct worker *w, pool_task *t)
{
	struct pool *p = w->p;
	struct pick next = { NULL, false, false };
	unsigned s = T_RUNNING;

	if (__atomic_load_n(&t->state, __ATOMIC_SEQ_CST) == T_NOTIFIED) {
		/* Woken while running: it stays runnable here, behind the others. */
		if (placed(p))
			next = end_or_switch(w, t, PLACE_RUN_PREEMPT);
		__atomic_store_n(&t->state, T_QUEUED, __ATOMIC_SEQ_CST);
		t->woken_ns = now_ns();
		push(p, w, t);
		return next;
	}
	/* Report the edge before t can be woken again (one edge at a time). */
	if (placed(p))
		next = end_or_switch(w, t, PLACE_RUN_SLEEP);
	if (__atomic_compare_exchange_n(&t->state, &s, T_IDLE, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		retire(p);
		return next;
	}
	/* Notified between the check and the CAS: a fresh wakeup from here. */
	__atomic_store_n(&t->state, T_QUEUED, __ATOMIC_SEQ_CST);
	if (enqueue(p, t, w->cpu, 0) < 0) {
		t->woken_ns = now_ns();
		push(p, w, t);
	}
	return next;
}

/* t returned POOL_DONE on w. Returns what runs next, if taken. */
static struct pick after_done(struct worker *w, pool_task *t)
{
	struct pool *p = w->p;
	struct pick next = { NULL, false, false };

	if (placed(p))
		next = end_or_switch(w, t, PLACE_RUN_EXIT);
	/* After this store the task belongs to its owner again. */
	__atomic_store_n(&t->state, T_DONE, __ATOMIC_SEQ_CST);
	retire(p);
	return next;
}

/* A cookie refused t here (an SMT sibling runs another one, or the core
 * drains for a cookie that waited): libplace places it again; when nothing
 * fits better it waits here, still QUEUED, until a sibling's run_end names
 * this CPU (end_run). False when t may run. */
static bool begin_refused(struct worker *w, pool_task *t)
{
	struct pool *p = w->p;
	int cpu, idx;

	if (t->flags && !late_wake(w, t))
		return true; /* a hand-off taken by the loop: woken to another worker */
	if (place_run_begin(p->place, w->cpu, &t->place) != -EBUSY)
		return false;
	cpu = place_run_refused(p->place, w->cpu, &t->place, 0);
	idx = cpu >= 0 && cpu != w->cpu && cpu < p->cpu_limit ? p->worker_of[cpu] : -1;
	if (idx >= 0)
		push(p, &p->w[idx], t);
	else
		deferred_push(w, t);
	return true;
}

/* Run t, then whatever each run's end took next (PLACE mode: LIFO's ends
 * take nothing, the loop takes its next task). */
static void run(struct worker *w, pool_task *t, bool stolen)
{
	struct pool *p = w->p;
	struct pick n;

	if (placed(p) && begin_refused(w, t))
		return;
	for (;;) {
		__atomic_store_n(&t->state, T_RUNNING, __ATOMIC_SEQ_CST);
		__atomic_store_n(&w->runs, w->runs + 1, __ATOMIC_RELAXED);
		if (stolen)
			__atomic_store_n(&w->steals, w->steals + 1, __ATOMIC_RELAXED);
		n = t->fn(t, w->cpu) != POOL_DONE ? after_sleep(w, t) : after_done(w, t);
		if (!n.t || (!n.begun && begin_refused(w, n.t)))
			return;
		t = n.t;
		stolen = n.stolen;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		bool stolen;
		pool_task *t = take(w, &stolen);

		if (t) {
			run(w, t, stolen);
			continue;
		}
		if (drained(w->p))
			break;
		park(w);
	}
	return NULL;
}

/* ---- setup ------------------------------------------------------------------- */

/* Victims of every worker, nearest first (place_steal_order: SMT sibling,
 * LLC, node, package, rest, each ring rotated so that thieves going idle
 * together start at different victims), as worker indexes. */
static int build_victims(struct pool *p)
{
	int *cpus = calloc((size_t)p->n, sizeof(int));

	if (!cpus)
		return -ENOMEM;
	for (int i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];
		int n = place_steal_order(p->place, w->cpu, cpus, p->n);

		w->victims = calloc((size_t)p->n, sizeof(int));
		if (n < 0 || !w->victims) {
			free(cpus);
			return n < 0 ? n : -ENOMEM;
		}
		for (int k = 0; k < n && k < p->n; k++)
			if (p->worker_of[cpus[k]] >= 0)
				w->victims[w->nvictims++] = p->worker_of[cpus[k]];
		/* place_run_end_retry names SMT siblings: room for all of them */
		w->nsibs = place_topo_siblings(p->topo, w->cpu, NULL, 0) - 1;
		w->sibs = calloc(w->nsibs > 0 ? (size_t)w->nsibs : 1, sizeof(int));
		if (w->nsibs < 0 || !w->sibs) {
			free(cpus);
			return w->nsibs < 0 ? w->nsibs : -ENOMEM;
		}
	}
	free(cpus);
	return 0;
}

static int init_workers(struct pool *p, unsigned qsize)
{
	p->w = aligned_alloc(CACHELINE, (size_t)p->n * sizeof(*p->w));
	p->worker_of = malloc((size_t)p->cpu_limit * sizeof(int));
	p->idle = calloc((size_t)p->n, sizeof(int));
	p->in_idle = calloc((size_t)p->n, sizeof(bool));
	if (!p->w || !p->worker_of || !p->idle || !p->in_idle)
		return -ENOMEM;
	memset(p->w, 0, (size_t)p->n * sizeof(*p->w));
	for (int c = 0; c < p->cpu_limit; c++)
		p->worker_of[c] = -1;
	for (int i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];

		w->p = p;
		w->idx = i;
		w->cpu = place_topo_cpu(p->topo, i);
		p->worker_of[w->cpu] = i;
		w->buf = calloc(qsize, sizeof(*w->buf));
		if (!w->buf)
			return -ENOMEM;
		ck_ring_init(&w->ring, qsize);
#ifdef POOL_TSAN
		pthread_mutex_init(&w->ring_lock, NULL);
#endif
	}
	return 0;
}

/* The pool's idle workers steal queued tasks (take()), so libplace may
 * queue a dispatcher's workers behind it (PLACE_RUNTIME_THIEVES). */
static int start_place(struct pool *p, const place_config *given)
{
	place_config cfg;
	int err;

	if (given)
		cfg = *given;
	else
		place_config_init(&cfg);
	cfg.runtime |= PLACE_RUNTIME_THIEVES;
	err = place_create(&p->place, p->topo, &cfg);

	for (int i = 0; !err && i < p->n; i++)
		err = place_worker_register(p->place, p->w[i].cpu, 0);
	return err ? err : build_victims(p);
}

static int start_threads(struct pool *p, bool pin)
{
	for (int i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];
		pthread_attr_t attr;
		cpu_set_t set;
		int err;

		pthread_attr_init(&attr);
		if (pin) {
			CPU_ZERO(&set);
			CPU_SET(w->cpu, &set);
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		err = pthread_create(&w->thread, &attr, worker_main, w);
		pthread_attr_destroy(&attr);
		if (err)
			return -err;
		w->started = true;
	}
	return 0;
}

static void free_pool(struct pool *p)
{
	for (int i = 0; p->w && i < p->n; i++) {
#ifdef POOL_TSAN
		pthread_mutex_destroy(&p->w[i].ring_lock);
#endif
		free(p->w[i].buf);
		free(p->w[i].victims);
		free(p->w[i].sibs);
	}
	free(p->w);
	free(p->worker_of);
	free(p->idle);
	free(p->in_idle);
	place_destroy(p->place);
	place_topo_free(p->topo);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void stop_and_join(struct pool *p)
{
	__atomic_store_n(&p->stopping, 1, __ATOMIC_SEQ_CST);
	wake_all(p);
	for (int i = 0; i < p->n; i++)
		if (p->w[i].started)
			pthread_join(p->w[i].thread, NULL);
}

int pool_create(pool **out, const struct pool_config *cfg)
{
	static const struct pool_config defaults;
	unsigned qsize;
	struct pool *p;
	int err;

	if (!out)
		return -EINVAL;
	cfg = cfg ? cfg : &defaults;
	qsize = cfg->queue_size ? cfg->queue_size : 1024;
	if (qsize < 4 || (qsize & (qsize - 1)) || (cfg->mode != POOL_WAKE_PLACE && cfg->mode != POOL_WAKE_LIFO))
		return -EINVAL;
	p = aligned_alloc(CACHELINE, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	p->mode = cfg->mode;
	err = place_topo_load(&p->topo, cfg->topology);
	if (err < 0) {
		p->topo = NULL;
		free_pool(p);
		return err;
	}
	p->n = place_topo_nr_cpus(p->topo);
	if (cfg->max_workers > 0 && cfg->max_workers < p->n)
		p->n = cfg->max_workers;
	p->cpu_limit = place_topo_cpu_limit(p->topo);
	err = init_workers(p, qsize);
	if (!err)
		err = start_place(p, cfg->place);
	if (!err)
		err = start_threads(p, !cfg->no_pin);
	if (err < 0) {
		stop_and_join(p);
		free_pool(p);
		return err;
	}
	*out = p;
	return 0;
}

void pool_destroy(pool *p)
{
	if (!p)
		return;
	stop_and_join(p);
	free_pool(p);
}

int pool_nr_workers(const pool *p)
{
	return p->n;
}

int pool_worker_cpu(const pool *p, int i)
{
	return i >= 0 && i < p->n ? p->w[i].cpu : -ERANGE;
}

place *pool_place(pool *p)
{
	return placed(p) ? p->place : NULL;
}

void pool_stats_read(const pool *p, struct pool_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < p->n; i++) {
		const struct worker *w = &p->w[i];

		out->runs += __atomic_load_n(&w->runs, __ATOMIC_RELAXED);
		out->steals += __atomic_load_n(&w->steals, __ATOMIC_RELAXED);
		out->parks += __atomic_load_n(&w->parks, __ATOMIC_RELAXED);
		out->overflow += __atomic_load_n(&w->overflow, __ATOMIC_RELAXED);
		out->switches += __atomic_load_n(&w->switches, __ATOMIC_RELAXED);
		out->handoffs += __atomic_load_n(&w->handoffs, __ATOMIC_RELAXED);
	}
}
