#!/bin/bash
# `make bench`: what `usdtprof monitor --binary postgres` costs a PostgreSQL 15 server under
# pgbench, at the default budget (1% of the target's CPU time).
#
#   tools/bench/pgbench_monitor.sh USDTPROF
#
# A throwaway server (tests/runtimes/pg.sh), `pgbench -i -q -s 2`, a short unmeasured warm-up,
# then ROUNDS pairs of rounds in alternation (ABBA: off on, on off, ...), each after a
# VACUUM, TRUNCATE of pgbench_history and CHECKPOINT, each `pgbench -n -M simple -c
# CLIENTS`: "off" without monitoring, "on" with `usdtprof monitor --binary postgres -i
# INTERVAL` (started before the round, its start-up CPU excluded and shown apart, stopped
# with SIGTERM after). A round is one pgbench run of ADAPT + SECONDS seconds, logging every
# transaction (-l): its first ADAPT seconds are the adaptation (the monitor's first interval
# starts with every probe attached, to measure their cost in a first window, then keeps
# them for the share the budget allows, as later ones do), the next SECONDS are measured, split at a time without a
# pause in the load (the monitor reacts to idle moments). The adaptation's cost is reported
# on its own line: a transient of each start, where the budget cannot hold yet.
#
# CPU time is read from /proc/PID/stat (utime + stime, in clock ticks): the postmaster's own
# and its reaped children's (cutime + cstime: every backend that exited), plus each live
# child's (checkpointer, walwriter, ..., and the clients' backends at the split); in "on"
# rounds plus the monitor's own CPU. Exact whenever no child exits during the reading: at the
# split the clients' backends live, at the start and end none is left. Per round: CPU per
# transaction; the figure of merit is the ratio on/off of the pooled CPU per transaction (sum
# of CPU over sum of transactions, over all rounds of a kind), goal <= 1.01. pgbench's own
# CPU (the client) is shown apart: it runs no probe. Beside it, the added CPU the kernel
# accounts to the monitor's programs (bpf_enable_stats, on while the monitor runs) plus the
# monitor's own: a figure the machine's other load does not blur.
#
# Environment (to scale it down or up): PGB_ROUNDS (3 per kind), PGB_SECONDS (10 per round),
# PGB_CLIENTS (2), PGB_SCALE (2), PGB_WARMUP (5 s), PGB_ADAPT (4 s; 0: none),
# MONITOR_INTERVAL (2 s), MONITOR_BUDGET (unset: the monitor's default), PGB_KEEP_DIR=1
# keeps the monitor's output directories and logs.
# Exit status: 0 when every run worked (whatever the ratio), 1 on any failure; the server is
# stopped and its directory removed in every case.
set -u
set -o pipefail

USDTPROF=${1:?usage: pgbench_monitor.sh USDTPROF}
USDTPROF=$(readlink -f "$USDTPROF")
ROUNDS=${PGB_ROUNDS:-3}
SECONDS_PER_ROUND=${PGB_SECONDS:-10}
CLIENTS=${PGB_CLIENTS:-2}
SCALE=${PGB_SCALE:-2}
WARMUP=${PGB_WARMUP:-5}
INTERVAL=${MONITOR_INTERVAL:-2}
ADAPT=${PGB_ADAPT:-4}
BUDGET=${MONITOR_BUDGET:-}
POSTGRES=${PG_BIN:-/usr/lib/postgresql/15/bin}/postgres
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TICK_NS=$((1000000000 / $(getconf CLK_TCK)))

say() { echo "pgbench_monitor: $*" >&2; }
die() { say "$*"; exit 1; }

if [ ! -x "$POSTGRES" ] || ! command -v pgbench >/dev/null; then
	say "skipped: needs $POSTGRES and pgbench (Debian: postgresql-15)"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root"

WORK=$(mktemp -d /tmp/usdtprof-pgbench.XXXXXX) || die "cannot create a temporary directory"
MON_PID=
# shellcheck source=../../tests/runtimes/pg.sh
. "$ROOT/tests/runtimes/pg.sh"
cleanup() {
	local status=$?
	if [ -n "$MON_PID" ] && kill -0 "$MON_PID" 2>/dev/null; then
		kill -TERM "$MON_PID" 2>/dev/null
		wait "$MON_PID" 2>/dev/null
	fi
	# Our own pgbench, if a signal interrupted a round.
	[ -n "${PGB_PID:-}" ] && kill "$PGB_PID" 2>/dev/null
	[ -n "${PG_DIR:-}" ] && pg_stop "$PG_DIR"
	if [ "${PGB_KEEP_DIR:-0}" = 1 ]; then
		say "kept $WORK"
	else
		rm -rf "$WORK"
	fi
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Autovacuum off: its workers come and go at random moments, would add noise to either kind
# and make a reading race with their exit.
pg_start -c autovacuum=off -c max_connections=20 >/dev/null || die "cannot start PostgreSQL"
PM=$PG_POSTMASTER_PID
pgbench -i -q -s "$SCALE" >"$WORK/init.log" 2>&1 || { cat "$WORK/init.log" >&2; die "pgbench -i failed"; }

# Utime + stime (+ cutime + cstime of reaped children) of a process, in ticks; 0 if gone.
ticks() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
	# Fields after "(comm) ": state is field 3, utime..cstime are 14..17.
	set -- ${stat##*) }
	echo $((${12} + ${13} + ${14} + ${15}))
}
children() { pgrep -P "$PM" | sort -n | tr '\n' ' '; }
# The server's auxiliary processes, once no client backend is left (alive, or a zombie not yet
# reaped): the set the postmaster returns to between rounds.
settled() {
	local p
	for p in $(children); do
		grep -q '^[^)]*) Z' "/proc/$p/stat" 2>/dev/null && return 1
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '\[local\]' && return 1
	done
	return 0
}
for _ in $(seq 100); do
	settled && break
	sleep 0.1
done
settled || die "pgbench -i's backend did not exit"
AUX=$(children)
# Waits until only the auxiliary processes are left (client backends exited and reaped).
quiesce() {
	local i
	for i in $(seq 100); do
		[ "$(children)" = "$AUX" ] && return 0
		sleep 0.1
	done
	die "client backends did not exit (children: $(children); expected: $AUX)"
}
# The postmaster's CPU with its reaped children's, plus every live child's. Exact at any moment
# no child exits (in a round the clients' backends live throughout).
server_ticks() {
	local sum p
	sum=$(ticks "$PM")
	for p in $(children); do
		sum=$((sum + $(ticks "$p")))
	done
	echo "$sum"
}
metric() { # NAME FILE: the value of an unlabelled metric in a /metrics dump
	awk -v n="$1" '$1 == n { print $2 }' "$2"
}

# Starts one pgbench run in the background, logging every transaction's end time.
start_pgbench() {
	local log=$1 seconds=$2
	rm -f "$log".txn.*
	# The subshell's `times` gives its children's CPU: pgbench's.
	(
		pgbench -n -M simple -c "$CLIENTS" -j 1 -T "$seconds" -l --log-prefix="$log.txn" >"$log" 2>&1 || exit 1
		times >"$log.times"
	) &
	PGB_PID=$!
}
# Waits for it; sets TXNS (all), CLIENT_NS (pgbench's own CPU).
wait_pgbench() {
	local log=$1
	wait "$PGB_PID" || { PGB_PID=; cat "$log" >&2; die "pgbench failed"; }
	PGB_PID=
	TXNS=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$log")
	[ -n "$TXNS" ] && [ "$TXNS" -gt 0 ] || { cat "$log" >&2; die "no result from pgbench"; }
	CLIENT_NS=$(awk 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/);
		printf "%.0f", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1e9 }' "$log.times")
}
# Transactions of the run that ended at or after an epoch time (SECONDS.MICROSECONDS).
txns_since() {
	cat "$1".txn.* | awk -v t="$2" '$5 + $6 / 1e6 >= t { n++ } END { print n + 0 }'
}
epoch() { date +%s.%N; }
sleep_until() { sleep "$(awk -v t="$1" -v now="$(epoch)" 'BEGIN { d = t - now; print (d > 0 ? d : 0) }')"; }

if [ "$WARMUP" -gt 0 ]; then
	pgbench -n -M simple -c "$CLIENTS" -j 1 -T "$WARMUP" >"$WORK/warmup.log" 2>&1 ||
		{ cat "$WORK/warmup.log" >&2; die "pgbench warm-up failed"; }
	quiesce
fi

start_monitor() {
	local log=$1
	"$USDTPROF" monitor --binary "$POSTGRES" -i "$INTERVAL" ${BUDGET:+--budget "$BUDGET"} -o "$2" \
		--listen "127.0.0.1:$PORT" 2>"$log" &
	MON_PID=$!
	for _ in $(seq 300); do
		grep -qs "monitoring" "$log" && return 0
		kill -0 "$MON_PID" 2>/dev/null || { cat "$log" >&2; die "the monitor failed to start"; }
		sleep 0.1
	done
	die "the monitor did not start in 30 s"
}
stop_monitor() {
	local log=$1 status
	kill -TERM "$MON_PID"
	wait "$MON_PID"
	status=$?
	MON_PID=
	[ $status = 0 ] || { cat "$log" >&2; die "the monitor exited with status $status"; }
	grep -q "stopped after" "$log" || die "the monitor did not report its stop"
	[ -n "$(find "$2" -name 'usdtprof-*.data')" ] || die "the monitor wrote no interval profile"
}
# CPU (ns) of the server, plus the monitor's when it runs, at a quiet moment.
snapshot() {
	SNAP_SERVER=$(server_ticks)
	SNAP_MON=0
	[ -n "$MON_PID" ] && SNAP_MON=$(ticks "$MON_PID")
}
# The kernel's run time and run count (bpf_enable_stats, which the monitor turns on) of the
# monitor's own programs, found through its descriptors: "PROBE_NS PROBE_RUNS SWITCH_NS
# SWITCH_RUNS" (usdt_entry + usdt_exit, and the context-switch program track_offcpu).
BPFTOOL=${BPFTOOL:-/usr/sbin/bpftool}
bpf_stats() {
	local ids
	ids=$(grep -h '^prog_id:' /proc/"$MON_PID"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u)
	for id in $ids; do
		"$BPFTOOL" prog show id "$id" 2>/dev/null | head -1
	done | awk '{
		name = ""; ns = 0; cnt = 0
		for (i = 1; i < NF; i++) {
			if ($i == "name") name = $(i + 1)
			if ($i == "run_time_ns") ns = $(i + 1)
			if ($i == "run_cnt") cnt = $(i + 1)
		}
		if (name == "usdt_entry" || name == "usdt_exit") { pn += ns; pc += cnt }
		if (name == "track_offcpu") { sn += ns; sc += cnt }
	} END { printf "%d %d %d %d\n", pn, pc, sn, sc }'
}
fmt_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }
per_txn_us() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.2f", n / t / 1000 }'; }

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
say "$(nproc) CPUs, load $LOAD_START; $ROUNDS rounds each: pgbench -c $CLIENTS -T $((ADAPT + SECONDS_PER_ROUND))," \
	"the last $SECONDS_PER_ROUND s measured; monitor -i $INTERVAL${BUDGET:+ --budget $BUDGET}"
printf '| round | monitor | transactions | tps | server CPU ms | monitor CPU ms | CPU us/txn | client CPU us/txn | duty cycle (last) | est. overhead (last) |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
# The attached share (sampled_fraction) and length of the monitor's first three intervals in $1.
first_intervals() {
	local f
	for f in $(ls "$1"/usdtprof-*.data 2>/dev/null | head -3); do
		"$USDTPROF" report --format json "$f" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("%.3f of %.2f s" % (d["sampled_fraction"], d["duration_ns"] / 1e9), end="; ")'
	done
}
FIRST_LINES=()
declare -A SUM_NS SUM_TXNS SUM_TPS ADAPT_NS ADAPT_TXNS
for k in off on; do
	SUM_NS[$k]=0 SUM_TXNS[$k]=0 SUM_TPS[$k]=0 ADAPT_NS[$k]=0 ADAPT_TXNS[$k]=0
done
PER_TXN_off=() PER_TXN_on=() STARTUP_MS=() BPF_LINES=() ACC_PROBE_NS=0 ACC_SWITCH_NS=0 ACC_MON_NS=0
PORT=$((20000 + $$ % 20000))
for r in $(seq "$ROUNDS"); do
	# ABBA order (off on, on off, ...): a drift of the machine over the run is not charged to
	# one kind.
	order="off on"
	[ $((r % 2)) = 0 ] && order="on off"
	for kind in $order; do
		# Every run starts from the same state: without this the updated tables bloat
		# (autovacuum is off) and each run costs more than the one before.
		psql -q -X -c "VACUUM pgbench_branches, pgbench_tellers, pgbench_accounts" \
			-c "TRUNCATE pgbench_history" -c "CHECKPOINT" >/dev/null 2>"$WORK/vacuum.log" ||
			{ cat "$WORK/vacuum.log" >&2; die "VACUUM failed"; }
		quiesce
		out="$WORK/monitor.$r" log="$WORK/monitor.$r.log"
		mon_ms=- hits=- duty=- overhead=-
		if [ $kind = on ]; then
			start_monitor "$log" "$out"
			STARTUP_MS+=($(($(ticks "$MON_PID") * TICK_NS / 1000000)))
		fi
		# One pgbench run: ADAPT seconds of adaptation (the monitor's first intervals, the first
		# starting with every probe attached), then the measured SECONDS, without a pause between them
		# (a pause would be an idle moment, to which the monitor reacts).
		snapshot
		s0=$SNAP_SERVER m0=$SNAP_MON
		t0=$(epoch)
		start_pgbench "$WORK/pgbench.$r.$kind.log" $((ADAPT + SECONDS_PER_ROUND))
		split=$(awk -v t="$t0" -v a="$ADAPT" 'BEGIN { printf "%.6f", t + a }')
		if [ "$ADAPT" -gt 0 ]; then
			sleep_until "$split"
			snapshot
		fi
		s1=$SNAP_SERVER m1=$SNAP_MON
		[ $kind = on ] && read -r pn0 pc0 sn0 sc0 < <(bpf_stats)
		wait_pgbench "$WORK/pgbench.$r.$kind.log"
		quiesce
		snapshot
		all=$TXNS
		TXNS=$(txns_since "$WORK/pgbench.$r.$kind.log" "$split")
		TPS=$(awk -v n="$TXNS" -v s="$SECONDS_PER_ROUND" 'BEGIN { printf "%.1f", n / s }')
		ADAPT_NS[$kind]=$((ADAPT_NS[$kind] + (s1 - s0 + m1 - m0) * TICK_NS))
		ADAPT_TXNS[$kind]=$((ADAPT_TXNS[$kind] + all - TXNS))
		CLIENT_NS=$((CLIENT_NS * TXNS / all)) # pgbench's CPU is known for the whole run only
		if [ $kind = on ]; then
			kill -0 "$MON_PID" 2>/dev/null || { cat "$log" >&2; die "the monitor died during round $r"; }
			curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics.$r" ||
				say "round $r: cannot read /metrics"
			read -r pn1 pc1 sn1 sc1 < <(bpf_stats)
			hits=$(awk -v c=$((pc1 - pc0)) -v t="$TXNS" 'BEGIN { printf "%.1f", c / t }')
			bpf_probe=$(awk -v n=$((pn1 - pn0)) -v t="$TXNS" 'BEGIN { printf "%.2f", n / t / 1000 }')
			switches=$(awk -v c=$((sc1 - sc0)) -v t="$TXNS" 'BEGIN { printf "%.1f", c / t }')
			bpf_switch=$(awk -v n=$((sn1 - sn0)) -v t="$TXNS" 'BEGIN { printf "%.2f", n / t / 1000 }')
			trap_ns=$(sed -n 's/.*a hit costs \([0-9]*\) ns (trap).*/\1/p' "$log")
			probe_cost=$(awk -v h="$hits" -v tr="${trap_ns:-0}" -v p="$bpf_probe" 'BEGIN { printf "%.2f", h * tr / 1000 + p }')
			BPF_LINES+=("| $r | $hits | $bpf_probe | ${trap_ns:-?} | $probe_cost | $switches | $bpf_switch |")
			ACC_PROBE_NS=$((ACC_PROBE_NS + (pc1 - pc0) * ${trap_ns:-0} + pn1 - pn0))
			ACC_SWITCH_NS=$((ACC_SWITCH_NS + sn1 - sn0))
			ACC_MON_NS=$((ACC_MON_NS + (SNAP_MON - m1) * TICK_NS))
			duty=$(printf '%.4f' "$(metric usdtprof_duty_cycle "$WORK/metrics.$r")")
			overhead=$(printf '%.4f' "$(metric usdtprof_estimated_overhead_ratio "$WORK/metrics.$r")")
			stop_monitor "$log" "$out"
			mon_ms=$(((SNAP_MON - m1) * TICK_NS / 1000000))
			FIRST_LINES+=("round $r: $(first_intervals "$out")")
		fi
		server_ns=$(((SNAP_SERVER - s1) * TICK_NS))
		total_ns=$((server_ns + (SNAP_MON - m1) * TICK_NS))
		SUM_NS[$kind]=$((SUM_NS[$kind] + total_ns))
		SUM_TXNS[$kind]=$((SUM_TXNS[$kind] + TXNS))
		SUM_TPS[$kind]=$(awk -v a="${SUM_TPS[$kind]}" -v b="$TPS" 'BEGIN { print a + b }')
		per_txn=$(per_txn_us "$total_ns" "$TXNS")
		eval "PER_TXN_$kind+=($per_txn)"
		printf '| %d | %s | %d | %s | %d | %s | %s | %s | %s | %s |\n' "$r" "$kind" "$TXNS" "$TPS" \
			$((server_ns / 1000000)) "$mon_ms" "$per_txn" "$(per_txn_us "$CLIENT_NS" "$TXNS")" "$duty" "$overhead"
	done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
off_txn=$(per_txn_us "${SUM_NS[off]}" "${SUM_TXNS[off]}")
on_txn=$(per_txn_us "${SUM_NS[on]}" "${SUM_TXNS[on]}")
cpu_ratio=$(fmt_ratio "$on_txn" "$off_txn")
# The on/off ratio of each round (the two runs next to each other), their median.
pair_ratios=()
for i in "${!PER_TXN_on[@]}"; do
	pair_ratios+=("$(fmt_ratio "${PER_TXN_on[$i]}" "${PER_TXN_off[$i]}")")
done
med_ratio=$(median "${pair_ratios[@]}")
tps_ratio=$(fmt_ratio "${SUM_TPS[on]}" "${SUM_TPS[off]}")
spread=$(printf '%s\n' "${PER_TXN_off[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", (v[NR] - v[1]) / v[1] * 100 }')
echo
printf '| round (on) | probe hits/txn | probe programs us/txn | trap ns/hit | probes us/txn (traps + programs) | context switches/txn (machine-wide) | switch program us/txn |\n|---|---|---|---|---|---|---|\n'
printf '%s\n' "${BPF_LINES[@]}"
echo
printf 'CPU per transaction (server + monitor), pooled over the measured rounds: off %s us, on %s us\n' "$off_txn" "$on_txn"
if [ "$ADAPT" -gt 0 ]; then
	a_off=$(per_txn_us "${ADAPT_NS[off]}" "${ADAPT_TXNS[off]}") a_on=$(per_txn_us "${ADAPT_NS[on]}" "${ADAPT_TXNS[on]}")
	printf 'adaptation (the first %s s after the monitor starts): off %s us, on %s us per transaction: %sx\n' \
		"$ADAPT" "$a_off" "$a_on" "$(fmt_ratio "$a_on" "$a_off")"
fi
printf 'first three intervals, probes attached (sampled_fraction) of each interval:\n'
printf '  %s\n' "${FIRST_LINES[@]}"
printf 'monitor start-up (loading, calibration, ELF parsing; not counted above): %s ms CPU each\n' "${STARTUP_MS[*]}"
# What the kernel and /proc account to the monitor, against the "off" CPU per transaction:
# independent of the machine's noise, unlike the on/off ratio.
acc() { awk -v n="$1" -v t="${SUM_TXNS[on]}" -v off="$off_txn" 'BEGIN { printf "%.2f us (%.2f%%)", n / t / 1000, n / t / 1000 / off * 100 }'; }
printf 'accounted added CPU per transaction: probes (trap + programs) %s, context-switch program %s\n' \
	"$(acc "$ACC_PROBE_NS")" "$(acc "$ACC_SWITCH_NS")"
printf '  (every switch of the machine), monitor process %s; total %s\n' "$(acc "$ACC_MON_NS")" \
	"$(acc $((ACC_PROBE_NS + ACC_SWITCH_NS + ACC_MON_NS)))"
printf 'spread of the "off" rounds (max - min) / min: %s%% (the noise floor of one round)\n' "$spread"
printf 'load average: %s at the start, %s at the end\n' "$LOAD_START" "$LOAD_END"
verdict=$(awk -v r="$cpu_ratio" 'BEGIN { print (r <= 1.01 ? "within" : "ABOVE") }')
printf 'on/off ratio of CPU per transaction, round by round: %s\n' "${pair_ratios[*]}"
printf 'monitor on/off: CPU per transaction %sx (median of the rounds %sx), tps %sx; added CPU %s%% (goal <= 1%%: %s)\n' \
	"$cpu_ratio" "$med_ratio" "$tps_ratio" "$(awk -v r="$cpu_ratio" 'BEGIN { printf "%+.2f", (r - 1) * 100 }')" "$verdict"
