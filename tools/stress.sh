#!/bin/bash
# usage: tools/stress.sh RUNS FILTER E2E_TESTS: runs the end-to-end test cases
# that FILTER (a Catch2 test spec: 'name*,[tag]'; a comma inside a name is
# `\,`) matches, RUNS times in a row, beside CPU-bound processes (HOGS, 2 by
# default), as every new or touched e2e test is run before it lands
# (`make stress`). A run that matches no test case fails. Each run's log
# stays in a temporary directory, named for the runs that failed. Last line:
# "N passed, N failed" (runs).
set -u
runs=$1 filter=$2 bin=$3
logs=$(mktemp -d /tmp/usdtprof-stress.XXXXXX)
hogs=()
for _ in $(seq 1 "${HOGS:-2}"); do
	(while :; do :; done) &
	hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
passed=0 failed=0
for i in $(seq 1 "$runs"); do
	if "$bin" --warn NoTests "$filter" >"$logs/$i.log" 2>&1; then
		passed=$((passed + 1))
		echo "run $i: ok ($(grep -E 'All tests passed' "$logs/$i.log"))"
	else
		failed=$((failed + 1))
		echo "run $i: FAILED ($logs/$i.log)"
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
