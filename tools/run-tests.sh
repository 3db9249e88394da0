#!/bin/bash
# Runs each Catch2 test binary given, then prints the closing line CI reads:
# "N passed, N failed" over the test cases of all of them. A binary that dies
# without its summary counts as one failure.
set -u
passed=0
failed=0
for bin in "$@"; do
	echo "== $bin"
	log=$(mktemp)
	"$bin" 2>&1 | tee "$log"
	summary=$(grep -E 'All tests passed|test cases:' "$log" | tail -n 1)
	rm -f "$log"
	if [[ $summary =~ All\ tests\ passed.*in\ ([0-9]+)\ test\ case ]]; then
		passed=$((passed + BASH_REMATCH[1]))
	elif [[ $summary =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ passed\ *\|\ *([0-9]+)\ failed ]]; then
		passed=$((passed + BASH_REMATCH[2]))
		failed=$((failed + BASH_REMATCH[3]))
	elif [[ $summary =~ test\ cases:\ *([0-9]+)\ *\|\ *([0-9]+)\ failed ]]; then
		failed=$((failed + BASH_REMATCH[2]))
	else
		echo "$bin: no test summary (crashed?)"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
