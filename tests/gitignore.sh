#!/bin/sh
# No tracked file matches .gitignore: a build product committed by mistake
# (a configure~ once was) fails here, and so does an ignore pattern that
# would hide a real source file from `git add`. Skips outside a git checkout
# (a release tarball, make distcheck).
#
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
top=${PLACE_TEST_SRCDIR:-$(dirname "$0")}/..
if ! command -v git >/dev/null 2>&1 ||
	[ "$(git -C "$top" rev-parse --is-inside-work-tree 2>/dev/null)" != true ] ||
	[ ! -e "$top/.gitignore" ] ||
	[ "$(git -C "$top" rev-parse --show-toplevel)" != "$(cd "$top" && pwd -P)" ]; then
	echo "gitignore: SKIP: not a git checkout"
	exit 77
fi
bad=$(git -C "$top" ls-files -ci --exclude-standard)
if [ -n "$bad" ]; then
	echo "gitignore: tracked files that .gitignore matches (remove them, or fix the pattern):"
	echo "$bad"
	exit 1
fi
echo "gitignore: no tracked file matches .gitignore ($(git -C "$top" ls-files | wc -l) tracked)"
