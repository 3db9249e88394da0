# Garbage collections timed by the script itself, for --span python:gc__start/gc__done
# (tests/e2e/test_runtimes.cpp, test_clients.cpp). usage: gcspan.py NODES ROUNDS
# NODES objects in reference cycles kept alive, the collector off; "ready"; then ROUNDS times:
# at SIGUSR1, 8 collections of them timed by gc.callbacks (which run just before gc__start
# and just after gc__done), a call of after(), and a line "COUNT TOTAL_NS"; a last SIGUSR1
# ends it.
import gc, signal, sys, time

spans = []


def timed(phase, info):
    if phase == 'start':
        spans.append(time.perf_counter_ns())
    else:
        spans[-1] = time.perf_counter_ns() - spans[-1]


class Node:
    def __init__(self):
        self.me = self


def collect():
    return gc.collect()


def after():
    return 1


def main(nodes, rounds):
    gc.disable()
    keep = [Node() for _ in range(nodes)]
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    print('ready', flush=True)
    for _ in range(rounds):
        signal.sigwait({signal.SIGUSR1})
        spans.clear()
        gc.callbacks.append(timed)
        for _ in range(8):
            collect()
        gc.callbacks.remove(timed)
        after()
        print(len(spans), sum(spans), flush=True)
    signal.sigwait({signal.SIGUSR1})


main(int(sys.argv[1]), int(sys.argv[2]))
