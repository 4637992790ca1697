/*
 * The one atomics header. Every shared access in libplace goes through these
 * few operations, so the memory orders are named at each call site and can be
 * checked in one place.
 *
 * Production maps them to Concurrency Kit (ck_pr). A ThreadSanitizer build
 * (configure --enable-tsan defines PLACE_HAVE_TSAN) maps the same operations,
 * with the same orders, to the compiler's __atomic builtins, because TSan
 * cannot see ck_pr's inline assembly.
 *
 * The orders used, and why there are so few:
 * - relaxed loads and stores: hints (idle masks, has_idle_cores, the scan
 *   bound, nr_running, the short-run estimate) and single-writer counters.
 *   A hint read stale costs one wasted probe, never a wrong claim.
 * - read-modify-writes (cas, or, and, add on shared words) are sequentially
 *   consistent, and place_fence_rmw_load() after one orders it before later
 *   loads. Two protocols need that store->load order (a "Dekker" pair):
 *   idle enter (set IDLE, then read the mask) against mask repair (clear a
 *   bit, then read the states) — see idle.c — and claim end against idle
 *   enter, which are both RMWs on one word and so need nothing more.
 *   On x86 (TSO) locked instructions are full barriers and the fence is a
 *   compiler barrier; on weaker machines ck_pr's fences emit what is needed.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_ATOMIC_H
#define PLACE_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#ifndef PLACE_HAVE_TSAN

#include <ck_pr.h>

static inline uint64_t place_load_64(const uint64_t *p) { return ck_pr_load_64(p); }
static inline uint32_t place_load_32(const uint32_t *p) { return ck_pr_load_32(p); }
static inline void *place_load_ptr(void *const *p) { return ck_pr_load_ptr(p); }
static inline void place_store_64(uint64_t *p, uint64_t v) { ck_pr_store_64(p, v); }
static inline void place_store_32(uint32_t *p, uint32_t v) { ck_pr_store_32(p, v); }
static inline void place_store_ptr(void **p, void *v) { ck_pr_store_ptr(p, v); }

/* Sequentially consistent compare-and-swap. On failure *expected gets the
 * value seen. */
static inline bool place_cas_64(uint64_t *p, uint64_t *expected, uint64_t desired)
{
	bool ok;

	ck_pr_fence_store_atomic(); /* earlier stores before the RMW */
	ok = ck_pr_cas_64_value(p, *expected, desired, expected);
	ck_pr_fence_atomic_load(); /* the RMW before later loads */
	return ok;
}

static inline bool place_cas_32(uint32_t *p, uint32_t expected, uint32_t desired)
{
	bool ok;

	ck_pr_fence_store_atomic();
	ok = ck_pr_cas_32(p, expected, desired);
	ck_pr_fence_atomic_load();
	return ok;
}

/* Sequentially consistent bit operations on a mask word. */
static inline void place_or_64(uint64_t *p, uint64_t v)
{
	ck_pr_fence_store_atomic();
	ck_pr_or_64(p, v);
	ck_pr_fence_atomic_load();
}

static inline void place_and_64(uint64_t *p, uint64_t v)
{
	ck_pr_fence_store_atomic();
	ck_pr_and_64(p, v);
	ck_pr_fence_atomic_load();
}

/* Relaxed atomic add, for counters with several writers. */
static inline void place_add_64(uint64_t *p, uint64_t v) { ck_pr_add_64(p, v); }

/* Orders a preceding RMW before the loads that follow it (see above). */
static inline void place_fence_rmw_load(void) { ck_pr_fence_atomic_load(); }

#else /* PLACE_HAVE_TSAN */

static inline uint64_t place_load_64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline uint32_t place_load_32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void *place_load_ptr(void *const *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void place_store_64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void place_store_32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void place_store_ptr(void **p, void *v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

static inline bool place_cas_64(uint64_t *p, uint64_t *expected, uint64_t desired)
{
	return __atomic_compare_exchange_n(p, expected, desired, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

static inline bool place_cas_32(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

static inline void place_or_64(uint64_t *p, uint64_t v) { __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
static inline void place_and_64(uint64_t *p, uint64_t v) { __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
static inline void place_add_64(uint64_t *p, uint64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline void place_fence_rmw_load(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

#endif /* PLACE_HAVE_TSAN */

/* A single-writer counter: the owner increments with a plain relaxed load and
 * store (no locked instruction), readers load relaxed. Exact as long as only
 * the owner writes. */
static inline void place_count_64(uint64_t *p, uint64_t v)
{
	place_store_64(p, place_load_64(p) + v);
}

#endif /* PLACE_ATOMIC_H */
