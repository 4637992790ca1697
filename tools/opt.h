/*
 * The one way libplace's command-line tools (place-info, place-sim,
 * place-bench, place-poolbench) read their options: GNU long options,
 * --help and --version in each, one error line that names the bad option
 * or value (never the whole usage), and values checked against their range.
 * Names of policies and features are matched without regard to case.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_TOOLS_OPT_H
#define PLACE_TOOLS_OPT_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

/* The values getopt_long returns for the two options every tool has. */
enum { OPT_HELP = 'h', OPT_VERSION = 'V', OPT_ERROR = -2 };

#define OPT_COMMON_LONGOPTS                                                   \
	{ "help", no_argument, NULL, OPT_HELP },                              \
	{ "version", no_argument, NULL, OPT_VERSION }

/* getopt_long over lo[]: the next option's value, -1 at the end, OPT_ERROR
 * after one "PROG: ..." line on stderr (an unknown option, a missing value,
 * an argument left over when allow_args is 0). --help prints usage on stdout
 * and --version the versions; both then exit 0. */
int opt_next(const char *prog, int argc, char **argv, const struct option *lo, const char *usage,
	     int allow_args);

/* The long name of option value val in lo[], for messages ("?" if none). */
const char *opt_long_name(const struct option *lo, int val);

/* Numbers: 0, or -1 after "PROG: bad value 'ARG' for --NAME: ..." when arg is
 * not a decimal number in [min, max] (min >= 0: no tool takes a negative). */
int opt_u64(const char *prog, const char *name, const char *arg, uint64_t min, uint64_t max,
	    uint64_t *out);
int opt_int(const char *prog, const char *name, const char *arg, int min, int max, int *out);
int opt_real(const char *prog, const char *name, const char *arg, double min, double max,
	     double *out);

/* The index of arg in names[0..n-1], any case; -1 after a line listing them. */
int opt_choice(const char *prog, const char *name, const char *arg, const char *const *names, int n);

/* Does word (len bytes) equal name, any case? */
int opt_word_is(const char *word, size_t len, const char *name);

#endif
