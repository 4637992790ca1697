/*
 * Multi-word 64-bit masks shared between threads: the per-LLC idle masks.
 * Bit i is the CPU at position i of its LLC (topo->cpu[].llc_pos), so an LLC
 * of up to 64 CPUs is one word.
 *
 * Each word is read with relaxed loads and changed with atomic OR/AND, one
 * word at a time: no operation is linearised with respect to the whole mask
 * (as ck_bitmap). Setting and clearing first read the word and write only
 * when the bit differs, so a mask that is already right costs no coherence
 * traffic. Iteration re-reads words as it goes and may see bits that change
 * under it; it always terminates, visiting each position at most once.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_BITMAP_H
#define PLACE_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "atomic.h"

#define PLACE_MASK_WORDS(nbits) (((nbits) + 63) / 64)

static inline bool place_mask_test(const uint64_t *w, int bit)
{
	return (place_load_64(&w[(unsigned)bit / 64]) >> ((unsigned)bit % 64)) & 1;
}

/* Set bit; returns true when this call changed it. */
static inline bool place_mask_set(uint64_t *w, int bit)
{
	uint64_t m = UINT64_C(1) << ((unsigned)bit % 64);

	if (place_load_64(&w[(unsigned)bit / 64]) & m)
		return false;
	place_or_64(&w[(unsigned)bit / 64], m);
	return true;
}

/* Clear bit; returns true when this call found it set (another thread may
 * have cleared it at the same time: both then return true, which only
 * over-counts a statistic). */
static inline bool place_mask_clear(uint64_t *w, int bit)
{
	uint64_t m = UINT64_C(1) << ((unsigned)bit % 64);

	if (!(place_load_64(&w[(unsigned)bit / 64]) & m))
		return false;
	place_and_64(&w[(unsigned)bit / 64], ~m);
	return true;
}

/* Is any bit of [lo, lo + n) set? n is an SMT core's width: small. */
static inline bool place_mask_any_in(const uint64_t *w, int lo, int n)
{
	for (int i = lo; i < lo + n; i++)
		if (place_mask_test(w, i))
			return true;
	return false;
}

/* First set bit at or after from and before nbits, or -1. */
static inline int place_mask_next(const uint64_t *w, int nbits, int from)
{
	int i = from / 64;
	uint64_t word;

	if (from >= nbits)
		return -1;
	word = place_load_64(&w[i]) & (~UINT64_C(0) << (from % 64));
	for (;;) {
		if (word) {
			int bit = i * 64 + __builtin_ctzll(word);

			return bit < nbits ? bit : -1;
		}
		if (++i >= PLACE_MASK_WORDS(nbits))
			return -1;
		word = place_load_64(&w[i]);
	}
}

/* Number of set bits (a snapshot per word). */
static inline int place_mask_weight(const uint64_t *w, int nbits)
{
	int n = 0;

	for (int i = 0; i < PLACE_MASK_WORDS(nbits); i++)
		n += __builtin_popcountll(place_load_64(&w[i]));
	return n;
}

/*
 * Wrap-around iteration, as the kernel's for_each_cpu_wrap(): the set bits
 * from start to the end, then from 0 up to start (exclusive).
 */
struct place_mask_iter {
	const uint64_t *w;
	int nbits;
	int start;
	int pos;      /* last position returned, -1 before the first */
	bool wrapped;
};

static inline int place_mask_iter_next(struct place_mask_iter *it)
{
	int bit;

	if (!it->wrapped) {
		bit = place_mask_next(it->w, it->nbits, it->pos < 0 ? it->start : it->pos + 1);
		if (bit >= 0)
			return it->pos = bit;
		it->wrapped = true;
		it->pos = -1;
	}
	bit = place_mask_next(it->w, it->nbits, it->pos + 1);
	if (bit < 0 || bit >= it->start)
		return -1;
	return it->pos = bit;
}

static inline struct place_mask_iter place_mask_iter_init(const uint64_t *w, int nbits, int start)
{
	struct place_mask_iter it = { w, nbits, start < nbits ? start : 0, -1, false };

	return it;
}

#endif /* PLACE_BITMAP_H */
