/*
 * Core-scheduling cookies (seed 002, DESIGN.md mechanism 9): the exact
 * admission check of place_run_begin(), in Promela, checked exhaustively by
 * spin (tests/model/run.sh).
 *
 * What is modelled, against the C code (src/cookie.h):
 *   occ_cookie, occ_count   the core's occupancy word {cookie, count of
 *          running tasks} (struct place_core.occ), changed only by a
 *          double-word compare-and-swap that compares both halves.
 *   worker(i)   the workers of the two SMT siblings of one core. Each starts
 *          two tasks, of cookie 1 or 2 (any two distinct cookies: 0 is a
 *          cookie like the others), with place__cookie_enter(): a relaxed
 *          read that production may tear (the two halves are read apart:
 *          modelled as two loads), then
 *            - the core runs another cookie: the no-op CAS old -> old, so
 *              that a refusal (-EBUSY: the worker leaves the CPU forced-idle
 *              and requeues) is decided only on a value a CAS confirmed; a
 *              failed CAS retries with the exact value;
 *            - else the CAS old -> {cookie, count + 1}, retried on failure.
 *            - the core runs our cookie and a sibling waited its turn
 *              (issue 15; when is the clock's business, chosen freely
 *              here): the CAS old -> old | DRAIN, refused; while DRAIN
 *              is set every enter is refused; the leave that empties the
 *              core clears it (the word goes to {0, 0}).
 *          While the task runs, place_task_set_cookie() may change the
 *          task's cookie (any thread, relaxed). place_run_end() then calls
 *          place__cookie_leave() with the cookie captured at run_begin
 *          (place_cpu.curr_cookie): CAS {c, n} -> {n > 1 ? cookie : 0, n - 1}.
 *
 * What is checked:
 *   1. isolation: two tasks of different cookies never run at the same time
 *      on the two siblings (checked at every admission, and the word agrees
 *      with the running tasks after every change);
 *   2. a refusal is justified: at the confirming CAS the sibling really runs
 *      a task of another cookie, or the word says DRAIN (a torn read never
 *      refuses a task that fits);
 *   3. the core ends empty: {0, 0} after every task has left (DRAIN too);
 *   4. a draining core admits no task, not even of the running cookie.
 *
 * Abstracted: one core of two CPUs (the rule is per core; a core of one CPU
 * is never looked at); the wakeup's relaxed place__cookie_fits() hint (it
 * only chooses where to try; run_begin decides); the requeue after a
 * refusal (a refused task is dropped); a sequentially consistent machine
 * (the CASes are sequentially consistent, atomic.h).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define RUNS 2
/* The drain bit of the count half (PLACE_OCC_DRAIN, bit 31 in C): the
 * running cookie's turn is over; CNT() is the running count without it. */
#define DRAIN 8
#define CNT(x) ((x) & 7)

byte occ_cookie = 0;
byte occ_count = 0;
byte running[2];        /* ghost: cookie of the task running on sibling i, 0 = none */
byte done = 0;

/* The word agrees with the ghosts: count = running tasks, all of its cookie. */
inline check_word()
{
	assert(CNT(occ_count) == (running[0] != 0) + (running[1] != 0));
	assert(CNT(occ_count) > 0 || occ_count == 0); /* DRAIN only while tasks run */
	assert(running[0] == 0 || running[0] == occ_cookie);
	assert(running[1] == 0 || running[1] == occ_cookie)
}

proctype worker(bit me)
{
	byte n = 0, cookie, curr_cookie, task_cookie, old_c, old_n, want_c, want_n;
	bit admitted;

	do
	:: n == RUNS -> break
	:: n < RUNS ->
		n++;
		if
		:: cookie = 1
		:: cookie = 2
		fi;
		/* place__cookie_enter(): place_load_64_2() may tear */
		old_c = occ_cookie;
		old_n = occ_count;
		admitted = 0;
		do
		:: CNT(old_n) > 0 && (old_c != cookie || (old_n & DRAIN)) ->
			atomic {
				if
				:: occ_cookie == old_c && occ_count == old_n ->
					/* confirmed: -EBUSY */
					assert((running[1 - me] != 0 && running[1 - me] != cookie) ||
					       (occ_count & DRAIN)); /* 2 */
					break
				:: else -> old_c = occ_cookie; old_n = occ_count
				fi
			}
		:: CNT(old_n) > 0 && old_c == cookie && !(old_n & DRAIN) ->
			/* a sibling waited its turn (place__cookie_turn_due: the
			 * clock and the forced bits, chosen freely here): set DRAIN,
			 * refused */
			atomic {
				if
				:: occ_cookie == old_c && occ_count == old_n ->
					occ_count = old_n | DRAIN;
					check_word();
					break
				:: else -> old_c = occ_cookie; old_n = occ_count
				fi
			}
		:: !(CNT(old_n) > 0 && (old_c != cookie || (old_n & DRAIN))) ->
			atomic {
				if
				:: occ_cookie == old_c && occ_count == old_n ->
					occ_cookie = cookie;
					assert(!(occ_count & DRAIN)); /* 4 */
					occ_count = old_n + 1;
					assert(running[1 - me] == 0 || running[1 - me] == cookie); /* 1 */
					running[me] = cookie;
					check_word();
					admitted = 1;
					break
				:: else -> old_c = occ_cookie; old_n = occ_count
				fi
			}
		od;
		if
		:: admitted ->
			curr_cookie = cookie;  /* place_run_begin: c->curr_cookie */
			task_cookie = cookie;
			/* place_task_set_cookie() while it runs */
			if
			:: task_cookie = 3 - task_cookie
			:: skip
			fi;
			/* place_run_end() -> place__cookie_leave(curr_cookie) */
			old_c = occ_cookie;
			old_n = occ_count;
			do
			:: d_step {
				want_n = (CNT(old_n) > 1 -> old_n - 1 : 0); /* the last clears DRAIN */
				want_c = (want_n > 0 -> curr_cookie : 0)
			   };
				atomic {
					if
					:: occ_cookie == old_c && occ_count == old_n ->
						occ_cookie = want_c;
						occ_count = want_n;
						running[me] = 0;
						check_word();
						break
					:: else -> old_c = occ_cookie; old_n = occ_count
					fi
				}
			od
		:: else -> skip /* refused: forced idle, the task is requeued */
		fi
	od;
	done++
}

init {
	atomic {
		run worker(0);
		run worker(1)
	}
	(done == 2);
	assert(occ_cookie == 0 && occ_count == 0) /* 3 */
}
