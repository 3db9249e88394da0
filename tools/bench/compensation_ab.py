#!/usr/bin/python3
"""compensation.py's figures for two variants of one build, alternating
(docs/benchmarks.md, "Overhead compensation accuracy").

  compensation_ab.py USDTPROF TARGETS_DIR ROUNDS WORK_NS...

VARIANTS (env, default "on nosteal"): "nosteal" runs with
USDTPROF_BENCH_NO_STEAL=1 (time stolen by the hypervisor left on-CPU),
"after" with USDTPROF_BENCH_CAL_AFTER=1 (all calibration after the target's
exit, none beside it), "on" with neither. Each round runs every variant at every WORK_NS; each line is one run:
the calibration, the leaf's and mid's truth and compensated error (as
compensation.py prints them), the recording's host steal (/proc/stat, tick
granularity) and the paths' summed off-CPU time. Then per variant and work,
the median error and how many runs came within 5% (1 us) or 2% (others).
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compensation as C  # noqa: E402

_run = subprocess.run
_last = {}


def _spy(cmd, **kw):
    r = _run(cmd, **kw)
    if len(cmd) > 2 and cmd[1] == "report":
        rep = json.loads(r.stdout)
        _last["steal"] = rep["anomalies"].get("host_steal_ns", 0)
        _last["offcpu"] = sum(p.get("self_offcpu_ns", 0) for p in rep["paths"])
    return r


# Variants other than "on", and the environment variable each sets to 1.
KNOBS = {"nosteal": "USDTPROF_BENCH_NO_STEAL", "after": "USDTPROF_BENCH_CAL_AFTER"}


def halved(r):
    """The e2e test's criterion (tests/e2e/test_compensation.cpp): compensation at
    least halves the measured error of the leaf and of mid, both against the
    leaf's truth (mid's own work is a leaf's)."""
    t = r["leaf"]["truth"]
    return "".join("y" if abs(r[fn]["compensated"] - t) * 2 <= abs(r[fn]["raw"] - t) else "n"
                   for fn in ("leaf", "mid"))


def main():
    usdtprof, targets, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    works = [int(w) for w in sys.argv[4:]] or [1000]
    variants = os.environ.get("VARIANTS", "on nosteal").split()
    C.subprocess.run = _spy
    res = {}
    for i in range(rounds):
        for v in variants:
            for var in KNOBS.values():
                os.environ.pop(var, None)
            if v in KNOBS:
                os.environ[KNOBS[v]] = "1"
            for w in works:
                r = C.run(usdtprof, os.path.join(targets, "overhead"), w)
                res.setdefault((v, w), []).append(r)
                print("%d %-8s %6d own %4.0f caller %4.0f | leaf truth %7.0f err %+7.2f raw %+7.1f | "
                      "mid truth %7.0f err %+7.2f raw %+7.1f | steal %5.1f ms offcpu %6.2f ms load %s" % (
                          i, v, w, r["own_ns"], r["caller_ns"], r["leaf"]["truth"], r["leaf"]["error_pct"],
                          r["leaf"]["raw_error_pct"], r["mid"]["truth"], r["mid"]["error_pct"],
                          r["mid"]["raw_error_pct"], _last["steal"] / 1e6, _last["offcpu"] / 1e6,
                          open("/proc/loadavg").read().split()[0]) + " | halved %s" % halved(r), flush=True)
    print("summary")
    for (v, w), rs in sorted(res.items(), key=lambda x: (x[0][1], x[0][0])):
        lim = 5 if w <= 1000 else 2
        for fn in ("leaf", "mid"):
            e = [r[fn]["error_pct"] for r in rs]
            print("%-8s %6d %4s median %+7.2f  within %d%%: %d/%d  |err| median %.2f" % (
                v, w, fn, statistics.median(e), lim, sum(abs(x) <= lim for x in e), len(e),
                statistics.median(abs(x) for x in e)))
        print("%-8s %6d halved (leaf and mid): %d/%d" % (v, w, sum(halved(r) == "yy" for r in rs), len(rs)))


if __name__ == "__main__":
    main()
