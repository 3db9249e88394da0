#!/bin/bash
# Usage (root, from the checkout): tools/bench/monitor_all_cost.sh [USDTPROF]; docs/monitoring.md, "What it costs".
# The cost of --all's discovery per exec: the kernel programs' run time (bpf stats) and the monitor's CPU.
B=${1:-.output/usdtprof}
USDTPROF_TEST_ALL_UNDER=$$ $B monitor --all -i 60 -d 300 -o "${TMPDIR:-/tmp}/usdtprof-all-cost" 2>"${TMPDIR:-/tmp}/usdtprof-all-cost.err" &
mon=$!
sleep 3
t0=$(awk '{print $14+$15}' /proc/$mon/stat)
n=300
start=$(date +%s.%N)
for i in $(seq $n); do /bin/true; done
end=$(date +%s.%N)
sleep 1
t1=$(awk '{print $14+$15}' /proc/$mon/stat)
bpftool prog show name discover_exec | head -3
bpftool prog show name discover_fork | head -3
echo "execs $n in $(echo "$end - $start" | bc) s; monitor CPU ticks during them: $((t1 - t0)) (1 tick = 10 ms)"
grep VmRSS /proc/$mon/status
kill -TERM $mon; wait $mon
