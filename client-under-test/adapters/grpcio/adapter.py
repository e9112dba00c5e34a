"""xds-conformance adapter for gRPC C-core, through Python grpcio.

Speaks the adapter protocol (client-under-test/ADAPTER_PROTOCOL.md, version
1): JSON lines in on stdin (commands), JSON lines out on stdout (a `hello`,
one reply per command, `channel_state`, `serving_status` and `log` events).
stderr is the client's log (C-core traces with GRPC_TRACE / GRPC_VERBOSITY).

grpcio gives xDS-enabled servers (gRFC A36) no serving-status callback:
C-core only logs the changes. Once a server is started, the adapter reads
its own stderr through a pipe (passing every line on) and turns those log
lines into `serving_status` events (see ServerLog).

Started by the harness from the repository root with the venv made by
install.sh:  .peers/grpcio/venv/bin/python client-under-test/adapters/grpcio/adapter.py
"""

import os
import sys

# --- stdout belongs to the protocol -----------------------------------------
# Keep a private handle on the real stdout and point fd 1 at stderr, so that
# nothing else in the process (C-core, a stray print) can put a non-protocol
# line on the harness's channel. Done before grpc is imported.
_PROTOCOL_OUT = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

# --- profiles ----------------------------------------------------------------
# Read by C-core when it starts: must be set before grpc is imported.
PROFILES = ["a88"]
_PROFILE = os.environ.get("XDS_CONFORMANCE_PROFILE") or None
if _PROFILE == "a88":
    # gRFC A88 data error handling (1.85: behind this experimental switch).
    os.environ["GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING"] = "true"

import json  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from concurrent import futures  # noqa: E402

import grpc  # noqa: E402
import grpc_csds  # noqa: E402

PROTOCOL_VERSION = 1
CLIENT_NAME = "grpcio"
DEFAULT_METHOD = "/xds_conformance.Backend/Who"
DEFAULT_RPC_TIMEOUT_MS = 10_000
CAPABILITIES = {
    "dial": True,
    "rpc": True,
    "watch": False,  # grpcio has no public resource-watch API
    "csds": True,
    "fallback": True,  # gRFC A71: on by default in 1.85
    "delta": False,
    "serve": True,  # gRFC A36, through grpc.server(xds=True)
    "tls": True,  # gRFC A65: C-core reads the bootstrap's `tls` channel_creds
    "profiles": PROFILES,
}

_STATE_NAMES = {
    grpc.ChannelConnectivity.IDLE: "IDLE",
    grpc.ChannelConnectivity.CONNECTING: "CONNECTING",
    grpc.ChannelConnectivity.READY: "READY",
    grpc.ChannelConnectivity.TRANSIENT_FAILURE: "TRANSIENT_FAILURE",
    grpc.ChannelConnectivity.SHUTDOWN: "SHUTDOWN",
}


def _log(message):
    """A line for the client log (stderr), not the timeline."""
    try:
        sys.stderr.write(f"[adapter] {message}\n")
        sys.stderr.flush()
    except Exception:  # stderr gone: nothing useful left to do
        pass


class Output:
    """The protocol's stdout: whole lines, one writer at a time.

    gRPC delivers connectivity callbacks on its own threads and RPCs run on
    worker threads, so every line goes through one lock and is flushed.
    After the shutdown reply the output is sealed: nothing follows it.
    """

    def __init__(self, stream):
        self._stream = stream
        self._lock = threading.Lock()
        self._sealed = False

    def send(self, obj, seal=False):
        line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        with self._lock:
            if self._sealed:
                return
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (BrokenPipeError, OSError, ValueError):
                # The harness is gone; stop quietly.
                self._sealed = True
                os._exit(0)
            if seal:
                self._sealed = True

    def reply(self, cmd_id, ok=True, error=None, **fields):
        msg = {"id": cmd_id, "ok": ok}
        if not ok:
            msg["error"] = error or "error"
        msg.update(fields)
        self.send(msg)

    def event(self, name, **fields):
        self.send({"event": name, **fields})

    def timeline_log(self, level, message):
        self.event("log", level=level, message=message)


class ServerLog:
    """C-core's serving-status log lines, as `serving_status` events.

    C-core (xds_server_config_fetcher.cc, 1.85) logs, with no notifier set:
      INFO  "xDS Listener resource obtained; will start serving on ADDR"
      ERROR "[ListenerWatcher:0x..] Encountered fatal error CODE: message"
            then the status's source-location trace on lines of their own
            and a last line "; not serving on ADDR"
    Started on the first `serve`: fd 2 (and fd 1, which points at it) go
    into a pipe; a thread copies every line to the real stderr first, then
    parses it, so the client log loses nothing.
    """

    _SERVING = re.compile(r"xDS Listener resource obtained; will start serving on (\S+)")
    _FATAL = re.compile(r"\] Encountered fatal error (.*)$")
    _NOT_SERVING = re.compile(r"; not serving on (\S+)\s*$")
    _STATUS = re.compile(r"^([A-Z_]+): (.*)$")
    # absl::Status appends "=== Source Location Trace: ===" and file:line.
    _SOURCE_LOCATION = re.compile(r"^(\S+\.(cc|h):\d+|=== Source Location Trace: ===)$")
    _NO_TEMPLATE = "server_listener_resource_name_template not provided"

    def __init__(self, out):
        self._out = out
        self._real_stderr = None
        self._thread = None
        self._pending = None  # lines of a fatal error not yet closed

    def start(self):
        if self._thread is not None:
            return
        read_end, write_end = os.pipe()
        self._real_stderr = os.dup(2)
        sys.stderr.flush()
        os.dup2(write_end, 2)
        os.dup2(write_end, 1)
        os.close(write_end)
        self._thread = threading.Thread(target=self._pump, args=(read_end,), name="server-log", daemon=True)
        self._thread.start()

    def stop(self):
        """Puts stderr back and lets the pump drain what is in the pipe."""
        if self._thread is None:
            return
        try:
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(self._real_stderr, 2)
        os.dup2(self._real_stderr, 1)
        # Nothing else holds the pipe's write end once fds 1 and 2 point
        # back, so the pump reads to its end and stops.
        self._thread.join(timeout=2.0)

    def _pump(self, read_end):
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            pending = b""
            while True:
                try:
                    chunk = pipe.read(65536)
                except OSError:
                    return
                if not chunk:
                    break
                self._write_real(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._parse_safely(line)
            if pending:
                self._parse_safely(pending)

    def _write_real(self, data):
        try:
            while data:
                written = os.write(self._real_stderr, data)
                data = data[written:]
        except OSError:
            pass

    def _parse_safely(self, raw):
        try:
            self.parse(raw.decode("utf-8", errors="replace").rstrip("\r"))
        except Exception:  # a parsing bug must not stop the pump
            self._write_real(("[adapter] server log parse failed:\n" + traceback.format_exc()).encode())

    def parse(self, line):
        if self._pending is not None:
            self._pending.append(line)
            end = self._NOT_SERVING.search(line)
            if end is not None:
                self._not_serving(end.group(1), self._pending)
                self._pending = None
            elif len(self._pending) > 20:  # not the shape expected: give up
                self._pending = None
            return
        serving = self._SERVING.search(line)
        if serving is not None:
            self._out.event("serving_status", address=serving.group(1), state="SERVING")
            return
        fatal = self._FATAL.search(line)
        if fatal is not None:
            end = self._NOT_SERVING.search(line)
            if end is not None:  # all on one line
                first = line[fatal.start(1) : end.start()]
                self._not_serving(end.group(1), [first])
            else:
                self._pending = [fatal.group(1)]
            return
        if self._NO_TEMPLATE in line:
            # C-core then runs the server without xDS: say so on the timeline.
            message = line.split("] ", 1)[-1]
            self._out.timeline_log("error", f"C-core: {message}; the server starts without xDS")

    def _not_serving(self, address, lines):
        # The status, without its source-location lines and the tail.
        text = [
            part.strip()
            for part in lines
            if part.strip() and not self._SOURCE_LOCATION.match(part.strip()) and not self._NOT_SERVING.search(part)
        ]
        status = " ".join(text)
        match = self._STATUS.match(status)
        code, message = (match.group(1), match.group(2)) if match else ("UNKNOWN", status)
        self._out.event("serving_status", address=address, state="NOT_SERVING", code=code, message=message)


class Servers:
    """xDS-enabled servers (gRFC A36), one per listening address."""

    def __init__(self, out):
        self._out = out
        self._lock = threading.Lock()
        self._servers = {}  # address -> grpc.Server
        self.log = ServerLog(out)

    def serve(self, address):
        with self._lock:
            if address in self._servers:
                raise RuntimeError(f"already serving on {address}")
            self.log.start()
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), xds=True)
            server.add_generic_rpc_handlers((_WhoHandler(),))
            # Under xDS C-core binds when the Listener arrives: the port
            # number returned here is not a success signal.
            server.add_insecure_port(address)
            server.start()
            self._servers[address] = server
        _log(f"serving on {address} (xDS)")

    def stop_all(self):
        with self._lock:
            servers = list(self._servers.items())
            self._servers.clear()
        for address, server in servers:
            try:
                server.stop(grace=None).wait(timeout=2.0)
            except Exception as e:
                _log(f"stopping the server on {address}: {e!r}")
        self.log.stop()


class _WhoHandler(grpc.GenericRpcHandler):
    """Answers the data-plane method with "server", so a serving server
    can be called."""

    def service(self, handler_call_details):
        if handler_call_details.method != DEFAULT_METHOD:
            return None
        return grpc.unary_unary_rpc_method_handler(lambda request, context: b"server")


class Channels:
    """One grpc channel per target, kept until shutdown."""

    def __init__(self, out):
        self._out = out
        self._lock = threading.Lock()
        self._channels = {}  # target -> grpc.Channel
        self._last_state = {}  # target -> state name last reported

    def get_or_dial(self, target):
        with self._lock:
            channel = self._channels.get(target)
            if channel is not None:
                return channel
            channel = grpc.insecure_channel(target)
            self._channels[target] = channel
        # Outside the lock: the first callback may arrive on another thread
        # at once, and it takes the lock in _on_state.
        channel.subscribe(lambda state: self._on_state(target, state), try_to_connect=True)
        _log(f"dialled {target}")
        return channel

    def _on_state(self, target, state):
        try:
            name = _STATE_NAMES.get(state)
            if name is None:
                _log(f"{target}: unknown connectivity state {state!r}")
                return
            with self._lock:
                if self._last_state.get(target) == name:
                    return
                self._last_state[target] = name
                # Emitted under the lock so two callbacks cannot reorder.
                self._out.event("channel_state", target=target, state=name)
        except Exception:  # never let a callback exception into grpc
            _log("channel_state callback failed:\n" + traceback.format_exc())

    def close_all(self):
        with self._lock:
            channels = list(self._channels.items())
            self._channels.clear()
        for target, channel in channels:
            try:
                channel.close()
            except Exception as e:
                _log(f"closing {target}: {e!r}")


class Adapter:
    def __init__(self, out):
        self.out = out
        self.channels = Channels(out)
        self.servers = Servers(out)
        self.csds_server = None
        self.csds_address = None
        self._inflight = set()
        self._inflight_lock = threading.Lock()
        self._inflight_done = threading.Condition(self._inflight_lock)
        self._shutting_down = threading.Event()

    # -- start --------------------------------------------------------------

    def start(self):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        grpc_csds.add_csds_servicer(server)
        port = server.add_insecure_port("127.0.0.1:0")
        if port == 0:
            raise RuntimeError("cannot bind the CSDS server on 127.0.0.1")
        server.start()
        self.csds_server = server
        self.csds_address = f"127.0.0.1:{port}"
        self.out.event(
            "hello",
            protocol=PROTOCOL_VERSION,
            client=CLIENT_NAME,
            version=grpc.__version__,
            capabilities=CAPABILITIES,
            csds_address=self.csds_address,
        )
        _log(
            f"hello: grpcio {grpc.__version__}, CSDS on {self.csds_address}, "
            f"profile {_PROFILE or 'default'}, bootstrap {os.environ.get('GRPC_XDS_BOOTSTRAP')}"
        )
        if _PROFILE is not None and _PROFILE not in PROFILES:
            self.out.timeline_log("warning", f"unknown profile {_PROFILE!r}: running grpcio's defaults")

    # -- commands -------------------------------------------------------------

    def handle_line(self, raw):
        try:
            cmd = json.loads(raw)
        except ValueError as e:
            self.out.timeline_log("error", f"adapter: not a JSON line: {e}: {raw[:200]!r}")
            return
        if not isinstance(cmd, dict) or "id" not in cmd:
            self.out.timeline_log("error", f"adapter: a command needs an object with an id: {raw[:200]!r}")
            return
        cmd_id = cmd["id"]
        op = cmd.get("op")
        try:
            if op == "dial":
                self.op_dial(cmd_id, cmd)
            elif op == "rpc":
                self.spawn(cmd_id, self.op_rpc, cmd)
            elif op == "serve":
                self.op_serve(cmd_id, cmd)
            elif op in ("watch", "cancel_watch"):
                self.out.reply(cmd_id, ok=False, error="unsupported: grpcio has no resource watch API")
            elif op == "shutdown":
                self.shutdown(cmd_id)
            elif op is None:
                self.out.reply(cmd_id, ok=False, error="a command needs an op")
            else:
                self.out.reply(cmd_id, ok=False, error=f"unsupported: op {op}")
        except Exception as e:
            _log(f"command {cmd_id} ({op}) failed:\n" + traceback.format_exc())
            self.out.reply(cmd_id, ok=False, error=f"{type(e).__name__}: {e}")

    def spawn(self, cmd_id, fn, cmd):
        """Runs a command that can block on its own thread; always replies."""

        def run():
            try:
                fn(cmd_id, cmd)
            except Exception as e:
                _log(f"command {cmd_id} failed:\n" + traceback.format_exc())
                self.out.reply(cmd_id, ok=False, error=f"{type(e).__name__}: {e}")
            finally:
                with self._inflight_lock:
                    self._inflight.discard(cmd_id)
                    self._inflight_done.notify_all()

        with self._inflight_lock:
            self._inflight.add(cmd_id)
        threading.Thread(target=run, name=f"cmd-{cmd_id}", daemon=True).start()

    def op_dial(self, cmd_id, cmd):
        target = cmd.get("target")
        if not isinstance(target, str) or not target:
            self.out.reply(cmd_id, ok=False, error="dial: missing target")
            return
        self.channels.get_or_dial(target)
        self.out.reply(cmd_id)

    def op_serve(self, cmd_id, cmd):
        address = cmd.get("address")
        if not isinstance(address, str) or not address:
            self.out.reply(cmd_id, ok=False, error="serve: missing address")
            return
        self.servers.serve(address)
        self.out.reply(cmd_id)

    def op_rpc(self, cmd_id, cmd):
        target = cmd.get("target")
        if not isinstance(target, str) or not target:
            self.out.reply(cmd_id, ok=False, error="rpc: missing target")
            return
        method = cmd.get("method") or DEFAULT_METHOD
        timeout_ms = cmd.get("timeout_ms")
        if timeout_ms is None:
            timeout_ms = DEFAULT_RPC_TIMEOUT_MS
        wait_for_ready = bool(cmd.get("wait_for_ready", False))
        channel = self.channels.get_or_dial(target)
        call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
        try:
            response = call(b"", timeout=float(timeout_ms) / 1000.0, wait_for_ready=wait_for_ready)
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            details = e.details() if hasattr(e, "details") else None
            result = {
                "code": code.name if code is not None else "UNKNOWN",
                "message": details or "",
            }
        else:
            if isinstance(response, (bytes, bytearray)):
                backend = bytes(response).decode("utf-8", errors="replace")
            else:
                backend = str(response)
            result = {"code": "OK", "message": "", "backend": backend}
        self.out.reply(cmd_id, result=result)

    # -- stop -----------------------------------------------------------------

    def shutdown(self, cmd_id=None):
        """Closes channels and the CSDS server, replies (if asked), exits 0."""
        if self._shutting_down.is_set():
            return
        self._shutting_down.set()
        _log("shutting down")
        # Closing a channel cancels its RPCs; give their threads a moment to
        # send their own replies (CANCELLED) before the shutdown reply.
        self.channels.close_all()
        with self._inflight_lock:
            self._inflight_done.wait_for(lambda: not self._inflight, timeout=2.0)
        if self.csds_server is not None:
            try:
                self.csds_server.stop(grace=None).wait(timeout=2.0)
            except Exception as e:
                _log(f"stopping the CSDS server: {e!r}")
        self.servers.stop_all()
        if cmd_id is not None:
            self.out.send({"id": cmd_id, "ok": True}, seal=True)
        try:
            sys.stderr.flush()
        except Exception:
            pass
        # os._exit: do not wait for grpc's or the reader's threads at exit.
        os._exit(0)


def main():
    out = Output(_PROTOCOL_OUT)
    adapter = Adapter(out)
    try:
        adapter.start()
    except Exception:
        _log("cannot start:\n" + traceback.format_exc())
        os._exit(1)
    stdin = sys.stdin.buffer
    while True:
        try:
            raw = stdin.readline()
        except Exception:
            _log("reading stdin failed:\n" + traceback.format_exc())
            raw = b""
        if not raw:
            _log("stdin closed: shutting down")
            adapter.shutdown(None)
            return
        line = raw.decode("utf-8", errors="replace").strip()
        if line:
            adapter.handle_line(line)


if __name__ == "__main__":
    main()
