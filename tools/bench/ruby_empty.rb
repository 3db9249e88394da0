class Foo
  def empty; end
  def run(n)
    i = 0
    while i < n
      empty
      i += 1
    end
  end
end
Foo.new.run(Integer(ARGV[0] || 50000))
