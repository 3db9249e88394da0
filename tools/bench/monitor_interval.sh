#!/bin/bash
# `make bench`: what a `monitor` interval pays for a million call paths, and a build beside another.
#
#   tools/bench/monitor_interval.sh PATH_BENCH PATH_FILL [BASELINE_PATH_BENCH]
#
# PATH_BENCH --monitor PATH_FILL 1000 3 (tools/bench/path_bench.cpp) runs PATH_FILL's 1,001,001
# call paths three times under the engine's probes and, after each round, times a monitor interval
# as MonitorSession::run makes one: the read, the deltas, the naming, the files; one interval in
# which nothing ran too, and the last one after PATH_FILL's exit. Each run checks that the
# intervals' calls add up to every path's. With BASELINE_PATH_BENCH (a build of another commit),
# the two run in turn, MONITOR_INTERVAL_RUNS times each (default 2), so that the machine's load
# weighs on both alike; each run's lines say the time and the load average it started at.
set -eu
bench=${1:?usage: monitor_interval.sh PATH_BENCH PATH_FILL [BASELINE_PATH_BENCH]}
fill=${2:?usage: monitor_interval.sh PATH_BENCH PATH_FILL [BASELINE_PATH_BENCH]}
baseline=${3:-}
runs=${MONITOR_INTERVAL_RUNS:-2}
for i in $(seq 1 "$runs"); do
	for b in "$bench" ${baseline:+"$baseline"}; do
		echo "run $i, $b, $(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg):"
		/usr/bin/time -f "(whole run: elapsed %e s, user %U s, system %S s, peak RSS %M KB)" "$b" --monitor "$fill" 1000 3
		echo
	done
done
