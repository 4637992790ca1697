/*
 * (Not features.h: that name is glibc's <features.h>, which src/ on the
 * include path would shadow.)
 *
 * The feature switches, one line each with its trade-off, like the kernel's
 * kernel/sched/features.h. The bits themselves are public (PLACE_FEAT_* in
 * place.h); this table names them and checks that PLACE_FEAT_ALL covers
 * exactly these. Include with PLACE_FEAT(NAME, WHY) defined.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* Two concurrent wakeups never pick the same idle CPU; costs one CAS on the chosen CPU's line. */
PLACE_FEAT(CLAIM, "claim the returned idle CPU with one CAS")
/* Finds idle CPUs the core-granule mask leaves out; costs probing SMT siblings on fail-prone scans. */
PLACE_FEAT(SCAN_SIBLING, "fail-prone scans also probe SMT siblings and repair false positives")
/* Keeps producer/consumer pairs cache-hot; only with one running task, or wakees pile up (seed 000). */
PLACE_FEAT(SHORT_AFFINE, "wake onto a waker that runs exactly one short task")
/* A 1:N waker (dispatcher) would drag all its wakees into its LLC; wakee flips detect it. */
PLACE_FEAT(WAKE_WIDE, "no wake-affine for wakers that flip between many wakees")
/* Stops fruitless scans of a nearly busy LLC; may miss the last idle CPU above ~85% busy. */
PLACE_FEAT(SIS_UTIL, "bound the idle-CPU scan by the LLC's utilization")
/* SMT isolation between cookies (seed 002); costs a 128-bit CAS per run edge and forced-idle CPUs. */
PLACE_FEAT(COOKIES, "tasks of different cookies never run at once on one core's SMT siblings")
/* Consolidates groups on nodes (seed 003); costs grouped tasks a node-local atomic add per run edge. */
PLACE_FEAT(NUMA, "cross-node wakeups prefer the node where the task's group runs most")
/* No balancer rescues a stacked task in user space; costs one load when nothing is idle elsewhere. */
PLACE_FEAT(WIDEN, "nothing idle in the target's LLC: an idle core, then CPU, in its node, then anywhere")
/* Keeps a wakee under the target's L2 where clusters share one (SD_CLUSTER); no cost without clusters. */
PLACE_FEAT(CLUSTER, "the LLC scans try the target's cluster first")
/* Keeps a wakee beside its cache when the waker's LLC is full; costs one mask load per cross-LLC pull. */
PLACE_FEAT(PULL_IDLE, "the short-task pull crosses LLCs only for an idle CPU or a shorter queue")
/* A task that wakes many others, pulled into each replier's LLC in turn, pays a refill each time. */
PLACE_FEAT(HUB_STAYS, "SYNC does not pull a task that wakes many others from its idle prev's LLC")
/* Thieves drain a queue on a short hub in order; without them (runtime flag) the rule is off. */
PLACE_FEAT(HUB_QUEUE, "with thieves, a hub's worker queues behind the short hub, not its busy prev")
/* A wakee pulled onto a busy waker on another node (no SYNC) waits behind it and refills its cache. */
PLACE_FEAT(BUSY_STAYS, "no pull across nodes onto a busy waker without SYNC while its LLC has no idle CPU")
