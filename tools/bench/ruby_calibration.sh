#!/bin/bash
# usage: tools/bench/ruby_calibration.sh BUILD_DIR TAG (from the checkout): one run of an empty Ruby method 50,000 times
# under --ruby-call-hook; prints the Ruby kind's calibrated own and caller cost and Foo#empty's raw self per call.
B=$1; tag=$2; out=/tmp/ruby_cal.$tag.$$.data
$B/.output/usdtprof record --ruby-call-hook -o $out -- ruby --disable-gems tools/bench/ruby_empty.rb 50000 >/dev/null 2>&1 || { echo fail; exit 1; }
$B/.output/usdtprof report --raw --format json $out > $out.json 2>/dev/null
python3 - $out.json $tag <<'PY'
import json,sys
j=json.load(open(sys.argv[1]))
cal=j.get("calibration") or {}
ks=[k for k in cal.get("kinds",[]) if "derived" in k["kind"]]
fn=[f for f in j.get("functions",[]) if f.get("name","").endswith("#empty")]
f=fn[0] if fn else {}
calls=f.get("calls",1)
raw=f.get("raw_self_ns", f.get("self_ns",0))/max(calls,1)
print(sys.argv[2], "kinds", [(k["kind"],round(k["own_ns"]),round(k["caller_ns"])) for k in ks], "empty calls", calls, "raw self/call", round(raw))
PY
rm -f $out $out.json
