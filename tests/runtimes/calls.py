# Known call counts for the CPython preset (/usr/bin/python3.11). In 3.11 python:function__entry
# fires only while the python:line semaphore is non-zero or a profile function is set (gh-98894).
# Expected = cProfile's ncalls (`python3.11 -m cProfile -s ncalls calls.py`) = function__entry =
# function__return counts for this file (arg1 co_name):
#   fib 1973 (fib(15): 2*fib(16)-1, cProfile "1973/1")   inc 1000 (Counter.inc)
#   __init__ 1, get 1 (Counter)   twice 7 (Util.twice, staticmethod; entry line 35 = decorator)
#   hello 3 (Base.hello, called on Child)   <lambda> 5   thrower 2 (raises, caught by caller)
#   gen 4 (generator: 1 call, entered/left 4 times: 3 yields + final return)   main 1
#   Counter 1, Util 1, Base 1, Child 1 (class bodies)   <module> 1 (top-level code, entry line 0)
# Built-ins in cProfile's list (__build_class__, print, exec) have no probes.
# Entries on: (1) increment python:line's semaphore (0xa8426c in Debian's 3.11.2) with the
# entry/return ones, or (2) PYTHONPATH=tests/runtimes/pyhook (a C profile hook), or
# (3) any sys.setprofile()/sys.settrace() function.
# Output: exactly one line.


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


class Counter:
    def __init__(self):
        self.n = 0

    def inc(self):
        self.n += 1

    def get(self):
        return self.n


class Util:
    @staticmethod
    def twice(x):
        return 2 * x


class Base:
    def hello(self):
        return 1


class Child(Base):
    pass


def thrower():
    raise ValueError("x")


def gen():
    yield 1
    yield 2
    yield 3


def main():
    f = fib(15)
    c = Counter()
    for _ in range(1000):
        c.inc()
    s = 0
    for i in range(7):
        s += Util.twice(i)
    o = Child()
    h = 0
    for _ in range(3):
        h += o.hello()
    lam = lambda x: x + 1
    k = 0
    for _ in range(5):
        k = lam(k)
    e = 0
    for _ in range(2):
        try:
            thrower()
        except ValueError:
            e += 1
    g = 0
    for v in gen():
        g += v
    print(f"fib={f} inc={c.get()} twice={s} hello={h} lambda={k} caught={e} gen={g}")


main()
