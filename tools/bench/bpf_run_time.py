#!/usr/bin/python3
"""Does the BPF programs' own run time move with the whole hit's cost?
(docs/benchmarks.md, "Why parents miss": a measure taken in the probe.)

  bpf_run_time.py USDTPROF HIT_DRIFT [CHUNKS [N]]

Records `HIT_DRIFT CHUNKS N t` (chunks of N back-to-back calls of an empty
probed function, each timed by the thread's CPU clock) and, every ~0.1 s, reads
the kernel's run-time statistics (kernel.bpf_stats_enabled must be 1; this
script does not set it) of the recording's usdt_entry/usdt_exit programs
(those sharing maps with a program usdtprof holds open). Per interval: the
programs' ns per run and the calls' ns per call; then the spread of each and
of their ratio.
"""
import glob
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time


def bpftool(*args):
    return json.loads(subprocess.run(["bpftool", *args, "-j"], capture_output=True, text=True).stdout or "null")


def programs(pid):
    held = set()
    for f in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            held |= {int(l.split()[1]) for l in open(f) if l.startswith("prog_id:")}
        except OSError:
            pass
    progs = bpftool("prog", "show") or []
    maps = set()
    for p in progs:
        if p["id"] in held:
            maps |= set(p.get("map_ids", []))
    return [(p["id"], p["name"]) for p in progs
            if p.get("name") in ("usdt_entry", "usdt_exit") and maps & set(p.get("map_ids", []))]


def main():
    usdtprof, hit_drift = sys.argv[1], sys.argv[2]
    chunks = sys.argv[3] if len(sys.argv) > 3 else "300"
    n = sys.argv[4] if len(sys.argv) > 4 else "20000"
    if open("/proc/sys/kernel/bpf_stats_enabled").read().strip() != "1":
        sys.exit("kernel.bpf_stats_enabled is 0: no run times to read")
    with tempfile.TemporaryDirectory() as tmp:
        out = open(os.path.join(tmp, "chunks"), "w+")
        rec = subprocess.Popen([usdtprof, "record", "-o", os.path.join(tmp, "p.data"), "--", hit_drift, chunks, n, "t"],
                               stdout=out, stderr=subprocess.DEVNULL)
        progs = []
        while rec.poll() is None and not progs:
            time.sleep(0.2)
            progs = programs(rec.pid)
        print("programs:", ", ".join("%s (id %d)" % (name, i) for i, name in progs))
        samples = []
        while rec.poll() is None:
            rt = rc = 0
            for i, _ in progs:
                p = bpftool("prog", "show", "id", str(i)) or {}
                rt += p.get("run_time_ns", 0)
                rc += p.get("run_cnt", 0)
            samples.append((time.monotonic_ns(), rt, rc))
            time.sleep(0.1)
        out.seek(0)
        calls = [tuple(map(float, l.split())) for l in out if len(l.split()) == 2]
    rows = []
    for (t0, r0, c0), (t1, r1, c1) in zip(samples, samples[1:]):
        inside = [v for t, v in calls if t0 <= t < t1]
        if c1 - c0 >= 1000 and inside:
            rows.append(((r1 - r0) / (c1 - c0), st.mean(inside)))
    for run, call in rows:
        print("%8.1f ns per program run  %8.1f ns per call  ratio %.2f" % (run, call, call / run))
    q = lambda v: "median %.2f, p10 %.2f, p90 %.2f" % (st.median(v), st.quantiles(v, n=10)[0], st.quantiles(v, n=10)[-1])
    print("%d intervals; ns per call: %s; ns per run: %s; call / run: %s" % (
        len(rows), q([c for _, c in rows]), q([r for r, _ in rows]), q([c / r for r, c in rows])))


if __name__ == "__main__":
    main()
