/*
 * RCU for reconfiguration (DESIGN.md mechanism 12), liburcu's bp flavor:
 * callers never register threads (a thread registers itself on its first
 * read-side section, which allocates once per thread, then never again).
 *
 * What it protects. place_set_topology marks removed CPUs OFFLINE in their
 * state words. A claim CAS can never succeed on an OFFLINE CPU (the bit is
 * in the word it compares), but a wakeup returns some CPUs without a claim
 * (stacking on its target, the waker): one that read a state word before
 * the bit was set could still return that CPU. Each place_wakeup is
 * therefore one read-side critical section, and place_set_topology waits
 * for a grace period after setting the bits: when it returns, every wakeup
 * that could have missed them has returned. The current-topology snapshot
 * (struct place.cur) is published and retired the same way.
 *
 * Cost on the wakeup. _LGPL_SOURCE inlines the read side: a TLS access
 * (in the shared library, through __tls_get_addr: liburcu-bp.so owns the
 * variable), a load of the global counter, a store to our own reader slot,
 * and on unlock one store; the ordering against grace periods comes from
 * sys_membarrier on the writer's side (no fence here) when the kernel has
 * it, else an mfence in each lock and unlock. Measured: BENCHMARKS.md.
 *
 * ThreadSanitizer cannot see liburcu's handshake (TOOLCHAIN.md), so a TSan
 * build tells it: each read section's end releases on the instance's
 * rcu_sync, each grace period's end acquires it. Readers' accesses then
 * happen before what the writer does after the grace period (free the old
 * snapshot). Snapshot publication uses __atomic release/acquire there.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_RCU_H
#define PLACE_RCU_H

/*
 * The inline read side, except under AddressSanitizer (build.sh's
 * ASan+UBSan stage): liburcu 0.13 declares struct urcu_bp_reader 128-byte
 * aligned but hands out readers from its registry chunks at a 32-byte
 * offset, and UBSan's alignment check, compiled into the inlined header
 * code, aborts on it (liburcu's layout, harmless on x86; not a libplace
 * access). Out of line there, liburcu's own uninstrumented functions run.
 */
#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define PLACE_RCU_OUT_OF_LINE 1
#elif defined(__has_feature) /* clang (the fuzz stage) */
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define PLACE_RCU_OUT_OF_LINE 1
#endif
#endif
#ifdef PLACE_RCU_OUT_OF_LINE
#undef _LGPL_SOURCE /* Makefile.am defines it for the whole library */
#elif !defined(_LGPL_SOURCE)
#define _LGPL_SOURCE
#endif
#include <urcu-bp.h>

#include "internal.h"

/*
 * liburcu-bp's per-thread reader slot lives in liburcu-bp.so, so by default
 * each access from libplace.so is a __tls_get_addr call: three per wakeup
 * (the registration test, lock, unlock), 44 of the read side's 80
 * instructions. Initial-exec makes each one load from %fs. It needs the
 * variable in the static TLS block: true when liburcu-bp.so is loaded at
 * start-up (a dependency of the program or of a library it links), and
 * when libplace is dlopen()ed, glibc places it in the surplus it reserves
 * for such libraries (one pointer here; "cannot allocate memory in static
 * TLS block" from dlopen if that surplus were used up). The static library
 * resolves it at link time anyway.
 */
#if defined(_LGPL_SOURCE) && defined(CONFIG_RCU_TLS) && defined(__GNUC__)
extern __thread struct urcu_bp_reader *urcu_bp_reader __attribute__((tls_model("initial-exec")));
#endif

#ifdef PLACE_HAVE_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define place__tsan_acquire(a) __tsan_acquire((void *)(a))
#define place__tsan_release(a) __tsan_release((void *)(a))
#else
#define place__tsan_acquire(a) ((void)(a))
#define place__tsan_release(a) ((void)(a))
#endif

/* Has this thread its reader slot? A hot path that tests it first and
 * registers out of line (place__read_register) stays a leaf function:
 * liburcu's own test calls urcu_bp_register() inline. Out of line (the
 * sanitizer builds) liburcu's read lock registers by itself. */
static inline bool place__read_ready(void)
{
#if defined(_LGPL_SOURCE)
	return URCU_TLS(urcu_bp_reader) != NULL;
#else
	return true;
#endif
}

static inline void place__read_register(void)
{
	urcu_bp_register_thread();
}

static inline void place__read_lock(void)
{
	urcu_bp_read_lock();
}

/* p is not NULL (the TSan build names its sync object). */
static inline void place__read_unlock(const struct place *p)
{
	place__tsan_release(&p->rcu_sync);
	urcu_bp_read_unlock();
}

/* Wait until every read section that began before the call has ended.
 * Control plane only: never from inside a read section (deadlock). */
static inline void place__synchronize(const struct place *p)
{
	urcu_bp_synchronize_rcu();
	place__tsan_acquire(&p->rcu_sync);
}

/* Publish a snapshot (release: its contents before the pointer; partner:
 * place__rcu_deref) / read it inside a read section. */
#ifdef PLACE_HAVE_TSAN
#define place__rcu_assign(ptr, v) __atomic_store_n(&(ptr), (v), __ATOMIC_RELEASE)
#define place__rcu_deref(ptr) __atomic_load_n(&(ptr), __ATOMIC_ACQUIRE)
#else
#define place__rcu_assign(ptr, v) rcu_assign_pointer(ptr, v)
#define place__rcu_deref(ptr) rcu_dereference(ptr)
#endif

#endif /* PLACE_RCU_H */
