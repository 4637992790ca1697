/*
 * Shared by the Check suites: run a suite so that its log names every case
 * (CK_VERBOSITY=verbose from the harness, CK_ENV here) and ends with Check's
 * summary line, and find the fixtures.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_TESTLIB_H
#define PLACE_TESTLIB_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* Run s and return the process exit status. */
static inline int place_test_run(Suite *s)
{
	SRunner *r = srunner_create(s);
	int failed;

	srunner_run_all(r, CK_ENV);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Absolute path of a file under tests/ (PLACE_TEST_SRCDIR from the harness). */
static inline const char *place_test_path(char *buf, size_t size, const char *rel)
{
	const char *dir = getenv("PLACE_TEST_SRCDIR");

	snprintf(buf, size, "%s/%s", dir ? dir : "tests", rel);
	return buf;
}

/* The "xml:" source of the hwloc export rel under tests/, in buf. */
static inline const char *place_test_fixture(char *buf, size_t size, const char *rel)
{
	char path[4096];

	snprintf(buf, size, "xml:%s", place_test_path(path, sizeof(path), rel));
	return buf;
}

#endif
