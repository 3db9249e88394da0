#!/bin/bash
# usage: tools/bench/python_hit_cost.sh USDTPROF LABEL: records /usr/bin/python3.11 running a
# 12 s loop of calls of one function and
# prints usdt_entry's and usdt_exit's run time per run over 3 s once both run
# (kernel.bpf_stats_enabled: run_time_ns / run_cnt of the recording's own programs;
# the reading is tools/bench/hit_cost.sh's).
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/loop.py" <<'PY'
import time
def f(x):
    return x + 1
t = time.time()
while time.time() - t < 12:
    for i in range(1000):
        f(i)
PY
"$(dirname "$0")/hit_cost.sh" "$1" "$2" /usr/bin/python3.11 "$dir/loop.py"
