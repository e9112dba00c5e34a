#!/usr/bin/env python3
"""{{NAME}}: an xds-conformance adapter (the protocol: the book's "Adapter
protocol" page). It speaks JSON lines on stdin/stdout; stdout is the
protocol's alone, so everything else (your client's logs) goes to stderr.

What to fill in is marked TODO: start your client from the bootstrap the
harness wrote (GRPC_XDS_BOOTSTRAP), add and remove its resource watchers,
and report what they hear as `watcher` events. Until then every watch is
answered and hears nothing, so the first run shows what to fill in."""
import json
import os
import sys


def send(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def main():
    # TODO: create your xDS client from os.environ["GRPC_XDS_BOOTSTRAP"].
    _bootstrap = os.environ.get("GRPC_XDS_BOOTSTRAP")
    send({"event": "hello", "protocol": 1, "client": "{{NAME}}", "version": "0",
          "capabilities": {"watch": True}})
    for raw in sys.stdin:
        command = json.loads(raw)
        op = command.get("op")
        reply = {"id": command["id"], "ok": True}
        if op == "watch":
            # TODO: start a watcher of (command["type"], command["name"]) and,
            # from its callbacks, send({"event": "watcher", "type": ..., "name": ...,
            # "kind": "changed", "summary": ...}) (or resource_error,
            # ambient_error with "code" and "message", does_not_exist).
            pass
        elif op == "cancel_watch":
            # TODO: cancel the most recent watcher of (type, name).
            pass
        elif op == "shutdown":
            send(reply)
            return 0
        else:
            reply = {"id": command["id"], "ok": False, "error": "unsupported: " + str(op)}
        send(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
