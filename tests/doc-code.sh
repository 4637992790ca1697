#!/bin/sh
# Every C code block of README.md and doc/*.md compiles: each ```c block is
# extracted and compiled against include/place.h. A block with its own main()
# is compiled as it stands; any other is the body of a function, after the
# usual headers and after the declarations of an HTML comment right above it,
#   <!-- doc-code: static place *p; static int cpu; -->
# which a reader of the rendered page does not see. A block that is an
# excerpt on purpose (pool.c with "..." in it) says so: ```c fragment.
# Run by make check; CC is the configured compiler.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
top=${PLACE_TEST_SRCDIR:-$(dirname "$0")}/..
CC=${PLACE_CONSUMER_CC:-cc}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# Write each block to $tmp/NNN.c, its origin to $tmp/NNN.where.
n=0 skipped=0
for md in "$top/README.md" "$top"/doc/*.md; do
	[ -f "$md" ] || continue
	awk -v dir="$tmp" -v file="${md#"$top"/}" -v start="$n" '
	function flush() {
		f = sprintf("%s/%03d", dir, ++n)
		print file ":" line0 > (f ".where"); close(f ".where")
		if (body ~ /(^|\n)[a-z ]*int main\(/) {
			printf "%s", body > (f ".c")
		} else {
			printf "#define _GNU_SOURCE\n#include <errno.h>\n#include <pthread.h>\n#include <sched.h>\n" > (f ".c")
			printf "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <place.h>\n" > (f ".c")
			printf "%s\n#line %d \"%s\"\nvoid doc_block_%d(void);\nvoid doc_block_%d(void)\n{\n%s}\n", decls, line0 + 1, file, n, n, body > (f ".c")
		}
		close(f ".c")
	}
	BEGIN { n = start }
	/^[ \t]*<!-- doc-code: .* -->[ \t]*$/ {
		decls = $0; sub(/^[ \t]*<!-- doc-code: /, "", decls); sub(/ -->[ \t]*$/, "", decls); pending = NR; next
	}
	!inblock && /^[ \t]*```c( |$)/ {
		indent = $0; sub(/```.*/, "", indent)
		if ($0 ~ /```c fragment/) { skip++; inblock = 2 } else { inblock = 1; body = ""; line0 = NR }
		if (pending != NR - 1) decls = ""
		next
	}
	inblock && /^[ \t]*```[ \t]*$/ { if (inblock == 1) flush(); inblock = 0; decls = ""; next }
	inblock == 1 { line = $0; if (index(line, indent) == 1) line = substr(line, length(indent) + 1); body = body line "\n" }
	END { print n, skip + 0 > (dir "/count") }
	' "$md"
	read -r n s <"$tmp/count"
	skipped=$((skipped + s))
done

if [ "$n" -eq 0 ]; then
	echo "doc-code: FAIL: no C block found (README.md, doc/*.md): is the extraction broken?"
	exit 1
fi
failures=0
for c in "$tmp"/*.c; do
	where=$(cat "${c%.c}.where")
	if $CC -std=gnu11 -fsyntax-only -Wall -Wno-unused -Werror -I"$top/include" "$c" 2>"$tmp/err"; then
		echo "PASS: $where"
	else
		failures=$((failures + 1))
		echo "FAIL: $where"
		cat "$tmp/err"
	fi
done
echo "doc-code: $n C blocks compiled, $failures failed; $skipped marked fragment (excerpts)"
[ "$failures" -eq 0 ]
