#!/bin/bash
# usage: tools/bench/hit_cost.sh USDTPROF LABEL COMMAND...: records COMMAND (which should run
# for more than ~5 s) and prints usdt_entry's and usdt_exit's run time per run over 3 s once
# both run (kernel.bpf_stats_enabled: run_time_ns / run_cnt of the recording's own programs,
# found through its /proc/PID/fdinfo, all programs of each name summed).
# The shared part of python_hit_cost.sh and ruby_hit_cost.sh; HIT_COST_ARGS: more
# arguments of record (ruby_hit_cost.sh's RUBY_HOOK=1: --ruby-call-hook).
sysctl -q kernel.bpf_stats_enabled=1
usdtprof=$1 label=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$usdtprof" record ${HIT_COST_ARGS:-} -o "$dir/profile" -- "$@" >/dev/null 2>&1 &
rec=$!
sample() {
	for fd in /proc/$rec/fdinfo/*; do
		id=$(awk '/^prog_id:/{print $2}' $fd 2>/dev/null)
		[ -n "$id" ] && bpftool prog show id $id -j 2>/dev/null
	done | python3 -c '
import sys, json
d = json.JSONDecoder(); s = sys.stdin.read(); i = 0; seen = {}; ids = set()
while i < len(s):
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    o, i = d.raw_decode(s, i)
    if o.get("name") in ("usdt_entry", "usdt_exit") and o["id"] not in ids:
        ids.add(o["id"]); t, n = seen.get(o["name"], (0, 0)); seen[o["name"]] = (t + o.get("run_time_ns", 0), n + o.get("run_cnt", 0))
print(" ".join("%s=%d,%d" % (k, *v) for k, v in sorted(seen.items())))'
}
# Sampled once both programs run (start-up under load can take seconds).
for i in $(seq 50); do sleep 0.5; a=$(sample); [[ $a == *usdt_exit=* ]] && break; done
sleep 0.5; a=$(sample); sleep 3; b=$(sample)
wait $rec
python3 - "$label" "$a" "$b" <<'PY'
import sys
label, a, b = sys.argv[1:]
pa = {k: tuple(map(int, v.split(","))) for k, v in (x.split("=") for x in a.split())}
pb = {k: tuple(map(int, v.split(","))) for k, v in (x.split("=") for x in b.split())}
out = []
for k in ("usdt_entry", "usdt_exit"):
    dt = pb[k][0] - pa[k][0]; dn = pb[k][1] - pa[k][1]
    out.append("%s %.1f ns/run (%d runs)" % (k, dt / dn, dn))
print(label, *out, sep="  ")
PY
