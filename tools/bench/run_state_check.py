#!/usr/bin/python3
"""Would the BPF programs' run time carry the machine's state from the
target's run to its calibration? (docs/benchmarks.md, "Overhead compensation
accuracy", 2026-12-03 late.) No change to usdtprof: bpftool reads the run-time
statistics (kernel.bpf_stats_enabled must be 1) of the recording's
usdt_entry/usdt_exit programs while the target runs and, after its exit,
while the calibration runs.

  run_state_check.py USDTPROF TARGETS_DIR WORK_NS RUNS

Per run of `record -- overhead WORK_NS 20`: the calibrated own and caller
costs, the costs the run's unprobed truth implies (medians over its batches:
own = raw leaf self - truth, caller = (raw mid self - truth - own) / 10), the
programs' ns per run in each phase, and the calibrated costs scaled by their
ratio. K (env): a ratio fixed beforehand (from an earlier set): the scaled
costs are also shown divided by it. Runs whose samples lost the programs
(usdtprof exiting between two reads) are left out.
"""
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpf_run_time as B  # noqa: E402


def children(pid):
    out = []
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            out += open("/proc/%d/task/%s/children" % (pid, t)).read().split()
        except OSError:
            pass
    return [int(x) for x in out]


def alive(pid):
    try:
        return open("/proc/%d/stat" % pid).read().split()[2] != "Z"
    except OSError:
        return False


def one(usdtprof, target, work):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "p.data")
        rec = subprocess.Popen([usdtprof, "record", "-o", data, "--", target, str(work), "20"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        progs, child, samples = [], None, []
        while rec.poll() is None and not progs:
            time.sleep(0.02)
            progs = B.programs(rec.pid)
        while rec.poll() is None:
            if child is None:
                c = children(rec.pid)
                child = c[0] if c else None
            rt = rc = 0
            ok = True
            for i, _ in progs:
                p = B.bpftool("prog", "show", "id", str(i)) or {}
                ok = ok and "run_cnt" in p
                rt += p.get("run_time_ns", 0)
                rc += p.get("run_cnt", 0)
            if ok:
                samples.append((child is not None and alive(child), rt, rc))
        out = rec.stdout.read()
        rep = json.loads(subprocess.run([usdtprof, "report", data, "--format", "json"],
                                        capture_output=True, text=True, check=True).stdout)
    truth = {}
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "truth":
            truth[int(f[1])] = (float(f[2]), float(f[3]))
    up = [k for k, s in enumerate(samples) if s[0]]
    down = [k for k, s in enumerate(samples) if up and k > up[-1]]
    if len(up) < 2 or len(down) < 2:
        return None
    a0, a1, d0, d1 = samples[up[0]], samples[up[-1]], samples[down[0]], samples[down[-1]]
    if a1[2] <= a0[2] or d1[2] <= d0[2]:
        return None
    stacks, leaf, mid = [], {}, {}
    for p in rep["paths"]:
        stacks.append((stacks[p["parent"]] if p["parent"] is not None else []) + [p["name"]])
    for p, s in zip(rep["paths"], stacks):
        if len(s) >= 2 and s[0].startswith("batch"):
            (leaf if s[-1] == "leaf" else mid)[int(s[0][5:])] = (p["raw_self_ns"] - p["self_offcpu_ns"]) / p["calls"]
    own = st.median(leaf[b] - truth[b][0] for b in leaf)
    cal = rep["calibration"]["kinds"][0]
    return dict(own=cal["own_ns"], caller=cal["caller_ns"], imp_own=own,
                imp_caller=st.median((mid[b] - truth[b][1] - own) / 10 for b in mid),
                run=(a1[1] - a0[1]) / (a1[2] - a0[2]), cal=(d1[1] - d0[1]) / (d1[2] - d0[2]))


def main():
    usdtprof, targets, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if open("/proc/sys/kernel/bpf_stats_enabled").read().strip() != "1":
        sys.exit("kernel.bpf_stats_enabled is 0: no run times to read")
    k = float(os.environ.get("K") or 1)
    res = []
    for i in range(runs):
        r = one(usdtprof, os.path.join(targets, "overhead"), work)
        if not r:
            print("%d: left out (the programs were lost between reads)" % i)
            continue
        res.append(r)
        s = r["run"] / r["cal"] / k
        print("%d own %4.0f caller %4.0f | implied own %4.0f caller %4.0f | ns per program run: target %5.1f, "
              "calibration %5.1f | scaled own %4.0f caller %4.0f | load %s" % (
                  i, r["own"], r["caller"], r["imp_own"], r["imp_caller"], r["run"], r["cal"], r["own"] * s,
                  r["caller"] * s, open("/proc/loadavg").read().split()[0]), flush=True)
    if not res:
        return
    m = lambda v: "median %+.1f, mean abs %.1f" % (st.median(v), st.mean(abs(x) for x in v))
    for c in ("own", "caller"):
        print("%s: calibrated - implied %s | scaled - implied %s" % (
            c, m([r[c] - r["imp_" + c] for r in res]),
            m([r[c] * r["run"] / r["cal"] / k - r["imp_" + c] for r in res])))
    print("target / calibration ns per run:", " ".join("%.3f" % (r["run"] / r["cal"]) for r in res),
          "median %.3f" % st.median(r["run"] / r["cal"] for r in res))


if __name__ == "__main__":
    main()
