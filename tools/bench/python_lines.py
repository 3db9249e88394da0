# CPython 3.11 under usdtprof: what the held python:line semaphore costs a line-heavy loop and a
# straight-line function, timed by the script itself (docs/benchmarks.md). Run plain and under
# `usdtprof record -- /usr/bin/python3.11 tools/bench/python_lines.py`.
import time, sys
def loop(n):
    x = 0
    for i in range(n):
        x += i
    return x
def straight():
    a = 1
    b = a + 1
    c = b + 1
    d = c + 1
    e = d + 1
    f = e + 1
    g = f + 1
    h = g + 1
    return h
n = 1000000
t = time.perf_counter(); loop(n); t1 = time.perf_counter() - t
t = time.perf_counter()
for _ in range(20000): straight()
t2 = time.perf_counter() - t
print(f"loop {t1/n*1e9:.1f} ns/iter; straight {t2/20000*1e9:.0f} ns/call")
