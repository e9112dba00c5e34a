#!/usr/bin/env python3
"""HOSTILE FIXTURE (harness/tests/interrupts.rs, examples/flood_peak.rs):
says hello, answers the first `watch`, then floods the harness as fast as
it can until it is killed or its stdout closes. The kind (first argument):
  log      valid `log` events of 1 KB (the default)
  watcher  valid `watcher` events of 1 KB (`changed` with a summary), the
           events a timeline keeps without a cap of their own
  line     lines of 1 MiB less one byte that are valid JSON events
  stderr   1 KB log lines on stderr, and nothing else on stdout
The harness must keep its memory, its timeline and its reports bounded.

A test decides on events, not on time: once this adapter has sent more
than any bound under test needs (FLOOD_PAST units, on the stream that
floods), it says so once on stdout with a watcher event for c1 whose
summary is "flood past its bounds", and floods on. The `watcher` kind
sends no such event: its flood ends only at the timeline's own limit."""
import json
import sys

# More than each bound the harness keeps: 10,000 log lines; 2 KiB of a
# line (40 lines of 1 MiB kept whole would pass the test's 17 MiB timeline
# bound); the last lines of stderr (its tail).
FLOOD_PAST = {"log": 20000, "line": 40, "stderr": 20000}

kind = sys.argv[1] if len(sys.argv) > 1 else "log"
print(json.dumps({"event": "hello", "protocol": 1, "client": "flood", "version": "0",
                  "capabilities": {"watch": True}}), flush=True)
line = sys.stdin.readline()
command = json.loads(line)
print(json.dumps({"id": command["id"], "ok": True}), flush=True)
n = 0
pad = "x" * 1000
past = FLOOD_PAST.get(kind)


def say_past_bounds():
    event = {"event": "watcher", "type": "CDS", "name": "c1", "kind": "changed",
             "summary": "flood past its bounds"}
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


try:
    if kind == "stderr":
        while True:
            n += 1
            sys.stderr.write("flood %d %s\n" % (n, pad))
            if n == past:
                sys.stderr.flush()
                say_past_bounds()
    while True:
        n += 1
        if kind == "watcher":
            event = {"event": "watcher", "type": "CDS", "name": "c1", "kind": "changed",
                     "summary": "flood %d %s" % (n, pad)}
        elif kind == "line":
            event = {"event": "log", "level": "info", "message": ""}
            event["message"] = "y" * ((1 << 20) - 1 - len(json.dumps(event)))
        else:
            event = {"event": "log", "level": "info", "message": "flood %d %s" % (n, pad)}
        sys.stdout.write(json.dumps(event) + "\n")
        if n == past:
            say_past_bounds()
except BrokenPipeError:
    pass
