# Known call counts for the Ruby preset. ruby:method__entry/return (Ruby-defined methods)
# fire only while a global :call/:return event hook is enabled; `usdtprof record -- ruby
# calls.rb` adds one through RUBYOPT=-r<script> (kRubyHooks in userspace/target/presets.cpp).
# Expected ruby:method__entry counts (= method__return counts), arg0 class, arg1 method:
#   Object  fib        1973  (fib(15) recursive: 2*fib(16)-1; top-level defs belong to Object)
#   Counter inc        1000  (instance method)
#   Counter get           1
#   Counter initialize    1  (Ruby-defined initialize, called from the C method Class#new)
#   Util    twice         7  (class method: the probes name class "Util"; usdtprof shows Util.twice)
#   Base    hello         3  (inherited, called on Child: reported with the owner "Base")
#   Object  thrower       2  (raises; method__return still fires while the exception unwinds)
# Blocks and C methods are not method__entry events (C methods are ruby:cmethod__*).
# Output: exactly one line.

def fib(n)
  return n if n < 2
  fib(n - 1) + fib(n - 2)
end

class Counter
  def initialize
    @n = 0
  end

  def inc
    @n += 1
  end

  def get
    @n
  end
end

class Util
  def self.twice(x)
    2 * x
  end
end

class Base
  def hello
    1
  end
end

class Child < Base
end

def thrower
  raise ArgumentError, "x"
end

f = fib(15)
c = Counter.new
i = 0
while i < 1000
  c.inc
  i += 1
end
s = 0
i = 0
while i < 7
  s += Util.twice(i)
  i += 1
end
o = Child.new
h = 0
i = 0
while i < 3
  h += o.hello
  i += 1
end
e = 0
i = 0
while i < 2
  begin
    thrower
  rescue ArgumentError
    e += 1
  end
  i += 1
end
$stdout.write("fib=#{f} inc=#{c.get} twice=#{s} hello=#{h} caught=#{e}\n")
