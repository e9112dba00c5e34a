"""xds-conformance adapter for gRPC C-core, through Python grpcio.

Speaks the adapter protocol (client-under-test/ADAPTER_PROTOCOL.md, version
1): JSON lines in on stdin (commands), JSON lines out on stdout (a `hello`,
one reply per command, `channel_state`, `serving_status` and `log` events).
stderr is the client's log (C-core traces with GRPC_TRACE / GRPC_VERBOSITY);
its WARNING and ERROR lines are `log` events too (ClientLog).

From start-up the adapter reads its own stderr through a pipe (LogTap:
every line is passed on to the real stderr first) because two things
C-core only logs:
- grpcio gives xDS-enabled servers (gRFC A36) no serving-status callback:
  those log lines become `serving_status` events (ServerLog);
- C-core has no resource-watch API: a `watch` with `via` is observed
  through a channel of its own, whose XdsDependencyManager's watcher
  callbacks C-core logs (GRPC_TRACE=xds_resolver); projection.py turns
  them, with the client's in-process CSDS, into `watcher` events
  (Projector). See README.md, "Projected watches".

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

import collections  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from concurrent import futures  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import projection  # noqa: E402


class LogTap:
    """The process's stderr, read back: fd 2 (and fd 1, which points at
    it) go into a pipe; a reader thread copies every chunk to the real
    stderr first, then queues its lines; a second thread hands each line
    to the line consumers (ServerLog) and each log record (a prefixed
    line and its continuation lines, projection.RecordAssembler) to the
    record consumers (Projector).

    Started before grpc is imported, so it sees C-core from its first
    line. The reader never waits for the consumers (C-core logs while
    holding its XdsClient lock, and the consumers take CSDS snapshots,
    which take that lock): the queue is bounded (MAX_QUEUED_BYTES; lines
    beyond it are passed on but not parsed, and counted), a line is
    parsed up to MAX_LINE bytes, and a consumer's exception is logged and
    ignored: the tap keeps running.
    """

    MAX_QUEUED_BYTES = 32 << 20
    MAX_LINE = 64 << 10
    PIPE_SIZE = 1 << 20
    IDLE_FLUSH_S = 0.005  # a record with nothing after it is complete after this

    def __init__(self):
        self._real_stderr = None
        self._cond = threading.Condition()
        self._queue = collections.deque()
        self._queued_bytes = 0
        self._eof = False
        self._threads = []
        self._assembler = projection.RecordAssembler()
        self.line_consumers = []
        self.record_consumers = []
        self.dropped = 0  # lines passed on but not parsed (queue full)
        self._dropped_reported = 0
        self.on_dropped = None  # callable(count): tell the timeline
        self._errors_logged = 0

    def start(self):
        read_end, write_end = os.pipe()
        try:
            import fcntl

            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, self.PIPE_SIZE)
        except (ImportError, AttributeError, OSError):
            pass  # the default 64 KiB will do
        self._real_stderr = os.dup(2)
        sys.stderr.flush()
        os.dup2(write_end, 2)
        os.dup2(write_end, 1)
        os.close(write_end)
        for target, name, args in ((self._read, "log-tap-reader", (read_end,)), (self._process, "log-tap", ())):
            thread = threading.Thread(target=target, args=args, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def alive(self):
        return bool(self._threads) and all(t.is_alive() for t in self._threads)

    def stop(self):
        """Puts stderr back and lets the threads drain what is in the pipe."""
        if not self._threads:
            return
        try:
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(self._real_stderr, 2)
        os.dup2(self._real_stderr, 1)
        # Nothing else holds the pipe's write end once fds 1 and 2 point
        # back, so the reader reads to its end and stops.
        for thread in self._threads:
            thread.join(timeout=2.0)

    def write_real(self, data):
        try:
            while data:
                written = os.write(self._real_stderr, data)
                data = data[written:]
        except OSError:
            pass

    def _read(self, read_end):
        pending = b""
        try:
            with os.fdopen(read_end, "rb", buffering=0) as pipe:
                while True:
                    try:
                        chunk = pipe.read(65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    self.write_real(chunk)
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    if len(pending) > self.MAX_LINE:  # an endless line: parse its start
                        lines.append(pending[: self.MAX_LINE])
                        pending = b""
                    if lines:
                        self._enqueue(lines)
        finally:
            self._enqueue([pending] if pending else [], eof=True)

    def _enqueue(self, lines, eof=False):
        with self._cond:
            for line in lines:
                line = line[: self.MAX_LINE]
                if self._queued_bytes + len(line) > self.MAX_QUEUED_BYTES:
                    self.dropped += 1
                    continue
                self._queue.append(line)
                self._queued_bytes += len(line)
            if eof:
                self._eof = True
            self._cond.notify_all()

    def _process(self):
        while True:
            with self._cond:
                if not self._queue and not self._eof:
                    self._cond.wait(timeout=self.IDLE_FLUSH_S if self._assembler.pending() else 0.5)
                items = list(self._queue)
                self._queue.clear()
                self._queued_bytes = 0
                eof = self._eof
            if not items:
                if self._assembler.pending():
                    self._deliver(self._assembler.flush())
                if eof:
                    return
                continue
            if self.dropped != self._dropped_reported and self.on_dropped is not None:
                # Lines were lost to the parsers (never to the real stderr).
                self._dropped_reported = self.dropped
                self._safely(self.on_dropped, self.dropped)
            for raw in items:
                line = raw.decode("utf-8", errors="replace").rstrip("\r")
                for consumer in self.line_consumers:
                    self._safely(consumer, line)
                record = self._assembler.push(line)
                if record is not None:
                    self._deliver(record)

    def _deliver(self, record):
        for consumer in self.record_consumers:
            self._safely(consumer, record)

    def _safely(self, consumer, item):
        try:
            consumer(item)
        except Exception:  # a parsing bug must not stop the tap
            if self._errors_logged < 20:
                self._errors_logged += 1
                self.write_real(("[adapter] log tap consumer failed:\n" + traceback.format_exc()).encode())


# From here on, everything written to fd 2 (C-core included) goes through the tap.
TAP = LogTap()
TAP.start()

import grpc  # noqa: E402
import grpc_csds  # noqa: E402
from envoy.admin.v3 import config_dump_shared_pb2  # noqa: E402
from envoy.service.status.v3 import csds_pb2  # noqa: E402
from grpc._cython import cygrpc  # noqa: E402

PROTOCOL_VERSION = 1
CLIENT_NAME = "grpcio"
DEFAULT_METHOD = "/xds_conformance.Backend/Who"
DEFAULT_RPC_TIMEOUT_MS = 10_000
CAPABILITIES = {
    "dial": True,
    "rpc": True,
    "watch": False,  # grpcio has no public resource-watch API
    "projected_watch": True,  # watches observed through channels (Projector)
    "csds": True,
    "delta": False,
    "serve": True,  # gRFC A36, through grpc.server(xds=True)
    # C-core's log at the levels forwarded apart from its traces (ClientLog).
    "logs": ["warning", "error"],
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


class ClientLog:
    """C-core's own WARNING and ERROR lines, as `log` events
    (ADAPTER_PROTOCOL.md, "The client's log"); one of the LogTap's record
    consumers.

    Its INFO lines are not forwarded: the GRPC_TRACE lines the Projector
    reads (xds_client, xds_resolver) are INFO lines as well, and nothing in
    a line tells a trace from C-core's INFO log, so `capabilities.logs`
    leaves `info` out and a log check at INFO is not applicable here.
    Python's own lines (the adapter's, grpcio's) carry no C-core prefix and
    make no record.
    """

    _LEVELS = {"W": "warning", "E": "error", "F": "error"}

    def __init__(self, out):
        self._out = out
        self.ready = False  # set once hello is out: no line may precede it

    def feed(self, record):
        level = self._LEVELS.get(record.severity)
        if level is not None and self.ready:
            self._out.event("log", level=level, message=projection.strip_source_trace(record.message))


class ServerLog:
    """C-core's serving-status log lines, as `serving_status` events.

    C-core (xds_server_config_fetcher.cc, 1.85) logs, with no notifier set:
      INFO  "xDS Listener resource obtained; will start serving on ADDR"
      ERROR "[ListenerWatcher:0x..] Encountered fatal error CODE: message"
            then the status's source-location trace on lines of their own
            and a last line "; not serving on ADDR"
    It is one of the LogTap's line consumers (from start-up: a client
    without servers never logs these lines).
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
        self._pending = None  # lines of a fatal error not yet closed

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

    def serve(self, address):
        with self._lock:
            if address in self._servers:
                raise RuntimeError(f"already serving on {address}")
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


def load_bootstrap():
    """projection.Bootstrap from the bootstrap C-core reads, or None."""
    try:
        path = os.environ.get("GRPC_XDS_BOOTSTRAP")
        if path:
            with open(path, encoding="utf-8") as f:
                return projection.Bootstrap.from_json(json.load(f))
        inline = os.environ.get("GRPC_XDS_BOOTSTRAP_CONFIG")
        if inline:
            return projection.Bootstrap.from_json(json.loads(inline))
    except Exception as e:
        _log(f"projected watches: cannot read the bootstrap ({e!r}); server scoping and node ID come from the log only")
    return None


def csds_lookup(scope, type_url, name):
    """The client's own CSDS entry of (type, name) in XdsClient `scope`,
    from C-core in process (grpc._cython.cygrpc.dump_xds_configs(),
    ~0.05 ms), as projection.CsdsEntry; None if there is none."""
    response = csds_pb2.ClientStatusResponse.FromString(cygrpc.dump_xds_configs())
    wanted = projection.canonical_name(name)
    found = []
    for config in response.config:
        for generic in config.generic_xds_configs:
            if generic.type_url == type_url and projection.canonical_name(generic.name) == wanted:
                found.append((config.client_scope, generic))
    exact = [g for sc, g in found if sc == scope]
    if exact:
        generic = exact[0]
    elif len(found) == 1:
        generic = found[0][1]
    else:
        return None
    has_error = generic.HasField("error_state")
    return projection.CsdsEntry(
        status=config_dump_shared_pb2.ClientResourceStatus.Name(generic.client_status),
        version=generic.version_info,
        details=generic.error_state.details if has_error else "",
        error_version=generic.error_state.version_info if has_error else "",
        any_bytes=generic.xds_config.SerializeToString() if generic.HasField("xds_config") else None,
    )


class _ProjectedWatch:
    """One `watch` with `via`: its channel and what is waiting to be said."""

    def __init__(self, cmd_type, name, short, authority, target):
        self.type = cmd_type
        self.name = name
        self.short = short
        self.authority = authority
        self.target = target
        self.channel = None
        self.bound = False
        self.cancelled = False
        self.probing = False  # an event waits for its code (see Projector._probe)
        self.record_id = None
        self.backlog = []  # events after it, in order


class Projector:
    """Projected watches (adapter protocol, "Projected watches").

    A `watch` with `via` opens a new channel to `via.target` with
    :authority `via.authority`: the scaffold's virtual host of that
    authority routes to the watched Cluster (or, for endpoints, to a
    scaffold Cluster whose EDS name is the watched one), so the channel's
    XdsDependencyManager watches exactly that resource. The LogTap feeds
    every log record to projection.Tracker, which binds the new manager
    (the next one started for that target and authority; dials are
    serialised) to the watch and turns its callbacks for the watched
    resource into `watcher` events, taking a CSDS snapshot for each
    `update` line. Callbacks for the scaffold's resources and induced
    ones (a watched Cluster's endpoints) are not reported.

    A server-reported error (gRFC A88) with nothing cached is the one
    case where neither the log nor CSDS carries the code: its event waits
    until a short-lived second channel of the same authority makes
    C-core log "returning cached error for <name>: <CODE>: <msg>"
    (XdsClient::WatchResource) and is then closed; later events of that
    watch wait behind it.
    """

    # Only a guard against a hang: a channel whose manager never starts
    # ends the wait at once through C-core's logged resolver error (or the
    # tap's death), so on a busy machine a slow start is waited for, not
    # failed (a 2 s bound failed a46/new-watcher-after-nack under load).
    # Below the harness's 10 s command timeout, so that this error, with
    # C-core's reason, is what the report says.
    BIND_TIMEOUT_S = 8.0
    # Also only a guard: the probe's wait ends when its manager is told of
    # the resource, which C-core does after logging what it holds.
    PROBE_TIMEOUT_S = 8.0
    CHANNEL_OPTIONS = [("grpc.client_idle_timeout_ms", 2**31 - 1)]

    def __init__(self, out, tap):
        self._out = out
        self._tap = tap
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._dial_lock = threading.Lock()  # one new manager at a time
        self._watches = []  # _ProjectedWatch, oldest first (active ones)
        self._bootstrap_loaded = False
        self._expects = 0  # numbers the watches (and probes) in the recording
        self._resolver_error = None  # (monotonic time, C-core's text)
        self.tracker = projection.Tracker(profile=_PROFILE)
        self._record_file = None
        record_path = os.environ.get("XDS_CONFORMANCE_GRPCIO_TAP_RECORD")
        if record_path:
            # Debugging and test fixtures: every xDS record, every CSDS
            # lookup and every watch, replayable by test_projection.py.
            self._record_file = open(record_path, "a", encoding="utf-8", buffering=1)
            self._record({"profile": _PROFILE})
        tap.record_consumers.append(self.feed)

    # -- the tap's side ---------------------------------------------------

    def feed(self, record):
        if record.severity == "E" and record.file.startswith("xds_resolver"):
            # e.g. "Failed to create xds client -- channel will remain in
            # TRANSIENT_FAILURE: ...": why a channel has no manager
            with self._cond:
                self._resolver_error = (time.monotonic(), record.message[:500])
                self._cond.notify_all()
        if not record.message.startswith(("[XdsDependencyManager ", "[xds_client ", "[xds_resolver ")):
            return
        with self._cond:
            self._record({"r": [record.severity, record.thread, record.file, record.line, record.message]})
            try:
                for output in self.tracker.feed(record, csds=self._csds):
                    watch = output.token
                    if output.kind == "bound":
                        watch.bound = True
                    elif output.kind == "event" and isinstance(watch, _ProjectedWatch) and not watch.cancelled:
                        self._emit_locked(watch, output.classified)
            finally:
                self._cond.notify_all()

    def _csds(self, scope, type_url, name):
        try:
            entry = csds_lookup(scope, type_url, name)
        except Exception as e:
            _log(f"projected watches: CSDS snapshot failed: {e!r}")
            entry = None
        self._record({"csds": [scope, type_url, name], "entry": entry.to_json() if entry else None})
        return entry

    def _record(self, obj):
        if self._record_file is not None:
            try:
                self._record_file.write(json.dumps(obj) + "\n")
            except Exception:
                pass

    def _emit_locked(self, watch, classified):
        for warning in classified.warnings:
            self._out.timeline_log("warning", f"grpcio projected watch {watch.short} {watch.name}: {warning}")
        if watch.probing:
            watch.backlog.append(classified)
            return
        if classified.needs_code:
            watch.probing = True
            watch.backlog.append(classified)
            threading.Thread(target=self._probe, args=(watch,), name="projection-probe", daemon=True).start()
            return
        self._send(watch, classified)

    def _send(self, watch, classified):
        # the name in C-core's canonical form (gRFC A47 context parameters
        # sorted by key), as its CSDS has it
        event = projection.watcher_event(watch, classified)
        _log(f"projected {watch.short} {watch.name} via {watch.authority}: {event['kind']} ({classified.rule})")
        self._out.send(event)

    # -- commands ---------------------------------------------------------

    def watch(self, cmd):
        """Opens the watch's channel; returns once its manager is seen."""
        cmd_type, name, via = cmd.get("type"), cmd.get("name"), cmd.get("via")
        if not isinstance(cmd_type, str) or not isinstance(name, str) or not name:
            raise ValueError("watch: needs a type and a name")
        if not isinstance(via, dict) or not isinstance(via.get("target"), str) or not isinstance(via.get("authority"), str):
            raise ValueError("watch: `via` needs a target and an authority")
        short = projection.short_type(cmd_type)
        if short not in projection.PROJECTABLE:
            raise LookupError(f"unsupported: projected watches of {cmd_type} (grpcio observes Clusters and endpoints only)")
        if not self._tap.alive():
            raise RuntimeError("watch: the log tap is not alive, so this watch's events cannot be observed")
        self._load_bootstrap()
        watch = _ProjectedWatch(cmd_type, name, short, via["authority"], via["target"])
        with self._dial_lock:
            dialled = time.monotonic()
            bound = self._open_channel(watch, probe=False)
            if not bound:
                self._close(watch)
                said = ""
                with self._lock:
                    if self._resolver_error is not None and self._resolver_error[0] >= dialled:
                        said = f"; C-core logged: {self._resolver_error[1]}"
                raise RuntimeError(
                    f"watch: the log tap did not see the XdsDependencyManager of the channel to {watch.target} "
                    f"(authority {watch.authority}) start, so this watch's "
                    "events cannot be observed (is the log tap alive? GRPC_TRACE must include "
                    f"xds_client,xds_resolver and GRPC_VERBOSITY be debug or info){said}"
                )
            with self._lock:
                self._watches.append(watch)
        # Reply at once: a cached value reaches the new manager within a
        # millisecond and is reported right after (well within the
        # harness's real-time lateness), while anything held here would
        # put the events of the server's answer before the next step, where
        # the harness no longer looks for them.

    def cancel(self, cmd):
        cmd_type, name = cmd.get("type"), cmd.get("name")
        short = projection.short_type(cmd_type) if isinstance(cmd_type, str) else None
        if short is None or not isinstance(name, str):
            raise ValueError("cancel_watch: needs a type and a name")
        wanted = projection.canonical_name(name)
        with self._cond:
            for watch in reversed(self._watches):
                if watch.short == short and projection.canonical_name(watch.name) == wanted:
                    break
            else:
                raise LookupError(f"cancel_watch: no projected watch of {cmd_type} {name}")
            # What it heard before the cancel goes out before the reply.
            self._cond.wait_for(lambda: not watch.probing, timeout=self.PROBE_TIMEOUT_S + 1.0)
            self._watches.remove(watch)
            watch.cancelled = True
            self._unbind_locked(watch)
        self._close(watch)

    def close_all(self):
        with self._cond:
            watches = list(self._watches)
            self._watches.clear()
            for watch in watches:
                watch.cancelled = True
                self._unbind_locked(watch)
        for watch in watches:
            self._close(watch)

    # -- channels -----------------------------------------------------------

    def _load_bootstrap(self):
        if self._bootstrap_loaded:
            return
        self._bootstrap_loaded = True
        tracers = {t.strip() for t in os.environ.get("GRPC_TRACE", "").split(",")}
        if not tracers & {"xds_client", "all"}:
            self._out.timeline_log(
                "warning",
                "grpcio: GRPC_TRACE lacks xds_client: projected watcher events are classified from CSDS alone "
                "(the log's per-resource causes are missing)",
            )
        bootstrap = load_bootstrap()
        if bootstrap is not None:
            self._record({"bootstrap": {"node_id": bootstrap.node_id, "servers": list(bootstrap.servers),
                                        "authorities": {k: list(v) for k, v in bootstrap.authorities.items()}}})
        with self._lock:
            self.tracker.bootstrap = bootstrap
            if bootstrap is not None and self.tracker.node_id is None:
                self.tracker.node_id = bootstrap.node_id

    def _open_channel(self, watch, probe):
        """Under the dial lock: a new channel for `watch`; True once the tap
        has bound its manager."""
        with self._lock:
            self._expects += 1
            watch.record_id = self._expects
            dialled = time.monotonic()
            self._record({"expect": [watch.type, watch.name, watch.authority, watch.target, probe], "id": watch.record_id})
            self.tracker.expect(watch, watch.type, watch.name, watch.authority, watch.target, probe=probe)
        try:
            options = self.CHANNEL_OPTIONS + [("grpc.default_authority", watch.authority)]
            watch.channel = grpc.insecure_channel(watch.target, options=options)
            try:
                watch.channel._channel.check_connectivity_state(True)  # leave IDLE: start the resolver
            except AttributeError:
                watch.channel.subscribe(lambda state: None, try_to_connect=True)
        except Exception:
            with self._lock:
                self._unbind_locked(watch)
            raise
        def settled():
            failed = self._resolver_error is not None and self._resolver_error[0] >= dialled
            return watch.bound or failed or not self._tap.alive()

        with self._cond:
            self._cond.wait_for(settled, timeout=self.BIND_TIMEOUT_S)
            if not watch.bound:
                self._unbind_locked(watch)
            return watch.bound

    def _unbind_locked(self, watch):
        self.tracker.unbind(watch)
        self._record({"unbind": watch.record_id})

    def _close(self, watch):
        if watch.channel is not None:
            try:
                watch.channel.close()
            except Exception as e:
                _log(f"closing the projected channel of {watch.short} {watch.name}: {e!r}")

    def _probe(self, watch):
        """The code of a server-reported error C-core holds for the watched
        resource (see the class docstring)."""
        code = None
        try:
            probe = _ProjectedWatch(watch.type, watch.name, watch.short, watch.authority, watch.target)
            with self._dial_lock:
                with self._lock:
                    since = self.tracker.seq
                try:
                    if self._open_channel(probe, probe=True):
                        wanted = projection.canonical_name(watch.name)
                        with self._cond:
                            bound = self.tracker.watches.get(probe)
                            manager = bound.manager if bound is not None else None

                            def found():
                                for e in reversed(self.tracker.cached_errors):
                                    if e.seq > since and e.name == wanted and e.manager in (None, manager):
                                        return e
                                return None

                            def told():
                                return bound is None or bound.notified or not self._tap.alive()

                            self._cond.wait_for(lambda: found() is not None or told(), timeout=self.PROBE_TIMEOUT_S)
                            hit = found()
                            code = hit.code if hit is not None else None
                            self._unbind_locked(probe)
                finally:
                    self._close(probe)
        except Exception:
            _log("projected watches: the code probe failed:\n" + traceback.format_exc())
        with self._cond:
            first = True
            while watch.backlog:
                classified = watch.backlog[0]
                if classified.needs_code and not first:
                    # another one: probe again, the rest waits behind it
                    threading.Thread(target=self._probe, args=(watch,), name="projection-probe", daemon=True).start()
                    return
                watch.backlog.pop(0)
                if classified.needs_code:
                    first = False
                    classified.needs_code = False
                    if code is not None:
                        classified.event["code"] = code
                        classified.rule += f"; code {code} from C-core's cached error"
                    else:
                        self._out.timeline_log(
                            "warning",
                            f"grpcio projected watch {watch.short} {watch.name}: the code of a server-reported "
                            "error is in neither the log nor CSDS, and C-core did not repeat it to a second "
                            "watcher: reported as UNKNOWN",
                        )
                if not watch.cancelled:
                    self._send(watch, classified)
            watch.probing = False
            self._cond.notify_all()


class Adapter:
    def __init__(self, out):
        self.out = out
        self.channels = Channels(out)
        self.servers = Servers(out)
        self.server_log = ServerLog(out)
        TAP.line_consumers.append(self.server_log.parse)
        self.client_log = ClientLog(out)
        TAP.record_consumers.append(self.client_log.feed)
        self.projector = Projector(out, TAP)
        TAP.on_dropped = lambda count: out.timeline_log(
            "warning",
            f"grpcio adapter: its log tap fell behind and did not parse {count} log lines (all reached stderr): "
            "serving_status and projected watcher events may be missing",
        )
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
        self.client_log.ready = True
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
            elif op == "watch":
                self.op_watch(cmd_id, cmd)
            elif op == "cancel_watch":
                self.op_cancel_watch(cmd_id, cmd)
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

    def op_watch(self, cmd_id, cmd):
        if "via" not in cmd:
            self.out.reply(
                cmd_id,
                ok=False,
                error="unsupported: grpcio has no resource watch API (projected watches need `via`)",
            )
            return
        try:
            self.projector.watch(cmd)
        except (LookupError, ValueError, RuntimeError) as e:
            _log(f"watch failed: {e}")
            self.out.reply(cmd_id, ok=False, error=str(e))
            return
        self.out.reply(cmd_id)

    def op_cancel_watch(self, cmd_id, cmd):
        try:
            self.projector.cancel(cmd)
        except (LookupError, ValueError) as e:
            self.out.reply(cmd_id, ok=False, error=str(e))
            return
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
        self.projector.close_all()
        self.channels.close_all()
        with self._inflight_lock:
            self._inflight_done.wait_for(lambda: not self._inflight, timeout=2.0)
        if self.csds_server is not None:
            try:
                self.csds_server.stop(grace=None).wait(timeout=2.0)
            except Exception as e:
                _log(f"stopping the CSDS server: {e!r}")
        self.servers.stop_all()
        TAP.stop()
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
