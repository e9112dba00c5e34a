#!/usr/bin/env python3
"""HOSTILE FIXTURE (harness/tests/interrupts.rs): says hello, answers the
first `watch`, then prints valid `log` events (1 KB each) as fast as it
can until it is killed or its stdout closes. The harness must keep its
memory, its timeline and its reports bounded."""
import json
import sys

print(json.dumps({"event": "hello", "protocol": 1, "client": "flood", "version": "0",
                  "capabilities": {"watch": True}}), flush=True)
line = sys.stdin.readline()
command = json.loads(line)
print(json.dumps({"id": command["id"], "ok": True}), flush=True)
n = 0
try:
    while True:
        n += 1
        sys.stdout.write(json.dumps({"event": "log", "level": "info",
                                     "message": "flood %d %s" % (n, "x" * 1000)}) + "\n")
except BrokenPipeError:
    pass
