#!/usr/bin/python3
"""Calibration beside the target against calibration after it when the load
changes at the target's end (docs/benchmarks.md, "Calibrating beside the
target"): `record -- overhead 1000 64` (~1 s) with two CPU-bound processes
started when the recording starts and stopped after HOG_S seconds (before
the target's exit), each run with the rounds beside the target ("on") and
with USDTPROF_BENCH_CAL_AFTER=1 ("after"). Prints the calibrated own cost,
the own cost the run's truth implies (median over its batches of measured
leaf self less the batch's unprobed truth) and their difference.

  calibration_shift.py USDTPROF TARGETS_DIR RUNS HOG_S
"""
import subprocess, sys, os, json, statistics as st, time, tempfile
usd, tg, runs, hog_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
for i in range(runs):
    for v in ("on", "after"):
        env = dict(os.environ)
        env.pop("USDTPROF_BENCH_CAL_AFTER", None)
        if v == "after": env["USDTPROF_BENCH_CAL_AFTER"] = "1"
        data = tempfile.mktemp(suffix=".data")
        p = subprocess.Popen([usd, "record", "-o", data, "--", tg + "/overhead", "1000", "64"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        while True:
            l = p.stderr.readline()
            if not l or "recording pid" in l: break
        hogs = [subprocess.Popen(["timeout", str(hog_s), "sh", "-c", "while :; do :; done"]) for _ in range(2)]
        out, err = p.communicate()
        for h in hogs: h.wait()
        truth = {}
        for l in out.splitlines():
            f = l.split()
            if f and f[0] == "truth": truth[int(f[1])] = float(f[2])
        rep = json.loads(subprocess.run([usd, "report", data, "--format", "json"], capture_output=True, text=True).stdout)
        os.unlink(data)
        stacks = []; raw = []; tl = []
        for q in rep["paths"]:
            stacks.append((stacks[q["parent"]] if q["parent"] is not None else []) + [q["name"]])
            s = stacks[-1]
            if len(s) == 3 and s[2] == "leaf":
                b = int(s[0][5:]); raw.append((q["raw_self_ns"] - q["self_offcpu_ns"]) / q["calls"] - truth[b])
        k = rep["calibration"]["kinds"][0]
        imp = st.median(raw)
        print("%d %-5s own %4.0f implied %4.0f diff %+5.0f batches %d" % (i, v, k["own_ns"], imp, k["own_ns"] - imp, k["batches"]), flush=True)
