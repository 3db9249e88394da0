#!/usr/bin/python3
"""Accuracy of usdtprof's overhead compensation (docs/benchmarks.md).

Records tests/targets/overhead (a leaf of WORK_NS fixed work, a mid of
WORK_NS own work around 10 leaves; the truth timed unprobed in the same
program, per batch) and compares, per batch, the compensated on-CPU self
time per call of leaf and mid with the truth. The error printed is the
median over 60 batches of each batch's error against its own truth: a
batch's truth and probed calls alternate every ~100 us, so they see one
speed of the host, where the median of all truths and the median of all
compensated times can come from two speeds when the host's moves within a
run (docs/benchmarks.md, "Errors per batch"). The truth and compensated
columns are the medians of each.

  compensation.py USDTPROF TARGETS_DIR [WORK_NS ...]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(usdtprof, target, work_ns, batches=60):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "p.data")
        rec = subprocess.run([usdtprof, "record", "-o", data, "--", target, str(work_ns), str(batches)],
                             capture_output=True, text=True, check=True)
        truth = {}
        for line in rec.stdout.splitlines():
            f = line.split()
            if f[0] == "truth":
                truth[int(f[1])] = (float(f[2]), float(f[3]))
        rep = json.loads(subprocess.run([usdtprof, "report", data, "--format", "json"],
                                        capture_output=True, text=True, check=True).stdout)
    cal = rep["calibration"]["kinds"][0]
    rows = []
    # Report JSON version 2 (docs/report-json.md): each path names its parent
    # by id, an earlier path; its stack is its parent's and its own name.
    stacks = []
    for p in rep["paths"]:
        stacks.append((stacks[p["parent"]] if p["parent"] is not None else []) + [p["name"]])
    for p, s in zip(rep["paths"], stacks):
        if len(s) < 2 or not s[0].startswith("batch"):
            continue
        b = int(s[0][5:])
        comp = p["self_oncpu_ns"] / p["calls"]
        raw = (p["raw_self_ns"] - p["self_offcpu_ns"]) / p["calls"]
        rows.append((s[-1], b, comp, raw, truth[b][0 if s[-1] == "leaf" else 1]))
    out = {"work_ns": work_ns, "own_ns": cal["own_ns"], "caller_ns": cal["caller_ns"],
           "calibration_ms": rep["calibration"]["cost_ns"] / 1e6}
    for fn in ("leaf", "mid"):
        r = [x for x in rows if x[0] == fn]
        comp = statistics.median(x[2] for x in r)
        raw = statistics.median(x[3] for x in r)
        truth_m = statistics.median(x[4] for x in r)
        out[fn] = {"truth": truth_m, "compensated": comp, "raw": raw,
                   "error_pct": statistics.median(100 * (x[2] - x[4]) / x[4] for x in r),
                   "raw_error_pct": statistics.median(100 * (x[3] - x[4]) / x[4] for x in r),
                   "unpaired_error_pct": 100 * (comp - truth_m) / truth_m}
    return out


def main():
    usdtprof, targets = sys.argv[1], sys.argv[2]
    works = [int(w) for w in sys.argv[3:]] or [1000, 10000, 100000]
    print("%8s %6s %8s | %10s %10s %8s %8s | %10s %10s %8s %8s | %s" % (
        "work", "own", "caller", "leaf truth", "leaf comp", "err%", "raw err%",
        "mid truth", "mid comp", "err%", "raw err%", "unpaired err% leaf, mid"))
    for w in works:
        r = run(usdtprof, os.path.join(targets, "overhead"), w)
        print("%8d %6.0f %8.0f | %10.0f %10.0f %+8.2f %+8.1f | %10.0f %10.0f %+8.2f %+8.1f | %+6.2f %+6.2f" % (
            w, r["own_ns"], r["caller_ns"],
            r["leaf"]["truth"], r["leaf"]["compensated"], r["leaf"]["error_pct"], r["leaf"]["raw_error_pct"],
            r["mid"]["truth"], r["mid"]["compensated"], r["mid"]["error_pct"], r["mid"]["raw_error_pct"],
            r["leaf"]["unpaired_error_pct"], r["mid"]["unpaired_error_pct"]),
            flush=True)


if __name__ == "__main__":
    main()
