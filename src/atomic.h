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
#include <string.h>

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
/* Acquire load and release store of a pointer: a per-CPU line's curr,
 * which publishes a whole run edge (idle.c, place__task_running). On x86
 * (TSO) both are plain moves with a compiler barrier. */
static inline void *place_load_ptr_acq(void *const *p)
{
	void *v = ck_pr_load_ptr(p);

	ck_pr_fence_acquire();
	return v;
}
static inline void place_store_ptr_rel(void **p, void *v)
{
	ck_pr_fence_release();
	ck_pr_store_ptr(p, v);
}

/*
 * Double-word (128-bit) operations, for a core's cookie occupancy
 * {cookie, count} (cookie.h): exact, because both 64-bit halves are compared.
 * x86_64 has cmpxchg16b (CK_F_PR_CAS_64_2_VALUE); the word must be 16-byte
 * aligned. The load is two relaxed 64-bit loads, so it may be torn: callers
 * treat it as a hint or as the expected value of a CAS (which then fails and
 * reports the exact value). ck_pr_load_64_2 would be exact but is itself a
 * locked cmpxchg16b that takes the line exclusive: too dear for a hint.
 */
#ifndef CK_F_PR_CAS_64_2_VALUE
#error "libplace needs a double-word compare-and-swap (ck_pr_cas_64_2_value) on this target"
#endif

static inline void place_load_64_2(const uint64_t p[2], uint64_t v[2])
{
	v[0] = ck_pr_load_64(&p[0]);
	v[1] = ck_pr_load_64(&p[1]);
}

/* Sequentially consistent, both directions (it guards what runs on a CPU:
 * earlier loads and stores before it, later ones after). On failure
 * expected gets the value seen. */
static inline bool place_cas_64_2(uint64_t p[2], uint64_t expected[2], uint64_t desired[2])
{
	uint64_t seen[2];
	bool ok;

	ck_pr_fence_load_atomic();
	ck_pr_fence_store_atomic();
	ok = ck_pr_cas_64_2_value(p, expected, desired, seen);
	ck_pr_fence_atomic_load();
	ck_pr_fence_atomic_store();
	expected[0] = seen[0];
	expected[1] = seen[1];
	return ok;
}

#else /* PLACE_HAVE_TSAN */

static inline uint64_t place_load_64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline uint32_t place_load_32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void *place_load_ptr(void *const *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void place_store_64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void place_store_32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void place_store_ptr(void **p, void *v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void *place_load_ptr_acq(void *const *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void place_store_ptr_rel(void **p, void *v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

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

/* 128-bit __atomic operations (libatomic or TSan's own), so that TSan sees
 * every access to the word at one size; the load is exact here. */
static inline void place_load_64_2(const uint64_t p[2], uint64_t v[2])
{
	unsigned __int128 x = __atomic_load_n((const unsigned __int128 *)(const void *)p, __ATOMIC_RELAXED);

	memcpy(v, &x, sizeof(x));
}

static inline bool place_cas_64_2(uint64_t p[2], uint64_t expected[2], uint64_t desired[2])
{
	unsigned __int128 e, d;
	bool ok;

	memcpy(&e, expected, sizeof(e));
	memcpy(&d, desired, sizeof(d));
	ok = __atomic_compare_exchange_n((unsigned __int128 *)(void *)p, &e, d, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST);
	memcpy(expected, &e, sizeof(e));
	return ok;
}

#endif /* PLACE_HAVE_TSAN */

/* A single-writer counter: the owner increments without a locked
 * instruction, readers load relaxed. Exact as long as only the owner writes.
 * On x86-64 one unlocked add on memory: its store is a single aligned 8-byte
 * write, so a reader sees the count before or after it. */
#if !defined(PLACE_HAVE_TSAN) && defined(__x86_64__)
static inline void place_count_64(uint64_t *p, uint64_t v)
{
	__asm__ __volatile__("addq %1, %0" : "+m"(*p) : "er"(v));
}
#else
static inline void place_count_64(uint64_t *p, uint64_t v)
{
	place_store_64(p, place_load_64(p) + v);
}
#endif

#endif /* PLACE_ATOMIC_H */
