#!/bin/sh
# The cost of usdtprof record per runtime: a call-heavy script (N calls of an
# empty function) times its own loop, run plain, with only the runtime's probe
# switch, and under `usdtprof record`. Prints the best of RUNS runs of each
# and the cost per call. Usage: tools/bench-runtimes.sh [N] [RUNS] (as root).
set -eu
N=${1:-300000}
RUNS=${2:-3}
U=${USDTPROF:-$(dirname "$0")/../.output/usdtprof}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

cat > "$D/calls.py" <<PY
import time, sys
def f(): pass
n = int(sys.argv[1]); t = time.perf_counter()
for _ in range(n): f()
print(int((time.perf_counter() - t) * 1e9))
PY
cat > "$D/calls.rb" <<RB
def f; end
n = ARGV[0].to_i; t = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
n.times { f }
puts Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - t
RB
cat > "$D/calls.php" <<PHP
<?php
function f() {}
\$n = (int)\$argv[1]; \$t = hrtime(true);
for (\$i = 0; \$i < \$n; \$i++) f();
echo hrtime(true) - \$t, "\n";
PHP
cat > "$D/Calls.java" <<JAVA
public class Calls {
    static int x;
    static void f() { x++; }
    public static void main(String[] a) {
        int n = Integer.parseInt(a[0]); long t = System.nanoTime();
        for (int i = 0; i < n; i++) f();
        System.out.println(System.nanoTime() - t);
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

row() { # runtime plain switched recorded
	awk -v r="$1" -v p="$2" -v s="$3" -v u="$4" -v n="$N" 'BEGIN {
		printf "%-8s %10.1f %10.1f %10.1f %8.1fx %8.2f\n", r, p/n, s/n, u/n, u/p, (u-s)/n/1000 }'
}

echo "N=$N calls, best of $RUNS; ns per call: plain, with the runtime's probe switch only, under record;"
echo "slowdown under record against plain; usdtprof's cost per call in us (record - switch)"
printf "%-8s %10s %10s %10s %9s %8s\n" runtime plain switch record slowdown us/call
P=$(best /usr/bin/python3.11 "$D/calls.py" "$N")
R=$(best "$U" record -o "$D/p.data" -- /usr/bin/python3.11 "$D/calls.py" "$N")
row python "$P" "$P" "$R"
P=$(best ruby "$D/calls.rb" "$N")
R=$(best "$U" record --ruby-call-hook -o "$D/r.data" -- ruby "$D/calls.rb" "$N")
S=$(best env RUBYOPT=-r/run/usdtprof/ruby-launch.rb ruby "$D/calls.rb" "$N") # the hook record installed
row ruby "$P" "$S" "$R"
P=$(best php "$D/calls.php" "$N")
S=$(best env USE_ZEND_DTRACE=1 php "$D/calls.php" "$N")
R=$(best "$U" record -o "$D/h.data" -- php "$D/calls.php" "$N")
row php "$P" "$S" "$R"
P=$(best java -cp "$D" Calls "$N")
S=$(best java -XX:+DTraceMethodProbes -cp "$D" Calls "$N")
R=$(best "$U" record -o "$D/j.data" -- java -cp "$D" Calls "$N")
row java "$P" "$S" "$R"
