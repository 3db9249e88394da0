#!/usr/bin/python3
"""How a thread's path cache serves a real program (docs/benchmarks.md, "A thread
keeps its paths' slots"): replays a `usdtprof trace` timeline (chrome format)
through a simulated 64-slot direct-mapped path cache per thread, as the programs
keep it (bpf/paths.bpf.h), and through an index of INDEX path slots more (a
design not built: a thread's table from path to slot, filled at the entry's
misses), and prints what share of entries find their path in each (the rest
look the path up in the kernel's table) and what share of exits flush a slot
(add another path's totals to the table).

  path_cache_sim.py TRACE.json [INDEX ...]

Paths are hashed by Python, not by usdtprof's path_hash: what counts is that
the low bits spread as a hash's do.
"""
import collections
import json
import sys

CACHE = 64  # USDTPROF_PATH_CACHE


def hits(trace):
    """Each thread's entries and exits in order: (tid, is_entry, path)."""
    calls = collections.defaultdict(list)
    for e in json.load(open(trace))["traceEvents"]:
        if e.get("ph") == "X":
            calls[e["tid"]].append((e["ts"], -e["dur"], e["name"]))
    for tid, xs in calls.items():
        xs.sort()  # by start, the longer (outer) first
        stack = []  # (end, path)
        for start, minus_dur, name in xs:
            while stack and stack[-1][0] <= start:
                yield tid, False, stack.pop()[1]
            parent = stack[-1][1] if stack else (tid,)
            path = hash((parent, name))
            yield tid, True, path
            stack.append((start - minus_dur, path))
        while stack:
            yield tid, False, stack.pop()[1]


def simulate(seq, index):
    cache = collections.defaultdict(lambda: [None] * CACHE)
    slots = collections.defaultdict(lambda: [None] * max(index, 1))
    entries = cached = indexed = exits = flushes = 0
    for tid, is_entry, path in seq:
        c = cache[tid]
        if is_entry:
            entries += 1
            if c[path % CACHE] == path:
                cached += 1
            elif index and slots[tid][path % index] == path:
                indexed += 1
            elif index:
                slots[tid][path % index] = path
            continue
        exits += 1
        if c[path % CACHE] != path:
            flushes += c[path % CACHE] is not None
            c[path % CACHE] = path
    print(f"index {index}: {entries} entries: in the cache {cached / entries:.1%}, in the index "
          f"{indexed / entries:.1%}, looked up {(entries - cached - indexed) / entries:.1%}; "
          f"{exits} exits: flushing {flushes / exits:.1%}")


def main():
    seq = list(hits(sys.argv[1]))
    for index in [0] + [int(a) for a in sys.argv[2:]]:
        simulate(seq, index)


if __name__ == "__main__":
    main()
