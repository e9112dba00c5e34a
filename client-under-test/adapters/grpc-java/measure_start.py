#!/usr/bin/env python3
"""Measures the grpc-java adapter's start: the time from process start to
its `hello`, and to the first DiscoveryRequest its XdsClient sends.

Run from the repository root after install.sh:

    python3 client-under-test/adapters/grpc-java/measure_start.py [RUNS]

It listens on 127.0.0.1 as a bare HTTP/2 peer (it sends an empty SETTINGS
frame and reads; it never answers), writes a bootstrap naming it, starts the
adapter with adapter.json's command and environment, sends a `watch` of a
Listener as soon as `hello` arrives, and stops the clock at the first bytes
that carry a DiscoveryRequest (the Listener type URL in a DATA frame).
Prints one line per run and the median. Python standard library only.
"""
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TYPE = b"type.googleapis.com/envoy.config.listener.v3.Listener"


def one_run(manifest):
    lis = socket.socket()
    lis.bind(("127.0.0.1", 0))
    lis.listen(4)
    port = lis.getsockname()[1]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({
            "xds_servers": [{"server_uri": f"127.0.0.1:{port}",
                             "channel_creds": [{"type": "insecure"}],
                             "server_features": ["xds_v3"]}],
            "node": {"id": "measure", "cluster": "measure",
                     "locality": {"region": "r", "zone": "z"}},
        }, f)
        bootstrap = f.name
    env = dict(os.environ)
    env.update(manifest.get("env", {}))
    env["GRPC_XDS_BOOTSTRAP"] = bootstrap
    env["XDS_CONFORMANCE_SEED"] = "1"
    env.pop("XDS_CONFORMANCE_PROFILE", None)
    t0 = time.monotonic()
    p = subprocess.Popen(manifest["command"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    hello = p.stdout.readline()
    t_hello = time.monotonic() - t0
    assert json.loads(hello)["event"] == "hello", hello
    p.stdin.write(b'{"id":1,"op":"watch","type":"LDS","name":"l1"}\n')
    p.stdin.flush()
    lis.settimeout(10)
    conn, _ = lis.accept()
    conn.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # SETTINGS, empty
    buf = b""
    t_req = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r, _, _ = select.select([conn], [], [], 0.05)
        if r:
            data = conn.recv(65536)
            if not data:
                break
            buf += data
            if TYPE in buf:
                t_req = time.monotonic() - t0
                break
    try:
        p.stdin.write(b'{"id":2,"op":"shutdown"}\n')
        p.stdin.flush()
        p.wait(10)
    except Exception:
        p.kill()
    conn.close()
    lis.close()
    os.unlink(bootstrap)
    return t_hello, t_req


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with open(os.path.join(HERE, "adapter.json")) as f:
        manifest = json.load(f)
    root = os.path.normpath(os.path.join(HERE, manifest.get("root", ".")))
    os.chdir(root)
    results = []
    for i in range(runs):
        t_hello, t_req = one_run(manifest)
        results.append(t_req)
        print(f"run {i + 1}: hello {t_hello * 1000:.0f} ms, first DiscoveryRequest "
              f"{'none' if t_req is None else f'{t_req * 1000:.0f} ms'} after process start")
    got = [r for r in results if r is not None]
    if got:
        print(f"median first DiscoveryRequest: {statistics.median(got) * 1000:.0f} ms ({len(got)}/{runs} runs)")


if __name__ == "__main__":
    main()
