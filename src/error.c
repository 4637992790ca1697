/*
 * Errors and version. Errors are negative errnos; the detail of the last
 * failure lives in thread-local storage so that concurrent callers never see
 * each other's messages and no global mutable state exists.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "topo.h"

static _Thread_local char last_error[512];

/* A hot path's failure (place__why): what and where, formatted only when
 * place_last_error() asks, so that the failing call pays two stores. */
static _Thread_local struct {
	int why; /* enum place_why, PLACE_WHY_NONE when last_error is current */
	int cpu;
	int arg;
} pending;

int place__fail(int err, const char *fmt, ...)
{
	va_list ap;

	pending.why = PLACE_WHY_NONE;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

int place__why(int err, int why, int cpu, int arg)
{
	pending.why = why;
	pending.cpu = cpu;
	pending.arg = arg;
	return err;
}

void place__clear_error(void)
{
	pending.why = PLACE_WHY_NONE;
	last_error[0] = '\0';
}

/* The text of a pending hot-path detail. */
static const char *why_text(int why)
{
	switch (why) {
	case PLACE_WHY_RUNNING:
		return "place_run_begin: the worker of cpu %d still runs a task (place_run_end is missing)";
	case PLACE_WHY_COOKIE:
		return "place_run_begin: an SMT sibling of cpu %d runs a task of another cookie, or its "
		       "core drains for a cookie that waited (leave cpu forced idle; place_run_refused "
		       "says where the task goes)";
	case PLACE_WHY_SWITCH:
		return "place_run_switch: cpu %d's SMT siblings run or wait for another cookie "
		       "(nothing changed: place_run_end_retry, then place_run_begin)";
	case PLACE_WHY_END_NONE:
		return "place_run_end: cpu %d runs no task (place_run_end twice, or no place_run_begin)";
	case PLACE_WHY_END_OTHER:
		return "place_run_end: cpu %d runs another task than this one";
	case PLACE_WHY_END_ELSEWHERE:
		return "place_run_end: cpu %d runs another task; this one runs on cpu %d";
	case PLACE_WHY_END_HOW:
		return "place_run_end: cpu %d: unknown how %d";
	case PLACE_WHY_WOKEN_RUNNING:
		return "place_wakeup: the task still runs on cpu %d (no place_run_end yet): "
		       "end its run (PREEMPT keeps it runnable there), or wake it after place_run_end";
	case PLACE_WHY_NO_WORKER:
		return "place_wakeup: no worker has registered yet (keep the task, wake it after "
		       "place_worker_register)";
	case PLACE_WHY_NONE_ALLOWED:
		return "place_wakeup: no registered worker serves a CPU the task may use";
	default:
		return "";
	}
}

PLACE_EXTERN const char *place_last_error(void)
{
	if (pending.why != PLACE_WHY_NONE) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(last_error, sizeof(last_error), why_text(pending.why), pending.cpu, pending.arg);
#pragma GCC diagnostic pop
		pending.why = PLACE_WHY_NONE;
	}
	return last_error;
}

PLACE_EXTERN const char *place_strerror(int err)
{
	if (err == INT_MIN)
		return strerror(err); /* -INT_MIN overflows (undefined behaviour) */
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case EINVAL:
		return "invalid argument";
	case ENOENT:
		return "no such file, or nothing registered";
	case EACCES:
		return "permission denied";
	case ENODEV:
		return "no such usable CPU";
	case ENOMEM:
		return "out of memory";
	case EEXIST:
		return "already registered";
	case ESRCH:
		return "no worker for this task: none has registered yet, or none serves a CPU "
		       "the task may use";
	case EBUSY:
		return "busy: the worker still runs a task, or another cookie runs on its core";
	case EALREADY:
		return "the task is still running (no place_run_end yet)";
	case ERANGE:
		return "index out of range";
	case ENOSPC:
		return "limit reached";
	case EXDEV:
		return "the task record is held by another instance, or the topology is not a "
		       "restriction of the instance's";
	case EAGAIN:
		return "not now: nothing idle was found, or (core scheduling) the core does not "
		       "admit the switch";
	case EPERM:
		return "the task's cpu_set_t does not allow this CPU";
	default:
		return strerror(err);
	}
}

PLACE_EXTERN unsigned place_version(void)
{
	return PLACE_VERSION_HEX;
}

PLACE_EXTERN const char *place_version_string(void)
{
	return PACKAGE_VERSION;
}
