#!/bin/bash
# `make bench`: `usdtprof monitor` for a thousand short intervals against a target whose
# processes, threads, names and call paths come and go; its memory must stay flat and its
# directory bounded by --keep.
#
#   tools/bench/monitor_soak.sh USDTPROF CHURN
#
# CHURN is tools/bench/churn.c: a long-lived process that forks short-lived children (some
# re-exec'd, with per-process function names and comms) and starts short-lived threads. The
# monitor runs as `usdtprof monitor --binary CHURN -i INTERVAL --keep KEEP -d SECONDS --listen
# ...`, so every child is profiled, as every backend of a server is. Every SAMPLE seconds:
# the monitor's VmRSS (/proc/PID/status), its open descriptors, its intervals so far
# (usdtprof_intervals_total from /metrics; about 7 per second at -i 0.05, as each interval
# also waits 20 ms for the threads' path caches), the files in its directory and the entries
# of its kernel maps of call paths and captured names.
#
# Fails (exit 1) when: RSS at the end exceeds the first sample at or after the first third
# of the run by more than RSS_GROWTH percent (default 20) or RSS_GROWTH_KB KiB (default 512:
# a monitor that leaks a little per process or interval stays under 20% in a short run,
# while a sound one is flat to a few KiB once warm); the directory ever holds more
# than 2 x KEEP interval files (.data and .pb.gz per interval; a few more while one is
# written) or more than KEEP intervals at the end; the open descriptors grow by
# more than 8; the monitor crashes or exits non-zero; the target dies.
#
# Environment: SOAK_SECONDS (150), SOAK_INTERVAL (0.05), SOAK_KEEP (20), SOAK_SAMPLE (5 s),
# SOAK_CHILDREN (20 per second), SOAK_THREADS (50 per second), RSS_GROWTH (20),
# RSS_GROWTH_KB (512).
set -u
set -o pipefail

USDTPROF=$(readlink -f "${1:?usage: monitor_soak.sh USDTPROF CHURN}")
CHURN=$(readlink -f "${2:?usage: monitor_soak.sh USDTPROF CHURN}")
SECONDS_TOTAL=${SOAK_SECONDS:-150}
INTERVAL=${SOAK_INTERVAL:-0.05}
KEEP=${SOAK_KEEP:-20}
SAMPLE=${SOAK_SAMPLE:-5}
CHILDREN=${SOAK_CHILDREN:-20}
THREADS=${SOAK_THREADS:-50}
GROWTH=${RSS_GROWTH:-20}
GROWTH_KB=${RSS_GROWTH_KB:-512}

say() { echo "monitor_soak: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root"
WORK=$(mktemp -d /tmp/usdtprof-soak.XXXXXX) || die "cannot create a temporary directory"
TARGET_PID= MON_PID=
cleanup() {
	local status=$?
	for p in $MON_PID $TARGET_PID; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$WORK"
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The target outlives the monitor by a few seconds.
"$CHURN" $((SECONDS_TOTAL + 30)) "$CHILDREN" "$THREADS" >"$WORK/churn.out" 2>&1 &
TARGET_PID=$!
for _ in $(seq 50); do
	grep -qs ready "$WORK/churn.out" && break
	sleep 0.1
done
grep -qs ready "$WORK/churn.out" || die "the target did not start"

PORT=$((20000 + ($$ + 7) % 20000))
"$USDTPROF" monitor --binary "$CHURN" -i "$INTERVAL" --keep "$KEEP" -o "$WORK/out" -d "$SECONDS_TOTAL" \
	--listen "127.0.0.1:$PORT" 2>"$WORK/monitor.log" &
MON_PID=$!
for _ in $(seq 300); do
	grep -qs monitoring "$WORK/monitor.log" && break
	kill -0 "$MON_PID" 2>/dev/null || { cat "$WORK/monitor.log" >&2; die "the monitor failed to start"; }
	sleep 0.1
done
grep -qs monitoring "$WORK/monitor.log" || die "the monitor did not start in 30 s"
say "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); monitor -i $INTERVAL --keep $KEEP for" \
	"$SECONDS_TOTAL s; target: $CHILDREN processes and $THREADS threads per second"

# Entries of one of the monitor's BPF maps, by name (found through its descriptors).
BPFTOOL=${BPFTOOL:-/usr/sbin/bpftool}
map_entries() {
	local id try
	for try in 1 2 3; do
		map_entries_once "$1" && return
	done
	echo "?"
}
map_entries_once() {
	local id
	for id in $(grep -h '^map_id:' /proc/"$MON_PID"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u); do
		if "$BPFTOOL" map show id "$id" 2>/dev/null | head -1 | grep -q " name $1 "; then
			"$BPFTOOL" map dump id "$id" 2>/dev/null | grep -cE '^[[:space:]]*("key"|key):'
			return 0
		fi
	done
	return 1
}
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null; }
ticks() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return; set -- ${s##*) }; echo $((${12} + ${13})); }
printf '| time s | intervals | RSS KiB | fds | files in dir | paths map | names map | monitor CPU %% |\n|---|---|---|---|---|---|---|---|\n'
start=$(date +%s.%N)
times=() rss=() intervals=() files_max=0 fds_first= fds_last= paths_last=? last_ticks=$(ticks "$MON_PID") last_t=$start
hz=$(getconf CLK_TCK)
while kill -0 "$MON_PID" 2>/dev/null; do
	sleep "$SAMPLE"
	kill -0 "$TARGET_PID" 2>/dev/null || die "the target died"
	r=$(rss_kb "$MON_PID")
	[ -n "$r" ] || break # the monitor ended (its -d) between the check and now
	now=$(date +%s.%N)
	t=$(awk -v a="$now" -v b="$start" 'BEGIN { printf "%.0f", a - b }')
	n=$(curl -s --max-time 2 "http://127.0.0.1:$PORT/metrics" | awk '$1 == "usdtprof_intervals_total" { print $2 }')
	f=$(find "$WORK/out" -maxdepth 1 -name 'usdtprof-*' 2>/dev/null | wc -l)
	fds=$(ls "/proc/$MON_PID/fd" 2>/dev/null | wc -l)
	tk=$(ticks "$MON_PID")
	cpu=$(awk -v a="${tk:-0}" -v b="$last_ticks" -v hz="$hz" -v t1="$now" -v t0="$last_t" \
		'BEGIN { printf "%.1f", (a - b) / hz / (t1 - t0) * 100 }')
	last_ticks=${tk:-$last_ticks} last_t=$now
	[ "$f" -gt "$files_max" ] && files_max=$f
	fds_first=${fds_first:-$fds} fds_last=$fds
	times+=("$t") rss+=("$r") intervals+=("${n:-?}")
	pm=$(map_entries paths) nm=$(map_entries names)
	paths_last=$pm
	printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "${n:-?}" "$r" "$fds" "$f" "$pm" "$nm" "$cpu"
done
wait "$MON_PID"
status=$?
MON_PID=
[ $status = 0 ] || { tail -n 20 "$WORK/monitor.log" >&2; die "the monitor exited with status $status"; }
done_line=$(grep "stopped after" "$WORK/monitor.log") || die "the monitor did not report its stop"
final_files=$(find "$WORK/out" -maxdepth 1 -name 'usdtprof-*' | wc -l)
final_data=$(find "$WORK/out" -maxdepth 1 -name 'usdtprof-*.data' | wc -l)
kill -TERM "$TARGET_PID"
wait "$TARGET_PID"
TARGET_PID=
made=$(grep children "$WORK/churn.out")

n=${#rss[@]}
[ "$n" -ge 3 ] || die "too few samples ($n)"
# The first sample at or after a third of the run: the monitor's state has grown to its
# working size by then (buffers, maps, the metrics' series).
third=0
for i in $(seq 0 $((n - 1))); do
	if [ "${times[$i]}" -ge $((SECONDS_TOTAL / 3)) ]; then third=$i; break; fi
done
mid=$((n / 2))
echo
echo "monitor: ${done_line#usdtprof: }; target: $made"
printf 'RSS KiB: first %s, at a third (%s s) %s, middle (%s s) %s, end (%s s) %s; growth from a third to the end: %s%%\n' \
	"${rss[0]}" "${times[$third]}" "${rss[$third]}" "${times[$mid]}" "${rss[$mid]}" "${times[$((n - 1))]}" \
	"${rss[$((n - 1))]}" "$(awk -v a="${rss[$((n - 1))]}" -v b="${rss[$third]}" 'BEGIN { printf "%+.1f", (a - b) / b * 100 }')"
# Least-squares slope of RSS over the samples from a third on, per minute of the run.
slope=$(for i in $(seq "$third" $((n - 1))); do echo "${times[$i]} ${rss[$i]}"; done | awk '
	{ n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
	END { d = n * sxx - sx * sx; printf "%.0f", d ? (n * sxy - sx * sy) / d * 60 : 0 }')
printf 'RSS slope from a third to the end: %s KiB per minute (%s MiB per day at this churn)\n' "$slope" \
	"$(awk -v s="$slope" 'BEGIN { printf "%.0f", s * 60 * 24 / 1024 }')"
printf 'files in the directory: at most %s while running, %s at the end (%s intervals; --keep %s)\n' \
	"$files_max" "$final_files" "$final_data" "$KEEP"
printf 'open descriptors: %s at the first sample, %s at the last; kernel call-path map: %s entries at the last\n' \
	"$fds_first" "$fds_last" "$paths_last"
fail=0
if awk -v a="${rss[$((n - 1))]}" -v b="${rss[$third]}" -v g="$GROWTH" 'BEGIN { exit !(a > b * (1 + g / 100)) }'; then
	say "FAIL: RSS grew by more than $GROWTH% from a third of the run to its end"
	fail=1
elif [ $((rss[n - 1] - rss[third])) -gt "$GROWTH_KB" ]; then
	say "FAIL: RSS grew by $((rss[n - 1] - rss[third])) KiB (more than $GROWTH_KB) from a third of the run to its end"
	fail=1
fi
# While an interval is written the directory holds KEEP + 1 intervals and temporary files.
if [ "$files_max" -gt $((2 * KEEP + 4)) ] || [ "$final_data" -gt "$KEEP" ]; then
	say "FAIL: more interval files than --keep $KEEP allows"
	fail=1
fi
if [ $((fds_last - fds_first)) -gt 8 ]; then
	say "FAIL: open descriptors grew from $fds_first to $fds_last"
	fail=1
fi
[ $fail = 0 ] && echo "soak: passed (RSS within $GROWTH% and $GROWTH_KB KiB, files bounded by --keep, descriptors flat)"
exit $fail
