#!/bin/bash
# `make bench`: what `record` pays at its stop for a million call paths, and a build beside another.
#
#   tools/bench/record_stop.sh PATH_BENCH PATH_FILL [BASELINE_PATH_BENCH]
#
# PATH_BENCH (tools/bench/path_bench.cpp) runs PATH_FILL 1000 under the engine's probes (1,001,001
# call paths), then times one batched read of the table and add_call_paths, as `record`'s stop
# does, and keeps that read in RECORD_STOP_DIR (default .output/bench/record_stop: 408 MB). Then
# add_call_paths runs again on that same recording, RECORD_STOP_RUNS times (default 3): PATH_BENCH
# --replay and, with BASELINE_PATH_BENCH (a build of another commit), the baseline's --replay in
# turn (so that the machine's load weighs on both alike); each writes the profile it made, and
# the two must be byte-identical (cmp). Prints each run's figures (elapsed, CPU) and, with a
# baseline, the ratio new / baseline of the best CPU times. Also /usr/bin/time's peak RSS of each
# replay (the recording itself, loaded, is 408 MB of it).
set -eu
bench=${1:?usage: record_stop.sh PATH_BENCH PATH_FILL [BASELINE_PATH_BENCH]}
fill=${2:?usage: record_stop.sh PATH_BENCH PATH_FILL [BASELINE_PATH_BENCH]}
baseline=${3:-}
dir=${RECORD_STOP_DIR:-.output/bench/record_stop}
runs=${RECORD_STOP_RUNS:-3}
mkdir -p "$dir"
echo "record's stop, once: $("$bench" "$fill" 1000 0 "$dir")"
# "CPU" of the replay's own line, then the peak RSS of /usr/bin/time -v.
replay() {
	local out
	out=$(/usr/bin/time -v "$1" --replay "$dir" "$2" 2>"$dir/time.txt")
	local rss
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
	echo "$out, peak RSS $((rss / 1024)) MB" >&2
	sed -n 's/.*(CPU \([0-9.]*\)).*/\1/p' <<<"$out"
}
best_new="" best_old=""
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
for i in $(seq 1 "$runs"); do
	echo "run $i:" >&2
	echo -n "  new: " >&2
	best_new=$(min "$best_new" "$(replay "$bench" "$dir/new.data")")
	if [ -n "$baseline" ]; then
		echo -n "  baseline: " >&2
		best_old=$(min "$best_old" "$(replay "$baseline" "$dir/baseline.data")")
		cmp "$dir/new.data" "$dir/baseline.data" || { echo "the profiles differ" >&2; exit 1; }
	fi
done
echo "add_call_paths, best CPU of $runs: new $best_new s${baseline:+, baseline $best_old s, ratio $(awk -v a="$best_new" -v b="$best_old" 'BEGIN { printf "%.2fx", a / b }'); profiles byte-identical}"
