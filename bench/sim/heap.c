/*
 * The event queue: a binary min-heap on (time, seq). The insertion sequence
 * breaks ties, so simultaneous events pop in a fixed order and a run never
 * depends on the heap's internal layout.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "sim.h"

static bool ev_less(const struct sim_event *a, const struct sim_event *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

int sim_heap_push(struct sim_heap *h, uint64_t time, int type, int a, unsigned b)
{
	size_t i;

	if (h->len == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 1024;
		struct sim_event *ev = realloc(h->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		h->ev = ev;
		h->cap = cap;
	}
	i = h->len++;
	h->ev[i] = (struct sim_event){ .time = time, .seq = h->seq++, .type = type, .a = a, .b = b };
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		struct sim_event tmp;

		if (!ev_less(&h->ev[i], &h->ev[parent]))
			break;
		tmp = h->ev[i];
		h->ev[i] = h->ev[parent];
		h->ev[parent] = tmp;
		i = parent;
	}
	return 0;
}

bool sim_heap_pop(struct sim_heap *h, struct sim_event *out)
{
	size_t i = 0;

	if (!h->len)
		return false;
	*out = h->ev[0];
	h->ev[0] = h->ev[--h->len];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct sim_event tmp;

		if (l < h->len && ev_less(&h->ev[l], &h->ev[m]))
			m = l;
		if (r < h->len && ev_less(&h->ev[r], &h->ev[m]))
			m = r;
		if (m == i)
			break;
		tmp = h->ev[i];
		h->ev[i] = h->ev[m];
		h->ev[m] = tmp;
		i = m;
	}
	return true;
}

void sim_heap_fini(struct sim_heap *h)
{
	free(h->ev);
	h->ev = NULL;
	h->len = h->cap = 0;
}
