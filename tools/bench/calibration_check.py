#!/usr/bin/python3
"""How close the calibration comes to the probe cost a target's run implies
(docs/benchmarks.md, "Why parents miss").

  calibration_check.py USDTPROF TARGETS_DIR WORK_NS RUNS
      Records tests/targets/overhead WORK_NS 20 RUNS times with USDTPROF_DEBUG=1
      (the calibration prints each batch's own and caller cost, in the order
      they ran). Per run: the costs the run's unprobed truth implies (medians
      over its batches: own = raw leaf self - truth; caller = (raw mid self -
      truth - own) / 10) beside estimators of the calibration's batches: the
      median of the first 8 (one moment), of the first 24, of all, their mean.
      Then, per estimator, its error against the implied costs over the runs.

  calibration_check.py --work ITERATIONS USDTPROF TARGETS_DIR RUNS
      The calibration's odd batches do ITERATIONS of work in each leaf and
      parent (USDTPROF_CAL_WORK): per run, the caller cost of those against
      the empty batches run beside them (paired differences).
"""
import json
import os
import statistics as st
import subprocess
import sys
import tempfile


def record(usdtprof, target, work_ns, batches, env):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "p.data")
        rec = subprocess.run([usdtprof, "record", "-o", data, "--", target, str(work_ns), str(batches)],
                             capture_output=True, text=True, check=True, env=dict(os.environ, USDTPROF_DEBUG="1", **env))
        rep = json.loads(subprocess.run([usdtprof, "report", data, "--format", "json"],
                                        capture_output=True, text=True, check=True).stdout)
    own, caller = [], []
    for line in rec.stderr.splitlines():
        if line.startswith("calibration batch"):
            f = line.split()
            own.append(float(f[-3]))
            caller.append(float(f[-1]))
    return rec.stdout, rep, own, caller


def implied(stdout, rep):
    truth = {}
    for line in stdout.splitlines():
        f = line.split()
        if f[0] == "truth":
            truth[int(f[1])] = (float(f[2]), float(f[3]))
    stacks, raw = [], {}
    for p in rep["paths"]:
        stacks.append((stacks[p["parent"]] if p["parent"] is not None else []) + [p["name"]])
    for p, s in zip(rep["paths"], stacks):
        if len(s) >= 2 and s[0].startswith("batch"):
            raw[(int(s[0][5:]), s[-1])] = (p["raw_self_ns"] - p["self_offcpu_ns"]) / p["calls"]
    owns, callers = [], []
    for b, (leaf, mid) in truth.items():
        o = raw[(b, "leaf")] - leaf
        owns.append(o)
        callers.append((raw[(b, "mid")] - mid - o) / 10)
    return st.median(t[0] for t in truth.values()), st.median(owns), st.median(callers)


def estimators(own, caller):
    return {"first 8, median": (st.median(own[:8]), st.median(caller[:8])),
            "first 24, median": (st.median(own[:24]), st.median(caller[:24])),
            "all, median": (st.median(own), st.median(caller)),
            "all, mean": (st.mean(own), st.mean(caller))}


def main():
    args = sys.argv[1:]
    if args and args[0] == "--work":
        iterations, usdtprof, targets, runs = args[1], args[2], args[3], int(args[4])
        for _ in range(runs):
            _, _, own, caller = record(usdtprof, os.path.join(targets, "overhead"), 1000, 1,
                                       {"USDTPROF_CAL_WORK": iterations})
            empty, work = caller[0::2], caller[1::2]
            d = [w - e for e, w in zip(empty, work)]
            q = st.quantiles(d, n=4)
            print("work %s: caller, empty batches %.1f, with work %.1f; paired difference median %+.1f (p25 %+.1f, p75 %+.1f)"
                  % (iterations, st.median(empty), st.median(work), st.median(d), q[0], q[2]), flush=True)
        return
    usdtprof, targets, work_ns, runs = args[0], args[1], int(args[2]), int(args[3])
    rows = []
    for r in range(runs):
        stdout, rep, own, caller = record(usdtprof, os.path.join(targets, "overhead"), work_ns, 20, {})
        truth_leaf, io, ic = implied(stdout, rep)
        est = estimators(own, caller)
        rows.append((io, ic, est))
        print("run %d: truth leaf %.0f ns; implied own %.1f, caller %.1f | " % (r, truth_leaf, io, ic) +
              "; ".join("%s %.0f/%.0f" % (k, v[0], v[1]) for k, v in est.items()), flush=True)
    for k in rows[0][2]:
        eo = [x[2][k][0] - x[0] for x in rows]
        ec = [x[2][k][1] - x[1] for x in rows]
        print("%-17s own - implied: median %+.1f, mean |.| %.1f | caller - implied: median %+.1f, mean |.| %.1f" % (
            k, st.median(eo), st.mean(abs(e) for e in eo), st.median(ec), st.mean(abs(e) for e in ec)))


if __name__ == "__main__":
    main()
