#!/bin/bash
# Runs each Catch2 test binary given, then prints the closing line CI reads:
# "N passed, N failed" over the test cases of all of them. A binary that dies
# without its summary counts as one failure. The failed test cases are listed
# just above that line, so a log's tail says what failed.
set -u
passed=0
failed=0
failures=()
for bin in "$@"; do
	echo "== $bin"
	log=$(mktemp)
	"$bin" 2>&1 | tee "$log"
	summary=$(grep -E 'All tests passed|test cases:' "$log" | tail -n 1)
	# Catch2's console reporter prints the test case name between two dashed
	# rules, then "file:line: FAILED:" and the failed expression.
	# With it, the expansion (the values compared) and the first message, cut:
	# what a log's tail needs to tell a flake's cause.
	while IFS= read -r line; do failures+=("$line"); done < <(awk '
		function rule(s) { return length(s) == 79 && s ~ /^-+$/ }
		function trim(s) { sub(/^ +/, "", s); return s }
		function flush() {
			if (where != "") print "FAILED: " name " (" where " " expr detail ")"
			where = ""; detail = ""
		}
		rule($0) {
			flush(); name = ""
			while ((getline l) > 0 && !rule(l)) name = name (name == "" ? "" : " ") trim(l)
			next
		}
		/: FAILED:$/ { flush(); where = $1; getline expr; expr = trim(expr); next }
		where != "" && /^with expansion:$/ { getline l; detail = detail " with " trim(l); next }
		where != "" && /^with messages?:$/ { getline l; detail = detail " [" substr(trim(l), 1, 300) "]"; next }
		/^=+$/ { flush() }
		END { flush() }
	' "$log")
	rm -f "$log"
	if [[ $summary =~ All\ tests\ passed.*in\ ([0-9]+)\ test\ case ]]; then
		passed=$((passed + BASH_REMATCH[1]))
	elif [[ $summary =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ passed\ *\|\ *([0-9]+)\ failed ]]; then
		passed=$((passed + BASH_REMATCH[2]))
		failed=$((failed + BASH_REMATCH[3]))
	elif [[ $summary =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ failed ]]; then
		failed=$((failed + BASH_REMATCH[2]))
	else
		failures+=("FAILED: $bin: no test summary (crashed?)")
		failed=$((failed + 1))
	fi
done
printf '%s\n' "${failures[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
