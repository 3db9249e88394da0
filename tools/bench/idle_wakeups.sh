#!/bin/bash
# What an idle target costs usdtprof's threads: their voluntary context switches
# (wakes) over SECONDS of `record -p` and of `monitor -p` on a process that
# makes no call (fair_paths --wait: probes attachable, blocked before its first),
# and usdtprof's CPU time over them.
# Per thread, by name; BASELINE (another usdtprof binary) runs beside, in turn.
#
#   tools/bench/idle_wakeups.sh USDTPROF TARGETS_DIR [SECONDS] [BASELINE]
set -eu
usdtprof=$1 targets=$2 seconds=${3:-10} baseline=${4:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Each thread's name and voluntary switches, one line each.
switches() {
	for t in /proc/"$1"/task/*; do
		echo "$(cat "$t"/comm) $(awk '/^voluntary_ctxt_switches/ {print $2}' "$t"/status)"
	done
}

# The process's utime + stime, in clock ticks.
cpu_ticks() {
	awk '{ print $14 + $15 }' /proc/"$1"/stat
}

measure() { # LABEL USDTPROF MODE
	"$targets"/fair_paths --wait 1 > /dev/null & local app=$!
	sleep 0.2
	if [ "$3" = record ]; then
		"$2" record -p "$app" -o "$dir"/idle.data 2> /dev/null & 
	else
		"$2" monitor -p "$app" -i 5 -o "$dir" > /dev/null 2>&1 &
	fi
	local tool=$!
	sleep 3 # started, calibrated
	switches "$tool" > "$dir"/before
	local cpu_before=$(cpu_ticks "$tool")
	sleep "$seconds"
	switches "$tool" > "$dir"/after
	local cpu_after=$(cpu_ticks "$tool")
	kill -INT "$tool"; wait "$tool" || true
	kill "$app"; wait "$app" 2> /dev/null || true
	paste "$dir"/before "$dir"/after | awk -v label="$1" -v mode="$3" -v s="$seconds" \
		'{ printf "%-10s %-8s thread %-14s %6.1f wakes/s\n", label, mode, $1, ($4 - $2) / s }'
	awk -v label="$1" -v mode="$3" -v t=$((cpu_after - cpu_before)) -v hz="$(getconf CLK_TCK)" -v s="$seconds" \
		'BEGIN { printf "%-10s %-8s CPU (utime + stime) %.2f s in %d s: %.1f%% of a CPU\n", label, mode, t / hz, s, 100 * t / hz / s }'
}

for mode in record monitor; do
	measure this "$usdtprof" "$mode"
	[ -n "$baseline" ] && measure baseline "$baseline" "$mode"
done
