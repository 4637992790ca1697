/*
 * The claim protocol of libplace, in Promela, checked exhaustively by spin
 * (tests/model/run.sh: spin -a claim.pml && gcc -DSAFETY -o pan pan.c && ./pan).
 *
 * What is modelled, against the C code (src/idle.h, src/idle.c, src/select.c):
 *
 *   st     the per-CPU state word of CPU X (struct place_cpu.state), with the
 *          layout of internal.h: REGISTERED 0x1, IDLE 0x2, CLAIMED 0x4,
 *          QUEUED in bits 4..7 (one unit = 0x10; the C word has bits 8..31),
 *          GEN in bits 8..15 (the C word has bits 32..63). Every change is a
 *          compare-and-swap (CAS) on the whole word, as in the C code; a CAS
 *          that fails reloads the word and retries, as ck_pr_cas_64_value does.
 *   sty    the state word of CPU Y, the thief's CPU (only its IDLE bit moves).
 *   mask   CPU X's bit in its LLC's SIS_CORE idle mask (llc->icpus). X is a
 *          core of one CPU, so "no sibling bit set" is "mask is 0".
 *   q      X's run queue in the thread pool (what the runtime pushes to after a
 *          wakeup returned X); the worker of X and the thief take from it.
 *
 *   waker A, B   place_wakeup() of tasks 1 and 2 aimed at X (prev = target =
 *          X): select.c take()/take_seen() probe the word, then
 *          idle.h place__st_claim() CASes available -> CLAIMED + one QUEUED +
 *          a new GEN; a lost claim falls back to stacking on X
 *          (wake_commit(): place__st_enqueue()). Before probing, a waker may
 *          run the SIS_CORE repair of a false positive (select.c repair():
 *          clear the bit, then re-read the state and set the bit back if X is
 *          available). After the wakeup the runtime either pushes the task to
 *          q, or, for a claim it cannot deliver, calls place_claim_release()
 *          (select.c; idle.h place__st_release(), then
 *          idle.c place__after_delivery()).
 *   worker W     X's worker: place_idle_enter() (idle.c: place__st_change()
 *          sets IDLE; publishes X in the mask only if available(before|IDLE):
 *          never while a claim or a queued task is pending, seed 001 patch 1;
 *          an idle edge ends no claim), and place_run_begin(X, t)
 *          (idle.c start_delivery(): one place__st_deliver() CAS on X that
 *          clears IDLE and ends t's own claim, matched by GEN), place_run_end().
 *   thief T      the worker of CPU Y stealing a task from q:
 *          place_run_begin(Y, t): place__st_deliver() on Y (clears Y's IDLE),
 *          then place__st_deliver() on X with t's GEN, then
 *          place__after_delivery(X): X goes back into the mask when the claim
 *          end made it available (it may be idle: user space has no idle
 *          balancer to find it).
 *
 * What is checked (assertions; spin also reports invalid end states):
 *   1. no two successful claims of one idle CPU: a claim CAS succeeds only
 *      when no claim is live (ghost "owner");
 *   2. a task ends only its own claim: a delivery CAS that clears CLAIMED is
 *      made for the task that owns it (the GEN match), never a later claim;
 *   3. no lost claim, no lost queue slot: at the end every task ran (on X or
 *      on Y) or had its claim released, and X's word holds no CLAIMED and no
 *      QUEUED;
 *   4. the CPU returns to available: at the end X is idle with nothing
 *      pending, so it must be available and its mask bit set (a wakeup scan
 *      can find it), whatever the interleaving of claim ends, idle edges and
 *      mask repairs.
 *
 * What is abstracted away:
 *   - one target CPU X: the rest of select_idle_sibling() (wake_affine,
 *     the scans over other CPUs, the scan bound, has_idle_cores, the sibling
 *     rescan) only chooses which CPU to probe; the claim on each is this one;
 *   - registration is fixed (REGISTERED always set), no unregister, no
 *     place_set_topology();
 *   - PLACE_WAKE_NOCLAIM, PREEMPT (run_end requeue), re-waking a task that
 *     still holds a slot (drop_stale_delivery) and cookies (cookie.pml) are
 *     not modelled;
 *   - memory order: spin interleaves steps of a sequentially consistent
 *     machine. The C code's RMWs are sequentially consistent and followed by
 *     place_fence_rmw_load() where a later load must not pass them (atomic.h),
 *     which is what makes the interleaving model sound for these two
 *     store->load pairs (idle_enter vs repair, claim end vs idle_enter);
 *     relaxed hint loads are modelled as plain reads at any interleaving point;
 *   - the 24-bit QUEUED and 32-bit GEN fields are 4 and 8 bits here; with two
 *     tasks neither can overflow.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define REGISTERED 1
#define IDLE       2
#define CLAIMED    4
#define Q_ONE      16
#define Q_MASK     240
#define GEN_SHIFT  8
#define LOW_MASK   255

#define NT 2          /* tasks 1 and 2, woken by A and B */
#define NONE 0
#define CPU_X 1
#define CPU_Y 2

#define avail(s)   (((s) & (REGISTERED | IDLE | CLAIMED | Q_MASK)) == (REGISTERED | IDLE))
#define queued(s)  (((s) & Q_MASK) / Q_ONE)
#define gen(s)     ((s) >> GEN_SHIFT)

int st = REGISTERED | IDLE;    /* X: registered, idle (place_worker_register) */
int sty = REGISTERED;          /* Y: its worker is the thief, busy stealing */
bit mask = 1;                  /* SIS_CORE: the mask starts full (build_llcs) */
chan q = [NT] of { byte };

/* The task records (struct place_task_rec): queued_cpu and claim_gen. */
byte t_queued[NT + 1];
byte t_gen[NT + 1];
/* Ghosts. */
byte owner = NONE;             /* the task whose claim on X is live */
bit ran[NT + 1];
bit released[NT + 1];
byte wakers_done = 0;
bit worker_done = 0;
bit thief_done = 0;
bit x_running = 0;

/* A successful CAS on st that clears CLAIMED ends owner's claim. */
inline claim_ended_by(t)
{
	assert(owner == t);    /* 2: only its own claim */
	owner = NONE
}

/* idle.c place__idle_publish() for X under SIS_CORE with one CPU per core:
 * fence, read the mask, set the bit if no bit of the core is set. */
inline publish_x()
{
	if
	:: mask == 0 -> mask = 1
	:: else -> skip
	fi
}

/* idle.c place__after_delivery(X, before, after). */
inline after_delivery_x(before, after)
{
	if
	:: !avail(before) && avail(after) -> publish_x()
	:: else -> skip
	fi
}

/* idle.h place__st_deliver(&st, leave_idle, deliver, g, &after) for CPU X,
 * done by task t. One load, then a CAS loop. */
inline deliver_x(leave_idle, deliver, g, t, before, after)
{
	before = st;
	do
	:: d_step {
		after = before;
		if
		:: leave_idle -> after = after & ~IDLE
		:: else -> skip
		fi;
		if
		:: deliver && g != 0 ->
			if
			:: (before & CLAIMED) && gen(before) == g && queued(before) > 0 ->
				after = (after & ~CLAIMED) - Q_ONE
			:: else -> skip
			fi
		:: deliver && g == 0 && queued(before) > 0 -> after = after - Q_ONE
		:: else -> skip
		fi
	   };
		if
		:: after == before -> break
		:: else ->
			atomic {
				if
				:: st == before ->
					st = after;
					if
					:: (before & CLAIMED) && !(after & CLAIMED) -> claim_ended_by(t)
					:: else -> skip
					fi;
					break
				:: else -> before = st /* CAS failed: the value seen */
				fi
			}
		fi
	od
}

/* The wakeup of task t aimed at X, then the runtime's delivery or release. */
proctype waker(byte t)
{
	int s, want, before, after;
	byte g;
	bit claimed = 0, was_set;

	/* A scan that meets X's bit while X is not available repairs it
	 * (select.c scan_core()/scan_smt() -> repair()): clear the bit (an
	 * atomic RMW), fence, re-read the state, set the bit back if X has
	 * become available meanwhile. Optional: not every wakeup scans. */
	if
	:: mask == 1 ->
		s = st;
		if
		:: !avail(s) ->
			/* place_mask_clear(): atomic test-and-clear; only
			 * the scan that cleared the bit looks again */
			atomic { was_set = mask; mask = 0 };
			if
			:: was_set ->
				s = st;
				if
				:: avail(s) -> mask = 1
				:: else -> skip
				fi
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: true -> skip
	fi;

	/* The scan may go on and claim a CPU outside the model (select.c
	 * select_idle_cpu() visits the rest of the mask): X is then left as
	 * the repair left it. */
	if
	:: true -> skip
	:: true -> ran[t] = 1; goto done
	fi;

	/* select.c take(): probe (relaxed load), then take_seen(). */
	s = st;
	if
	:: avail(s) ->
		/* idle.h place__st_claim(&st, s, &gen) */
		do
		:: !avail(s) -> break        /* no longer available: lost */
		:: avail(s) ->
			d_step {
				g = gen(s) + 1;
				want = (s & LOW_MASK) | CLAIMED | Q_ONE | (g << GEN_SHIFT)
			};
			atomic {
				if
				:: st == s ->
					st = want;
					assert(owner == NONE);   /* 1: one claim at a time */
					owner = t;
					claimed = 1;
					break
				:: else -> s = st
				fi
			}
		od
	:: else -> skip
	fi;
	/* widen.h place__claim_unpublish(): claimed is not idle; X is a core
	 * of one CPU, so its bit goes (place_mask_test, then the clear, an
	 * RMW). The claim's end puts it back (assertion 4). */
	if
	:: claimed && mask == 1 -> mask = 0
	:: else -> skip
	fi;

	if
	:: claimed ->
		t_queued[t] = CPU_X;
		t_gen[t] = g
	:: else ->
		/* Nothing idle: stack on the target (wake_commit(),
		 * idle.h place__st_enqueue()). */
		s = st;
		do
		:: atomic {
			if
			:: st == s -> st = s + Q_ONE; break
			:: else -> s = st
			fi
		   }
		od;
		t_queued[t] = CPU_X;
		t_gen[t] = 0
	fi;

	/* The runtime pushes the task to X's queue; a claim that cannot be
	 * delivered is released instead (place_claim_release()), and the task
	 * may still be pushed afterwards to a queue that another worker serves:
	 * it then runs with a stale GEN, which must end nothing (what the GEN
	 * is for: the claim may meanwhile belong to the other waker). */
	if
	:: q!t
	:: claimed ->
		/* idle.h place__st_release() */
		before = st;
		do
		:: atomic {
			if
			:: !(before & CLAIMED) -> assert(false) /* our claim cannot have ended */
			:: else ->
				after = before & ~CLAIMED;
				if
				:: queued(before) > 0 -> after = after - Q_ONE
				:: else -> skip
				fi;
				if
				:: st == before ->
					st = after;
					assert(owner == t);
					owner = NONE;
					released[t] = 1;
					break
				:: else -> before = st
				fi
			fi
		   }
		od;
		after_delivery_x(CLAIMED, after);
		if
		:: q!t      /* delivered elsewhere after all */
		:: skip     /* never delivered */
		fi
	fi;
done:
	wakers_done++
}

/* idle.c place_idle_enter(X) */
inline idle_enter_x(before)
{
	assert(!x_running);
	atomic { before = st; st = st | IDLE };
	if
	:: avail(before | IDLE) -> publish_x()
	:: else -> skip
	fi
}

/* The worker of X: runs what arrives (run_begin / run_end) and parks
 * (idle_enter) when its queue is empty. A parked worker calls nothing more
 * until a task arrives (a real pool sleeps on a futex), so no later idle edge
 * can mend a CPU that a claim end left out of the mask. It stops, parked,
 * when every wakeup is done and the queue is drained. */
proctype worker()
{
	byte t;
	int before, after;
	bit parked = 0;

	do
	:: q?t ->
		/* idle.c place_run_begin(X, t) -> start_delivery(): delivered
		 * where it was sent: one CAS clears IDLE and ends its claim. */
		assert(t_queued[t] == CPU_X);
		deliver_x(1, 1, t_gen[t], t, before, after);
		t_queued[t] = NONE;
		t_gen[t] = 0;
		parked = 0;
		x_running = 1;
		ran[t] = 1;
		/* place_run_end(X, t, SLEEP) */
		x_running = 0
	:: empty(q) && !parked -> idle_enter_x(before); parked = 1
	:: wakers_done == NT && empty(q) && thief_done && parked -> break
	od;
	worker_done = 1
}

/* The worker of Y steals one task from X's queue, if any. */
proctype thief()
{
	byte t;
	int before, after, ybefore;

	if
	:: q?t ->
		/* idle.c place_run_begin(Y, t) -> start_delivery(): our own
		 * word first (leave idle), then t's queue slot on X. */
		atomic { ybefore = sty; sty = sty & ~IDLE };
		assert(t_queued[t] == CPU_X);
		deliver_x(0, 1, t_gen[t], t, before, after);
		after_delivery_x(before, after);
		t_queued[t] = NONE;
		t_gen[t] = 0;
		ran[t] = 1
	:: true -> skip
	fi;
	thief_done = 1
}

init {
	atomic {
		run waker(1);
		run waker(2);
		run worker();
		run thief()
	}
	(wakers_done == NT && worker_done && thief_done);
	/* 3: nothing lost */
	assert(ran[1] || released[1]);
	assert(ran[2] || released[2]);
	assert(!(st & CLAIMED) && queued(st) == 0);
	assert(owner == NONE);
	/* 4: X parked with nothing pending is available, and findable (its
	 * last idle edge may have come before the claim end: a steal, a
	 * release) */
	assert(avail(st));
	assert(mask == 1)
}
