#!/bin/bash
# The cost of duration distributions per probe hit (issue 17, docs/benchmarks.md):
# the kernel's run time per run of usdt_entry and usdt_exit (kernel.bpf_stats_enabled)
# while `usdtprof record` profiles dist_paths, with distributions kept and without
# (USDTPROF_BENCH_NO_DURATIONS=1: the verifier drops their code), alternating, ROUNDS
# rounds, for one hot path and for 256 paths in turn (a cache eviction at nearly every
# exit). With BASELINE (another usdtprof binary), its runs alternate with them too.
# DIST_BENCH_VARIANTS picks the variants: "on" (as recorded by default), "off" (without
# distributions), "nosteal" (stolen time not read: USDTPROF_BENCH_NO_STEAL=1),
# "perthread" (record --per-thread), "perprocess" (each hit counted per
# process, as `monitor -p A,B` and --all do: USDTPROF_BENCH_PROCESS_HITS=1), "baseline"; DIST_BENCH_ARGS is
# given to dist_paths after PATHS and CALLS ("roots": every call a root). "with:NAME" and
# "without:NAME" run the binary DIST_BENCH_BINS/NAME with and without distributions.
# Prints each run and the medians, and each variant's against the first.
#
#   [DIST_BENCH_PATHS="1 256"] [DIST_BENCH_VARIANTS="on off"] [DIST_BENCH_ARGS=roots] \
#     durations_cost.sh USDTPROF DIST_PATHS [ROUNDS [BASELINE]]
set -eu
usdtprof=$1 target=$2 rounds=${3:-5} baseline=${4:-}
variants=${DIST_BENCH_VARIANTS:-on off}
[ -n "$baseline" ] && [ -z "${DIST_BENCH_VARIANTS:-}" ] && variants="on off baseline"
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q kernel.bpf_stats_enabled=$old_stats' EXIT
sysctl -q kernel.bpf_stats_enabled=1
out=$(mktemp -d)
trap 'sysctl -q kernel.bpf_stats_enabled=$old_stats; rm -rf "$out"' EXIT

# prog_stats PID: "name run_time_ns run_cnt" of usdt_entry/usdt_exit held by process
# PID (their ids in its fds' fdinfo: other usdtprof runs on the machine are not counted).
prog_stats() {
	local ids
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | paste -sd,)
	bpftool prog show -j | python3 -c '
import json, sys
ids = set(sys.argv[1].split(","))
for p in json.load(sys.stdin):
    if p.get("name") in ("usdt_entry", "usdt_exit") and str(p["id"]) in ids:
        print(p["name"], p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$ids"
}

# one_run VARIANT PATHS: ns per run of each program over 2 s of the recording.
one_run() {
	local env=() args=() a b pid child binary=$usdtprof
	[ "$1" = off ] && env=(USDTPROF_BENCH_NO_DURATIONS=1)
	[ "$1" = perprocess ] && env=(USDTPROF_BENCH_PROCESS_HITS=1)
	[ "$1" = nosteal ] && env=(USDTPROF_BENCH_NO_STEAL=1)
	[ "$1" = perthread ] && args=(--per-thread)
	[ "$1" = baseline ] && binary=$baseline
	# with:NAME / without:NAME: the binary $DIST_BENCH_BINS/NAME (throwaway builds side by side).
	case $1 in
	with:*) binary=$DIST_BENCH_BINS/${1#with:} ;;
	without:*) binary=$DIST_BENCH_BINS/${1#without:} env=(USDTPROF_BENCH_NO_DURATIONS=1) ;;
	esac
	env "${env[@]}" "$binary" record "${args[@]}" -o "$out/p.data" -- "$target" "$2" 100000000 ${DIST_BENCH_ARGS:-} \
		>/dev/null 2>&1 &
	pid=$!
	# Loading takes seconds under load: wait for both programs to run.
	for _ in $(seq 1 60); do
		a=$(prog_stats $pid)
		[ "$(echo "$a" | awk '$3 > 0' | wc -l)" = 2 ] && break
		sleep 0.5
	done
	sleep 1; a=$(prog_stats $pid); sleep 2; b=$(prog_stats $pid)
	# The target record launched, by its pid (others may run the same on the host).
	child=$(pgrep -P $pid || true)
	kill -INT $pid; wait $pid 2>/dev/null || true
	[ -n "$child" ] && kill $child 2>/dev/null || true
	python3 - "$a" "$b" <<'PY'
import sys
def parse(s): return {l.split()[0]: list(map(int, l.split()[1:])) for l in s.splitlines() if l.strip()}
a, b = parse(sys.argv[1]), parse(sys.argv[2])
print(" ".join("%.1f" % ((b[k][0] - a[k][0]) / max(1, b[k][1] - a[k][1])) for k in ("usdt_entry", "usdt_exit")))
PY
}

for paths in ${DIST_BENCH_PATHS:-1 256}; do
	for v in $variants; do : > "$out/$v"; done
	for r in $(seq 1 "$rounds"); do
		for v in $variants; do
			line=$(one_run $v $paths)
			echo "paths $paths durations $v round $r: entry/exit ns per run $line"
			echo "$line" >> "$out/$v"
		done
	done
	python3 - "$out" "$paths" $variants <<'PY'
import os, statistics, sys
out, paths, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
def med(v, i): return statistics.median(float(l.split()[i]) for l in open(os.path.join(out, v)) if l.strip())
label = {"on": "with", "off": "without", "perthread": "per-thread", "perprocess": "per-process",
         "nosteal": "steal not read"}
first = variants[0]
for i, name in enumerate(("usdt_entry", "usdt_exit")):
    print("paths %s %s median: " % (paths, name) + ", ".join(
        "%s %.1f ns" % (label.get(v, v), med(v, i)) + ("" if v == first else " (%+.1f)" % (med(v, i) - med(first, i)))
        for v in variants))
# Runs fall in states whole programs share (entry alike ~320 or ~480 ns idle):
# the exit's run time less the entry's of the same run, which keeps no
# distributions, compares the variants across those states.
def exit_less_entry(v):
    return statistics.median(float(l.split()[1]) - float(l.split()[0]) for l in open(os.path.join(out, v)) if l.strip())
print("paths %s exit - entry of each run, median: " % paths + ", ".join(
    "%s %+.1f ns" % ({"on": "with", "off": "without"}.get(v, v), exit_less_entry(v)) for v in variants))
PY
done
