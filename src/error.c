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

int place__fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

void place__clear_error(void)
{
	last_error[0] = '\0';
}

PLACE_EXTERN const char *place_last_error(void)
{
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
		return "no registered worker is allowed for this task";
	case EBUSY:
		return "busy: another cookie runs on this core";
	case ERANGE:
		return "index out of range";
	case ENOSPC:
		return "limit reached";
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
