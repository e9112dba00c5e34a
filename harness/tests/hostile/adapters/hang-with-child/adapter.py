#!/usr/bin/env python3
"""HOSTILE FIXTURE (harness/tests/interrupts.rs): starts a child process
(`sleep 600`, in its process group), says hello, answers `watch` and then
never reports a thing; ignores SIGTERM, so only SIGKILL or `shutdown`
(which it obeys, leaving its child behind) stops it. After answering the first `watch` it writes "<pid> <child pid>"
to the FIFO named by HOSTILE_PIDS, which tells the test the run is in the
middle of its script."""
import json
import os
import signal
import subprocess
import sys

signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "600"])
print(json.dumps({"event": "hello", "protocol": 1, "client": "hostile", "version": "0",
                  "capabilities": {"watch": True}}), flush=True)
told = False
for line in sys.stdin:
    command = json.loads(line)
    if command["op"] == "watch":
        print(json.dumps({"id": command["id"], "ok": True}), flush=True)
        if not told and os.environ.get("HOSTILE_PIDS"):
            told = True
            with open(os.environ["HOSTILE_PIDS"], "w") as fifo:
                fifo.write("%d %d\n" % (os.getpid(), child.pid))
    elif command["op"] == "shutdown":
        # The child stays: the harness must kill the group.
        print(json.dumps({"id": command["id"], "ok": True}), flush=True)
        sys.exit(0)
signal.pause()
