#!/usr/bin/env python3
"""HOSTILE FIXTURE (harness/tests/interrupts.rs): a client that breaks a
chaos campaign's first rule at once, and then hangs. Its first start exits
before hello (the campaign's finding: it does not play through); every
later start (a shrink's draft replays the finding) writes "<pid> <pid>" to
the FIFO named by HOSTILE_PIDS, which tells the test that the shrink is
under way, and never says hello. Its starts are counted in the file named
by HOSTILE_STARTS."""
import os
import sys

starts = os.environ["HOSTILE_STARTS"]
before = int(open(starts).read() or "0") if os.path.exists(starts) else 0
with open(starts, "w") as f:
    f.write(str(before + 1))
if before == 0:
    sys.exit(3)
with open(os.environ["HOSTILE_PIDS"], "w") as fifo:
    fifo.write("%d %d\n" % (os.getpid(), os.getpid()))
# No hello: stdin stays open until the harness ends this process.
sys.stdin.read()
