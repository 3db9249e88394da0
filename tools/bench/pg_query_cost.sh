#!/bin/bash
# `make bench`: what the PostgreSQL preset's programs cost per query, with query__done taking
# its query__start's statement id (the default) and with it hashing the query text again
# (USDTPROF_BENCH_SQL_REHASH=1, as before the id was kept), side by side in one run.
#
#   tools/bench/pg_query_cost.sh USDTPROF [ROUNDS] [SECONDS]
#
# A throwaway server (tests/runtimes/pg.sh), `pgbench -i -q -s 1`, then ROUNDS pairs of runs
# alternating the two variants: `usdtprof record --binary postgres` started, and once it says
# it is recording, `pgbench -n -M simple -c 2 -T SECONDS` with one query a transaction: pgbench's
# select-only script (-S, 58 bytes of text), then a long statement as ORMs send (one row by its
# key, filtered by an IN list of 200 literals: ~1 KB, the most the kernel hashes). The
# kernel's run time of usdt_entry and usdt_exit (kernel.bpf_stats_enabled=1, the programs of
# that usdtprof's own descriptors) is read before and after pgbench: per query (transaction)
# and per run of each program. A third variant, USDTPROF_BENCH_FLOOR=1 (an empty program for
# every probe, attached as usdtprof attaches), gives the floor: per query, usdtprof / floor is
# printed for a trap of TRAP_NS per hit (default 5200, the monitor's measure of this host's
# PostgreSQL probes) and for 500 ns (a host where a uprobe costs what ours do). The trap of each probe hit is the same in both variants and
# is not counted. Exit status 0 when every run worked; skipped without PostgreSQL 15.
set -u
set -o pipefail

USDTPROF=$(readlink -f "${1:?usage: pg_query_cost.sh USDTPROF [ROUNDS] [SECONDS]}")
ROUNDS=${2:-3}
SECONDS_PER_RUN=${3:-4}
POSTGRES=${PG_BIN:-/usr/lib/postgresql/15/bin}/postgres
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

say() { echo "pg_query_cost: $*" >&2; }
if [ ! -x "$POSTGRES" ] || ! command -v pgbench >/dev/null || ! command -v bpftool >/dev/null; then
	say "skipped: needs $POSTGRES, pgbench and bpftool"
	exit 0
fi
[ "$(id -u)" = 0 ] || { say "needs root"; exit 1; }

WORK=$(mktemp -d /tmp/usdtprof-pgcost.XXXXXX) || exit 1
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
REC_PID=
# shellcheck source=../../tests/runtimes/pg.sh
. "$ROOT/tests/runtimes/pg.sh"
cleanup() {
	local status=$?
	[ -n "$REC_PID" ] && kill -INT "$REC_PID" 2>/dev/null && wait "$REC_PID" 2>/dev/null
	[ -n "${PG_DIR:-}" ] && pg_stop "$PG_DIR"
	sysctl -q kernel.bpf_stats_enabled="$OLD_STATS"
	rm -rf "$WORK"
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
sysctl -q kernel.bpf_stats_enabled=1

pg_start -c autovacuum=off >/dev/null || { say "cannot start PostgreSQL"; exit 1; }
pgbench -i -q -s 1 >"$WORK/init.log" 2>&1 || { cat "$WORK/init.log" >&2; exit 1; }

# "entry_ns entry_runs exit_ns exit_runs" of the usdtprof process $1's programs.
prog_stats() {
	local ids
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | paste -sd,)
	bpftool prog show -j | python3 -c '
import json, sys
ids, got = set(sys.argv[1].split(",")), {}
for p in json.load(sys.stdin):
    if p.get("name") in ("usdt_entry", "usdt_exit", "usdt_semaphore") and str(p["id"]) in ids:
        got[p["name"]] = (p.get("run_time_ns", 0), p.get("run_cnt", 0))
e, x, f = (got.get(n, (0, 0)) for n in ("usdt_entry", "usdt_exit", "usdt_semaphore"))
print(e[0], e[1], x[0], x[1], f[0], f[1])' "$ids"
}

# One run of variant $1 with pgbench's script options $2: "txns entry_ns_per_run
# exit_ns_per_run programs_ns_per_query hits_per_query".
one_run() {
	local env=() a b txns
	[ "$1" = rehash ] && env=(USDTPROF_BENCH_SQL_REHASH=1)
	[ "$1" = floor ] && env=(USDTPROF_BENCH_FLOOR=1)
	env "${env[@]}" "$USDTPROF" record --binary "$POSTGRES" -o "$WORK/p.data" >"$WORK/rec.out" 2>"$WORK/rec.err" &
	REC_PID=$!
	for _ in $(seq 1 120); do
		grep -q "Ctrl-C to stop" "$WORK/rec.err" && break
		sleep 0.25
	done
	grep -q "Ctrl-C to stop" "$WORK/rec.err" || { cat "$WORK/rec.err" >&2; return 1; }
	a=$(prog_stats $REC_PID)
	# shellcheck disable=SC2086
	pgbench -n $2 -M simple -c 2 -T "$SECONDS_PER_RUN" >"$WORK/pgbench.log" 2>&1 || { cat "$WORK/pgbench.log" >&2; return 1; }
	b=$(prog_stats $REC_PID)
	kill -INT $REC_PID
	wait $REC_PID || { cat "$WORK/rec.err" >&2; return 1; }
	REC_PID=
	txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.log")
	python3 - "$a" "$b" "$txns" <<'PY'
import sys
a, b, txns = list(map(int, sys.argv[1].split())), list(map(int, sys.argv[2].split())), int(sys.argv[3])
d = [y - x for x, y in zip(a, b)]
t = max(1, txns)
print(txns, "%.1f" % (d[0] / max(1, d[1])), "%.1f" % (d[2] / max(1, d[3])), "%.1f" % ((d[0] + d[2] + d[4]) / t),
      "%.2f" % ((d[1] + d[3] + d[5]) / t))
PY
}

{
	printf '\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid AND bid IN (1'
	for k in $(seq 2 200); do printf ', %d' "$k"; done
	printf ');\n'
} >"$WORK/long.sql"
for script in "-S" "-f $WORK/long.sql"; do
	name=select-only; [ "$script" = -S ] || name=long
	: >"$WORK/kept"; : >"$WORK/rehash"; : >"$WORK/floor"
	for r in $(seq 1 "$ROUNDS"); do
		for v in kept rehash floor; do
			line=$(one_run $v "$script") || { say "run failed"; exit 1; }
			echo "$name round $r, query__done id $v: transactions, entry ns/run, exit ns/run, programs ns/query: $line"
			echo "$line" >>"$WORK/$v"
		done
	done
	python3 - "$WORK" "$name" <<'PY'
import os, statistics, sys
def col(v, i): return [float(l.split()[i]) for l in open(os.path.join(sys.argv[1], v)) if l.strip()]
for i, what in ((2, "usdt_exit ns per run"), (3, "programs ns per query")):
    k, r = statistics.median(col("kept", i)), statistics.median(col("rehash", i))
    print("%s median %s: id kept %.1f, hashed again %.1f, difference %+.1f (%.3fx)" % (sys.argv[2], what, k, r, k - r, k / r))
# Against the floor (the empty program, attached as usdtprof attaches): the traps are the same,
# so per query usdtprof / floor = (hits x trap + programs) / (hits x trap + floor's programs).
k, f, hits = statistics.median(col("kept", 3)), statistics.median(col("floor", 3)), statistics.median(col("kept", 4))
for trap in (float(os.environ.get("TRAP_NS", 5200)), 500.0):
    print("%s per query against the floor: %.1f hits, programs %.2f us vs %.2f us; with a %.0f ns trap a hit: %.3fx" % (
        sys.argv[2], hits, k / 1000, f / 1000, trap, (hits * trap + k) / (hits * trap + f)))
PY
done
