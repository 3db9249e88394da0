#!/bin/sh
# `make demo`: profile the bundled demo server, print the reports, write a
# flame-graph file.
set -eu
usdtprof=$1 demo=$2
out=${DEMO_OUT:-.output/demo}
mkdir -p "$out"
echo "\$ usdtprof record -o $out/demo.data -- $demo"
"$usdtprof" record -o "$out/demo.data" -- "$demo"
echo
echo "\$ usdtprof report $out/demo.data"
"$usdtprof" report "$out/demo.data"
echo
echo "\$ usdtprof report --tree $out/demo.data"
"$usdtprof" report --tree "$out/demo.data"
echo
"$usdtprof" export "$out/demo.data" --format folded -o "$out/demo.folded"
echo "folded stacks for flamegraph.pl or speedscope: $out/demo.folded"
