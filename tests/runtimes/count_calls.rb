# Counts Ruby's own view of every Ruby-defined method call (TracePoint :call), named as usdtprof
# names them: Foo#m for an instance method (or a module's), Foo.m for a singleton method of Foo
# (a class method), Foo being the class or module that defines it. Loaded with RUBYOPT=-r; at exit
# writes "name count" lines to $USDTPROF_TEST_COUNTS, for the methods whose owner's name starts
# with $USDTPROF_TEST_PREFIX (those of the program, loaded after this script).
counts = Hash.new(0)
prefix = ENV.fetch("USDTPROF_TEST_PREFIX")
trace = TracePoint.new(:call) do |tp|
  owner = tp.defined_class
  name = if owner.singleton_class?
           "#{owner.inspect[/\A#<Class:(.*)>\z/, 1]}.#{tp.method_id}"
         else
           "#{owner.name}##{tp.method_id}"
         end
  counts[name] += 1 if name.start_with?(prefix)
end
trace.enable
at_exit do
  trace.disable
  File.write(ENV.fetch("USDTPROF_TEST_COUNTS"), counts.map { |name, n| "#{name} #{n}\n" }.join)
end
