#!/bin/sh
# The cost of usdtprof record per runtime: a call-heavy script (N calls of an
# empty function) measures the CPU time of its own loop (user + system: the
# uprobe traps are system time; CPU time, not wall time, so that other load on
# the machine does not count), run plain, with only the runtime's probe switch,
# under `usdtprof record` with empty programs (USDTPROF_BENCH_FLOOR=1: the same
# probes, attached the same way, running a program that does nothing: the
# floor), under bpftrace's empty programs where bpftrace attaches the same
# probes alone, and under `usdtprof record`. Prints the best of RUNS runs of
# each, usdtprof's cost per call, and usdtprof / floor as added cost per probe
# hit ((record - switch) / (floor - switch); issue 19's goal: <= 1.15x).
# Usage: [RUNTIMES="python ruby php java"] tools/bench-runtimes.sh [N] [RUNS] (as root).
set -eu
N=${1:-300000}
RUNS=${2:-3}
U=${USDTPROF:-$(dirname "$0")/../.output/usdtprof}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

cat > "$D/calls.py" <<PY
import time, sys
def f(): pass
n = int(sys.argv[1]); t = time.process_time_ns()
for _ in range(n): f()
print(time.process_time_ns() - t)
PY
cat > "$D/calls.rb" <<RB
def f; end
n = ARGV[0].to_i; t = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :nanosecond)
n.times { f }
puts Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :nanosecond) - t
RB
cat > "$D/calls.php" <<PHP
<?php
function f() {}
function cpu() { \$r = getrusage(); return (\$r["ru_utime.tv_sec"] + \$r["ru_stime.tv_sec"]) * 1000000000
    + (\$r["ru_utime.tv_usec"] + \$r["ru_stime.tv_usec"]) * 1000; }
\$n = (int)\$argv[1]; \$t = cpu();
for (\$i = 0; \$i < \$n; \$i++) f();
echo cpu() - \$t, "\n";
PHP
cat > "$D/Calls.java" <<JAVA
public class Calls {
    static int x;
    static void f() { x++; }
    public static void main(String[] a) {
        java.lang.management.ThreadMXBean m = java.lang.management.ManagementFactory.getThreadMXBean();
        int n = Integer.parseInt(a[0]); long t = m.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) f();
        System.out.println(m.getCurrentThreadCpuTime() - t);
    }
}
JAVA
javac -d "$D" "$D/Calls.java"

# best NAME CMD...: the smallest time of RUNS runs of CMD (its last output line, ns).
best() {
	b=
	for _ in $(seq "$RUNS"); do
		t=$("$@" 2>/dev/null | tail -1)
		if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
	done
	echo "$b"
}

row() { # runtime plain switched floor bpftrace recorded
	awk -v r="$1" -v p="$2" -v s="$3" -v f="$4" -v b="$5" -v u="$6" -v n="$N" 'BEGIN {
		bt = b == "" ? "-" : sprintf("%.1f", b/n)
		printf "%-8s %9.1f %9.1f %10.1f %10s %10.1f %9.1fx %8.2f %8.3fx\n", r, p/n, s/n, f/n, bt, u/n, u/p,
			(u-s)/n/1000, (u-s)/(f-s) }'
}

# The bpftrace floor: empty programs on the runtime's entry and return probes.
bpftrace_floor() { # provider:entry provider:return binary CMD...
	e=$1; x=$2; bin=$3; shift 3
	# bpftrace attaches through tracefs, not mounted on every host.
	command -v bpftrace >/dev/null && [ -e /sys/kernel/tracing/uprobe_events ] || return 0
	best bpftrace -q -e "usdt:$bin:$e {} usdt:$bin:$x {}" -c "$*"
}

echo "N=$N calls, best of $RUNS; ns per call: plain, with the runtime's probe switch only, under record with"
echo "empty programs (the floor), under bpftrace's empty programs, under record; slowdown under record against"
echo "plain; usdtprof's cost per call in us (record - switch); usdtprof / floor, added cost per probe hit"
printf "%-8s %9s %9s %10s %10s %10s %10s %8s %9s\n" runtime plain switch floor bpftrace record slowdown us/call vs-floor
F="env USDTPROF_BENCH_FLOOR=1 $U"
wanted() { case " ${RUNTIMES:-python ruby php java} " in *" $1 "*) return 0 ;; esac; return 1; }
if wanted python; then
P=$(best /usr/bin/python3.11 "$D/calls.py" "$N")
L=$(best $F record -o "$D/p.data" -- /usr/bin/python3.11 "$D/calls.py" "$N")
R=$(best "$U" record -o "$D/p.data" -- /usr/bin/python3.11 "$D/calls.py" "$N")
row python "$P" "$P" "$L" "" "$R"
fi
if wanted ruby; then
P=$(best ruby --disable-gems "$D/calls.rb" "$N")
L=$(best $F record --ruby-call-hook -o "$D/r.data" -- ruby --disable-gems "$D/calls.rb" "$N")
R=$(best "$U" record --ruby-call-hook -o "$D/r.data" -- ruby --disable-gems "$D/calls.rb" "$N")
S=$(best env RUBYOPT=-r/run/usdtprof/ruby-launch.rb ruby --disable-gems "$D/calls.rb" "$N") # the hook record installed
row ruby "$P" "$S" "$L" "" "$R"
fi
if wanted php; then
P=$(best php "$D/calls.php" "$N")
S=$(best env USE_ZEND_DTRACE=1 php "$D/calls.php" "$N")
L=$(best $F record -o "$D/h.data" -- php "$D/calls.php" "$N")
PHP_BIN=$(readlink -f "$(command -v php)")
B=$(USE_ZEND_DTRACE=1 bpftrace_floor php:function__entry php:function__return "$PHP_BIN" "$PHP_BIN" "$D/calls.php" "$N")
R=$(best "$U" record -o "$D/h.data" -- php "$D/calls.php" "$N")
row php "$P" "$S" "$L" "$B" "$R"
fi
if wanted java; then
P=$(best java -cp "$D" Calls "$N")
S=$(best java -XX:+DTraceMethodProbes -cp "$D" Calls "$N")
L=$(best $F record -o "$D/j.data" -- java -cp "$D" Calls "$N")
R=$(best "$U" record -o "$D/j.data" -- java -cp "$D" Calls "$N")
row java "$P" "$S" "$L" "" "$R"
fi
