# Frames running when usdtprof attaches (record -p): <module> -> top -> mid -> leaf,
# waiting in leaf for SIGUSR1 after printing "ready". Then leaf spins 20 ms, mid 5 ms,
# top 5 ms, and <module> calls after() 3 times (2 ms each). The spins are spin() calls.
import signal
import time


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def leaf():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    print("ready", flush=True)
    signal.sigwait({signal.SIGUSR1})
    spin(0.02)


def mid():
    leaf()
    spin(0.005)


def top():
    mid()
    spin(0.005)


def after():
    spin(0.002)


top()
for _ in range(3):
    after()
