#!/bin/bash
# usage: [RUBY_HOOK=1] tools/bench/ruby_hit_cost.sh USDTPROF LABEL: records ruby running a
# 12 s loop and prints usdt_entry's and usdt_exit's run time per run over 3 s once both
# run (kernel.bpf_stats_enabled: run_time_ns / run_cnt of the recording's own programs;
# the reading is tools/bench/hit_cost.sh's). Without RUBY_HOOK, no hook: C methods' probes
# only, a loop of File.exist? and String#upcase calls. With RUBY_HOOK=1, record
# --ruby-call-hook: a loop of calls of an instance method, a singleton method and a
# module's method (Ruby methods' probes, about 20 hits of theirs to one of a C method's).
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -n "${RUBY_HOOK:-}" ]; then
	cat > "$dir/loop.rb" <<'RB'
module Helper; def self.twice(x) = x * 2; end
class Point; def initialize(x) = @x = x; def x = @x; def self.origin = 0; end
def f(p) = p.x
t = Time.now
pt = Point.new(1)
while Time.now - t < 12
  i = 0
  while i < 1000
    f(pt); Point.origin; Helper.twice(i)
    i += 1
  end
end
RB
	export HIT_COST_ARGS=--ruby-call-hook
else
	cat > "$dir/loop.rb" <<'RB'
t = Time.now
while Time.now - t < 12
  1000.times { File.exist?('/'); 'x'.upcase }
end
RB
fi
env -u RUBYOPT "$(dirname "$0")/hit_cost.sh" "$1" "$2" ruby "$dir/loop.rb"
