#!/bin/bash
# usage: tools/bench/php_hit_cost.sh USDTPROF LABEL: records php running a 12 s loop of calls
# of a function, a class's method and a closure, and prints usdt_entry's and usdt_exit's run
# time per run over 3 s once both run (kernel.bpf_stats_enabled: run_time_ns / run_cnt of
# the recording's own programs; the reading is tools/bench/hit_cost.sh's).
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/loop.php" <<'PHP'
<?php
function f($x) { return $x + 1; }
class Point { public $x = 1; function getX() { return $this->x; } }
$g = function ($x) { return $x * 2; };
$p = new Point();
$t = microtime(true);
while (microtime(true) - $t < 12) {
    for ($i = 0; $i < 1000; $i++) { f($i); $p->getX(); $g($i); }
}
PHP
"$(dirname "$0")/hit_cost.sh" "$1" "$2" php "$dir/loop.php"
