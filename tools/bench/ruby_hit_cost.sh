#!/bin/bash
# usage: tools/bench/ruby_hit_cost.sh USDTPROF LABEL: records ruby (without the hook: C
# methods' probes only) running a 12 s loop of File.exist? and String#upcase calls and
# prints usdt_entry's and usdt_exit's run time per run over 3 s once both run
# (kernel.bpf_stats_enabled: run_time_ns / run_cnt of the recording's own programs;
# the reading is tools/bench/hit_cost.sh's).
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/loop.rb" <<'RB'
t = Time.now
while Time.now - t < 12
  1000.times { File.exist?('/'); 'x'.upcase }
end
RB
env -u RUBYOPT "$(dirname "$0")/hit_cost.sh" "$1" "$2" ruby "$dir/loop.rb"
