#!/bin/bash
# The probe programs' run time on a real program with many call paths (docs/benchmarks.md,
# "A thread keeps its paths' slots"): `usdtprof record -- python3.11 -m pydoc -k zzzz`
# (pydoc imports every module it finds: ~90,000 call paths, ~530,000 calls, so a thread's
# path cache slot changes hands, and is added to the table, at most exits). The kernel's
# run time of the recording's usdt_entry and usdt_exit (kernel.bpf_stats_enabled), read
# every 0.1 s, the last reading before the programs go: ns per run of each, and exit less
# entry (the exit's flushes, with the host's speed of the moment taken out). With BASELINE
# (another usdtprof binary), its runs alternate with these. Prints each run and the medians.
#
#   many_paths_cost.sh USDTPROF [ROUNDS [BASELINE]]
set -eu
usdtprof=$(realpath "$1") rounds=${2:-3} baseline=${3:+$(realpath "$3")}
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
out=$(mktemp -d)
trap 'sysctl -q kernel.bpf_stats_enabled=$old_stats; rm -rf "$out"' EXIT
sysctl -q kernel.bpf_stats_enabled=1

# prog_stats PID: "entry_ns entry_runs exit_ns exit_runs" of the programs process PID holds.
prog_stats() {
	local ids
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | paste -sd,)
	[ -n "$ids" ] || return 0
	bpftool prog show -j 2>/dev/null | python3 -c '
import json, sys
ids, got = set(sys.argv[1].split(",")), {}
for p in json.load(sys.stdin):
    if p.get("name") in ("usdt_entry", "usdt_exit") and str(p["id"]) in ids:
        got[p["name"]] = (p.get("run_time_ns", 0), p.get("run_cnt", 0))
if len(got) == 2:
    print(*got["usdt_entry"], *got["usdt_exit"])' "$ids"
}

# one_run BINARY: "entry_ns_per_run exit_ns_per_run"
one_run() {
	local pid last="" s
	# An empty directory: pydoc -k walks the current one too.
	mkdir -p "$out/cwd"
	(cd "$out/cwd" && exec "$1" record -o "$out/p.data" -- /usr/bin/python3.11 -m pydoc -k zzzz) \
		>/dev/null 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		s=$(prog_stats $pid)
		[ -n "$s" ] && last=$s
		sleep 0.1
	done
	wait $pid || true
	[ -n "$last" ] || { echo "no reading of the programs" >&2; exit 1; }
	echo "$last" | awk '{ printf "%.1f %.1f %d\n", $1 / $2, $3 / $4, $2 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

variants="this"
[ -n "$baseline" ] && variants="this baseline"
for r in $(seq 1 "$rounds"); do
	for v in $variants; do
		bin=$usdtprof
		[ "$v" = baseline ] && bin=$baseline
		read -r entry exit runs < <(one_run "$bin")
		echo "round $r $v: entry/exit ns per run $entry $exit (exit - entry $(awk "BEGIN { printf \"%+.1f\", $exit - $entry }"); $runs entries)"
		echo "$entry $exit" >> "$out/$v"
	done
done
for v in $variants; do
	echo "$v: usdt_entry median $(awk '{ print $1 }' "$out/$v" | median) ns, usdt_exit median" \
		"$(awk '{ print $2 }' "$out/$v" | median) ns, exit - entry median" \
		"$(awk '{ printf "%+.1f\n", $2 - $1 }' "$out/$v" | median) ns"
done
