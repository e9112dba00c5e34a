"""Projected watches for gRPC C-core 1.85 (grpcio): which watcher event is which.

C-core has no resource-watch API, but a gRPC channel *is* a set of
XdsClient watchers: its XdsDependencyManager watches the Listener, the
route, every cluster the route names and their endpoints, and (with
GRPC_TRACE=xds_resolver) logs every callback it gets:

  [XdsDependencyManager 0x..] received Cluster update: c1      OnResourceChanged (value or error)
  [XdsDependencyManager 0x..] received Cluster error: c1 <CODE>: <msg>   OnAmbientError
  [XdsDependencyManager 0x..] received Cluster error: c1 OK    OnAmbientError(OK): error cleared

(src/core/resolver/xds/xds_dependency_manager.cc 496-571). An `update`
line does not say whether the callback carried a value or an error; the
XdsClient lines logged just before it (GRPC_TRACE=xds_client: `parsed
Cluster c1`, `invalid Cluster c1`, `returning cached data for c1`,
`timeout obtaining resource`, the channel-status line of xds_client.cc
573, ...) and the client's own CSDS (`cygrpc.dump_xds_configs()`) do.

This module is pure (no grpc import, no I/O): the adapter feeds it log
records and a CSDS lookup, and gets `watcher` events of the adapter
protocol back. The rules, with the C-core 1.85 source lines behind them,
are in the adapter's README ("Projected watches"). The trace format is
that of the pinned grpcio 1.85.0.
"""

import base64
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Optional

CODES = frozenset(
    """OK CANCELLED UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS
    PERMISSION_DENIED RESOURCE_EXHAUSTED FAILED_PRECONDITION ABORTED OUT_OF_RANGE
    UNIMPLEMENTED INTERNAL UNAVAILABLE DATA_LOSS UNAUTHENTICATED""".split()
)

CDS_URL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
EDS_URL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
LDS_URL = "type.googleapis.com/envoy.config.listener.v3.Listener"
RDS_URL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

# short name -> (full type URL, XdsDependencyManager's word, parser's word)
TYPES = {
    "CDS": (CDS_URL, "Cluster", "Cluster"),
    "EDS": (EDS_URL, "Endpoint", "ClusterLoadAssignment"),
    "LDS": (LDS_URL, "Listener", "Listener"),
    "RDS": (RDS_URL, "RouteConfig", "RouteConfiguration"),
}
_BY_URL = {url: short for short, (url, _, _) in TYPES.items()}
_BY_BARE_URL = {url.split("/", 1)[1]: short for short, (url, _, _) in TYPES.items()}
_BY_MANAGER_WORD = {word: short for short, (_, word, _) in TYPES.items()}
_BY_PARSER_WORD = {word: short for short, (_, _, word) in TYPES.items()}

# Types a projected watch can observe (the scaffold routes to a Cluster;
# endpoints through a scaffold Cluster).
PROJECTABLE = ("CDS", "EDS")


def short_type(type_name):
    """`CDS` / the full type URL / the bare URL -> short name, or None."""
    if type_name in TYPES:
        return type_name
    return _BY_URL.get(type_name) or _BY_BARE_URL.get(type_name)


def canonical_name(name):
    """C-core's canonical form of a resource name: xdstp query parameters
    sorted by key (XdsClient::ParseXdsResourceName keeps them in a map)."""
    if not name.startswith("xdstp:") or "?" not in name:
        return name
    base, _, query = name.partition("?")
    params = sorted(p for p in query.split("&") if p)
    return base + "?" + "&".join(params)


# --- log records -------------------------------------------------------------

# absl's prefix: I1124 20:59:42.939877   20535 xds_resolver.cc:115] message
HEADER = re.compile(r"^([IWEF])(\d{4}) (\d\d:\d\d:\d\d\.\d+) +(\d+) ([^ :\]]+):(\d+)\] ?(.*)$")


@dataclass
class Record:
    """One log entry: its first line's prefix, and its message (with the
    entry's continuation lines, joined by newlines)."""

    severity: str
    thread: str
    file: str
    line: int
    message: str


def parse_header(line):
    """A log line that starts an entry -> Record (message = that line's
    text); None for a continuation line or anything else."""
    m = HEADER.match(line)
    if m is None:
        return None
    return Record(severity=m.group(1), thread=m.group(4), file=m.group(5), line=int(m.group(6)), message=m.group(7))


class RecordAssembler:
    """Lines -> records: an entry is its prefixed line plus the lines
    without a prefix that follow it (C-core logs multi-line messages in
    one write). Bounded: at most `max_lines` continuation lines and
    `max_chars` characters are kept per record."""

    def __init__(self, max_lines=400, max_chars=65536):
        self._current = None
        self._parts = []
        self._chars = 0
        self._max_lines = max_lines
        self._max_chars = max_chars

    def push(self, line):
        """Feeds one line; returns the record it completed, if any."""
        record = parse_header(line)
        if record is None:
            if self._current is not None and len(self._parts) < self._max_lines and self._chars < self._max_chars:
                self._parts.append(line)
                self._chars += len(line) + 1
            return None
        done = self.flush()
        self._current = record
        self._parts = [record.message]
        self._chars = len(record.message)
        return done

    def pending(self):
        return self._current is not None

    def flush(self):
        """The record being assembled (now complete), or None."""
        if self._current is None:
            return None
        record = self._current
        record.message = "\n".join(self._parts)[: self._max_chars]
        self._current = None
        self._parts = []
        self._chars = 0
        return record


# --- what a log message says --------------------------------------------------

_PTR = r"(0x\w+|\(nil\)|0)"
_RESOLVER = re.compile(r"^\[xds_resolver " + _PTR + r"\] created for URI (\S+); data plane authority is (.*)$", re.S)
_MANAGER = re.compile(r"^\[XdsDependencyManager " + _PTR + r"\] (.*)$", re.S)
_CLIENT = re.compile(r"^\[xds_client " + _PTR + r"\] (.*)$", re.S)

_M_START = re.compile(r"^starting watch for listener (.*)$", re.S)
_M_UPDATE = re.compile(r"^received (Cluster|Endpoint) update: (.*)$", re.S)
# name, then the status: "OK" or "<CODE>: <message>" (absl::Status's <<)
_M_ERROR = re.compile(r"^received (Cluster|Endpoint) error: (.*?) (OK|([A-Z][A-Z_]*): (.*))$", re.S)

_C_CREATED = re.compile(r"^Created xDS client for key (\S+)$")
_C_NODE = re.compile(r"^xDS node ID: (.*)$")
_C_CHANNEL = re.compile(r"^([A-Z][A-Z_]*): (xDS channel for server (\S+): .*)$", re.S)
_C_RESPONSE = re.compile(
    r"^xds server (\S+): received ADS response: type_url=(\S+), version=(.*), nonce=(.*), "
    r"num_resources=(\d+), num_errors=(\d+)$"
)
_C_PARSED = re.compile(r"^parsed (Cluster|ClusterLoadAssignment|Listener|RouteConfiguration) (.*?): (.*)$", re.S)
_C_INVALID = re.compile(
    r"^invalid (Cluster|ClusterLoadAssignment|Listener|RouteConfiguration) (.*?): ([A-Z][A-Z_]*): (.*)$", re.S
)
_C_IDENTICAL = re.compile(r"^(\S+) resource (.*) identical to current, ignoring\.$", re.S)
_C_CACHED_DATA = re.compile(r"^returning cached data for (.*)$", re.S)
_C_CACHED_ERROR = re.compile(r"^returning cached (error|channel error) for (.*?): ([A-Z][A-Z_]*): (.*)$", re.S)
_C_TIMEOUT = re.compile(r"^xds server (\S+): timeout obtaining resource \{type=(\S+) name=(.*)\} from xds server$", re.S)


# absl::Status::ToString() in this build appends the status's source
# locations: "\n=== Source Location Trace: === \nsrc/core/...cc:1915\n".
# They are not part of the message a watcher gets (status.message()).
_SOURCE_TRACE = re.compile(r"\n=== Source Location Trace: ===[ \t]*(?:\n[^\n]*:\d+[ \t]*)*\n?\Z")


def strip_source_trace(text):
    """A status as C-core logs it -> as a watcher gets it: without the
    source-location block ToString() appends (only the last one: a
    status nested in a message keeps its own)."""
    return _SOURCE_TRACE.sub("", text)


# --- CSDS ----------------------------------------------------------------------


@dataclass
class CsdsEntry:
    """One GenericXdsConfig of the client's CSDS, as much as the rules need."""

    status: str  # ClientResourceStatus name: REQUESTED, ACKED, NACKED, ...
    version: str = ""
    details: str = ""  # error_state.details (= C-core's failed_status().message())
    error_version: str = ""
    any_bytes: Optional[bytes] = None  # serialized google.protobuf.Any of xds_config, if set

    def has_value(self):
        return self.any_bytes is not None

    def to_json(self):
        d = {"status": self.status, "version": self.version, "details": self.details, "error_version": self.error_version}
        if self.any_bytes is not None:
            d["any"] = base64.b64encode(self.any_bytes).decode("ascii")
        return d

    @staticmethod
    def from_json(d):
        if d is None:
            return None
        raw = d.get("any")
        return CsdsEntry(
            status=d.get("status", ""),
            version=d.get("version", ""),
            details=d.get("details", ""),
            error_version=d.get("error_version", ""),
            any_bytes=base64.b64decode(raw) if raw is not None else None,
        )


# CsdsLookup(scope, full type URL, name) -> CsdsEntry or None
CsdsLookup = Callable[[str, str, str], Optional[CsdsEntry]]


@dataclass
class Bootstrap:
    """What the rules need from the bootstrap: the node ID (C-core appends
    " (node ID:<id>)" to every error it gives a watcher,
    XdsClient::AppendNodeToStatus, xds_client.cc 1910) and which servers
    serve which authority."""

    node_id: Optional[str] = None
    servers: tuple = ()  # top-level server_uri values
    authorities: dict = field(default_factory=dict)  # name -> tuple of server_uri (may be empty)

    @staticmethod
    def from_json(doc):
        node = doc.get("node")
        node_id = node.get("id", "") if isinstance(node, dict) else None

        def uris(servers):
            return tuple(s.get("server_uri", "") for s in servers or () if isinstance(s, dict))

        authorities = {}
        for name, auth in (doc.get("authorities") or {}).items():
            authorities[name] = uris((auth or {}).get("xds_servers"))
        return Bootstrap(node_id=node_id, servers=uris(doc.get("xds_servers")), authorities=authorities)

    def authority_of(self, name):
        """None for an old-style name, else the xdstp authority."""
        if not name.startswith("xdstp://"):
            return None
        return name[len("xdstp://") :].split("/", 1)[0]

    def servers_for(self, name):
        """The server URIs a resource is fetched from (gRFC A47: an
        authority without servers uses the top-level ones); None if
        unknown."""
        authority = self.authority_of(name)
        if authority is None:
            return set(self.servers) if self.servers else None
        if authority not in self.authorities:
            return None
        return set(self.authorities[authority] or self.servers) or None


# --- hints: what the XdsClient said last about a resource -----------------------

VALUE = "value"  # parsed / identical / returning cached data
NACK = "nack"  # invalid <Type> <name>: <status>
TIMEOUT = "timeout"  # the does-not-exist timer fired
ERROR = "error"  # returning cached error / returning cached channel error: status given
CHANNEL = "channel"  # xds_client.cc 573: <CODE>: xDS channel for server <uri>: <msg>
ABSENT = "absent"  # a response of the type came after the last word about the name


@dataclass
class Hint:
    kind: str
    seq: int
    code: str = ""
    message: str = ""  # without the node suffix
    text: str = ""  # C-core's own rendering of a parsed value
    ambient: bool = False  # an error logged right after "returning cached data": an ambient error
    identical: bool = False
    source: str = ""  # the log text the hint came from (for warnings)


class _Bounded(OrderedDict):
    """A dict that forgets its oldest keys beyond `limit` (bounded memory),
    except those whose value `keep` says to keep (a bound manager)."""

    def __init__(self, limit, keep=None):
        super().__init__()
        self.limit = limit
        self.keep = keep

    def put(self, key, value):
        if key in self:
            self.move_to_end(key)
        self[key] = value
        if len(self) <= self.limit:
            return
        if self.keep is None:
            while len(self) > self.limit:
                self.popitem(last=False)
            return
        for old in list(self.keys()):
            if len(self) <= self.limit:
                break
            if self.keep is None or not self.keep(self[old]):
                del self[old]


# --- the projection rules --------------------------------------------------------


@dataclass
class Classified:
    """A projected watcher event: `event` has kind and the kind's fields
    (the caller adds type and name). `needs_code`: a resource error whose
    code neither the log nor CSDS carries (a server-reported error,
    RECEIVED_ERROR without a value): the caller must find it (the adapter
    asks C-core through a short-lived second watcher, whose WatchResource
    logs "returning cached error for <name>: <CODE>: <msg>")."""

    event: dict
    needs_code: bool = False
    warnings: list = field(default_factory=list)
    rule: str = ""  # which rule decided (for the log)


def _with_node(message, node_id):
    return message if node_id is None else f"{message} (node ID:{node_id})"


def error_event(code, message, node_id, profile, rule, warnings=None):
    """C-core's OnResourceChanged(error) -> resource_error, or, for its
    "does not exist" (NotFoundError("does not exist"), xds_client.cc 1504
    and 1511) under the default profile, does_not_exist (gRFC A53's name
    for it; the a88 profile names it a resource error NOT_FOUND)."""
    if code == "NOT_FOUND" and message == "does not exist" and profile != "a88":
        return Classified({"kind": "does_not_exist"}, rule=rule, warnings=warnings or [])
    return Classified(
        {"kind": "resource_error", "code": code, "message": _with_node(message, node_id)},
        rule=rule,
        warnings=warnings or [],
    )


def changed_event(entry, hint, rule, warnings=None):
    event = {"kind": "changed"}
    if entry is not None and entry.has_value():
        event["resource"] = base64.b64encode(entry.any_bytes).decode("ascii")
    elif hint is not None and hint.text:
        # No value in CSDS (a later change raced the snapshot): C-core's
        # own rendering of what it parsed.
        event["summary"] = "C-core parsed: " + hint.text.replace("\n", " ")[:2000]
    return Classified(event, rule=rule, warnings=warnings or [])


def classify_ambient(status_text):
    """`received <T> error: <name> <status>` (OnAmbientError, exact):
    OK -> ambient_error_cleared; else ambient_error with C-core's code
    and message (the message already carries the node suffix)."""
    status_text = strip_source_trace(status_text)
    if status_text == "OK":
        return Classified({"kind": "ambient_error_cleared"}, rule="ambient OK")
    code, sep, message = status_text.partition(": ")
    if not sep or code not in CODES:
        return Classified(
            {"kind": "ambient_error", "code": "UNKNOWN", "message": status_text},
            warnings=[f"unparsable status in an ambient error line: {status_text!r}"],
            rule="ambient (unparsable)",
        )
    return Classified({"kind": "ambient_error", "code": code, "message": message}, rule="ambient")


def classify_from_csds(name, entry, *, profile, node_id, bootstrap, channel, rule_prefix="csds"):
    """An update line the log does not explain: CSDS says what C-core holds."""
    if entry is None:
        # No entry: WatchResource's fail() (xds_client.cc 1683-1698) keeps
        # the watcher out of the cache.
        if name.startswith("xdstp:"):
            authority = bootstrap.authority_of(name) if bootstrap else None
            if bootstrap is not None and authority is not None and authority not in bootstrap.authorities:
                return error_event(
                    "FAILED_PRECONDITION",
                    f'authority "{authority}" not present in bootstrap config',
                    node_id,
                    profile,
                    rule=f"{rule_prefix}: no entry, unknown authority (fail(), xds_client.cc 1695)",
                )
            return error_event(
                "INVALID_ARGUMENT",
                f"Unable to parse resource name {name}",
                node_id,
                profile,
                rule=f"{rule_prefix}: no entry, unparsable name (fail(), xds_client.cc 1685)",
            )
        return Classified(
            {"kind": "resource_error", "code": "UNKNOWN", "message": _with_node("no CSDS entry", node_id)},
            warnings=[f"an update for {name} without a CSDS entry and nothing in the log explains it"],
            rule=f"{rule_prefix}: no entry",
        )
    if entry.has_value():
        return changed_event(entry, None, rule=f"{rule_prefix}: value")
    status = entry.status
    if status == "DOES_NOT_EXIST":
        return error_event("NOT_FOUND", "does not exist", node_id, profile, rule=f"{rule_prefix}: DOES_NOT_EXIST")
    if status == "NACKED":
        # SetNacked: InvalidArgumentError("invalid resource: " + details),
        # xds_client.cc 1477; CSDS details = that message.
        return error_event("INVALID_ARGUMENT", entry.details, node_id, profile, rule=f"{rule_prefix}: NACKED")
    if status == "TIMEOUT":
        # SetTimeout: UnavailableError(details), xds_client.cc 1517.
        return error_event("UNAVAILABLE", entry.details, node_id, profile, rule=f"{rule_prefix}: TIMEOUT")
    if status == "RECEIVED_ERROR":
        # SetReceivedError keeps the server's status (xds_client.cc 1492);
        # CSDS has its message only.
        c = Classified(
            {"kind": "resource_error", "code": "UNKNOWN", "message": _with_node(entry.details, node_id)},
            needs_code=True,
            rule=f"{rule_prefix}: RECEIVED_ERROR (code from C-core's cached error)",
        )
        return c
    # REQUESTED: no value and no failed status: only a connectivity error
    # reaches such a watcher (SetChannelStatusLocked, xds_client.cc 568).
    if channel is not None:
        return error_event(channel.code, channel.message, node_id, profile, rule=f"{rule_prefix}: {status}, channel status")
    return Classified(
        {"kind": "resource_error", "code": "UNKNOWN", "message": _with_node(f"CSDS {status}", node_id)},
        warnings=[f"an update for {name} (CSDS {status}) that neither the log nor CSDS explains"],
        rule=f"{rule_prefix}: {status}, unexplained",
    )


def classify_update(name, hint, entry, *, profile, node_id, bootstrap=None, channel=None):
    """`received <T> update: <name>` (OnResourceChanged): value or error.

    `hint`: the newest thing the log said about the resource before the
    line (or None); `entry`: the CSDS entry at the time the line was read;
    `channel`: the newest channel-status line of the resource's servers.
    The log decides the kind (it orders events; CSDS may already be a
    later state); CSDS gives the value and the texts C-core does not log.
    """
    warnings = []
    if hint is None or hint.kind == ABSENT:
        # Nothing about the name since the last response of its type: a
        # SotW deletion or a server-reported error (neither is logged per
        # name), or a cause older than the log we have.
        return classify_from_csds(
            name,
            entry,
            profile=profile,
            node_id=node_id,
            bootstrap=bootstrap,
            channel=channel,
            rule_prefix="absent from the last response" if hint is not None else "csds",
        )
    if hint.kind == VALUE:
        if entry is None or not entry.has_value():
            warnings.append(
                f"the log says {name} was delivered with a value ({hint.source}) but CSDS holds none "
                f"({entry.status if entry else 'no entry'}): reported as changed"
            )
        return changed_event(entry, hint, rule=f"log: {hint.source}", warnings=warnings)
    if hint.kind == NACK:
        message = "invalid resource: " + hint.message
        if entry is not None and entry.status == "NACKED" and entry.details:
            message = entry.details  # what C-core stored (the same text)
        elif entry is not None:
            warnings.append(f"the log says {name} was NACKed but CSDS says {entry.status}")
        return error_event("INVALID_ARGUMENT", message, node_id, profile, rule=f"log: {hint.source}", warnings=warnings)
    if hint.kind == TIMEOUT:
        if entry is not None and entry.status == "TIMEOUT":
            return error_event("UNAVAILABLE", entry.details, node_id, profile, rule="log: timeout, CSDS TIMEOUT")
        if entry is not None and entry.status != "DOES_NOT_EXIST":
            warnings.append(f"the log says the timer of {name} fired but CSDS says {entry.status}")
        return error_event("NOT_FOUND", "does not exist", node_id, profile, rule="log: timeout", warnings=warnings)
    if hint.kind in (ERROR, CHANNEL):
        return error_event(hint.code, hint.message, node_id, profile, rule=f"log: {hint.source}", warnings=warnings)
    raise ValueError(f"unknown hint kind {hint.kind!r}")


# --- the tracker: log records -> events of the projected watchers ---------------

_M_WATCH = re.compile(r"^starting watch for (cluster|endpoint) (.*)$", re.S)
_WATCH_WORD = {"cluster": "CDS", "endpoint": "EDS"}


@dataclass
class Watch:
    token: object
    type: str  # as the command gave it (echoed in events)
    short: str  # CDS / EDS
    name: str
    authority: str
    target: str
    probe: bool = False
    manager: Optional[str] = None
    scope: Optional[str] = None
    client: Optional[str] = None
    active: bool = True
    bound_seq: int = 0
    # A probe's manager told its watcher of the resource (an update or an
    # error line): WatchResource has said all it holds, before that line.
    notified: bool = False


@dataclass
class _Manager:
    ptr: str
    seq: int
    uri: Optional[str]
    authority: Optional[str]
    client: Optional[str]
    token: object = None
    shut: bool = False
    # (short, name) -> [Hint]: what WatchResource said to this manager's
    # new watcher ("returning cached ..."), consumed by its update lines
    directed: dict = field(default_factory=dict)


@dataclass
class Output:
    """What feeding a record produced.

    kind: "bound" (a watch's channel has its XdsDependencyManager;
    `token`), "event" (a watcher event for `token`: `classified`)."""

    kind: str
    token: object = None
    classified: Optional[Classified] = None


@dataclass
class CachedError:
    """A "returning cached error for <name>: <CODE>: <msg>" line."""

    seq: int
    client: Optional[str]
    name: str
    manager: Optional[str]
    code: str
    message: str


class Tracker:
    """Follows C-core's log and maps the callbacks of each projected
    channel's XdsDependencyManager to `watcher` events of that watch.

    Not thread-safe: one thread feeds it (the adapter's log-tap thread);
    callers serialise `expect`/`unbind` with `feed`. Memory is bounded:
    every table forgets its oldest entries beyond a limit."""

    def __init__(self, profile=None, bootstrap=None, limit=4096):
        self.profile = profile
        self.bootstrap = bootstrap
        self.node_id = bootstrap.node_id if bootstrap is not None else None
        self.seq = 0
        self._resolver_by_thread = _Bounded(256)  # thread -> (uri, authority)
        self._client_by_key = _Bounded(256)  # XdsClient key (target URI) -> ptr
        self._managers = _Bounded(limit, keep=lambda m: m.token is not None)  # ptr -> _Manager
        self._pending = []  # watches waiting for their manager, oldest first
        self.watches = {}  # token -> Watch
        self._typed = _Bounded(limit)  # (client, short, name) -> Hint
        self._untyped = _Bounded(limit)  # (client, name) -> Hint (not directed to a manager)
        self._channel = _Bounded(256)  # (client, server) -> Hint
        self._response = _Bounded(1024)  # (client, server, short) -> seq
        # thread -> (kind, client, short, name, manager, with_value): the
        # thread's previous record, to tie "returning cached ..." lines to
        # the "starting watch for cluster <name>" just before them.
        self._last_by_thread = _Bounded(256)
        self.cached_errors = []  # the last few CachedError, newest last

    # -- the adapter's side ---------------------------------------------------

    def expect(self, token, type_name, name, authority, target, probe=False):
        """A channel to `target` with :authority `authority` is about to be
        created for a watch of (type, name): its manager is the next one
        started for that target and authority."""
        short = short_type(type_name)
        if short not in PROJECTABLE:
            raise ValueError(f"projected watches observe {'/'.join(PROJECTABLE)} only, not {type_name}")
        watch = Watch(token=token, type=type_name, short=short, name=name, authority=authority, target=target, probe=probe)
        self.watches[token] = watch
        self._pending.append(watch)
        return watch

    def unbind(self, token):
        """Stop reporting for a watch (its channel is being closed)."""
        watch = self.watches.pop(token, None)
        if watch is None:
            return
        watch.active = False
        if watch in self._pending:
            self._pending.remove(watch)
        if watch.manager is not None:
            mgr = self._managers.get(watch.manager)
            if mgr is not None and mgr.token == token:
                mgr.token = None

    # -- the log's side ------------------------------------------------------

    def feed(self, record, csds=None):
        """One log record -> list of Output. `csds(scope, type_url, name)`
        is called only for update lines of projected watches."""
        self.seq += 1
        text = record.message
        state = ("other", None, None, None, None, False)
        out = []
        try:
            if text.startswith("[XdsDependencyManager "):
                out, state = self._feed_manager(record, csds)
            elif text.startswith("[xds_client "):
                out, state = self._feed_client(record)
            elif text.startswith("[xds_resolver "):
                m = _RESOLVER.match(text)
                if m is not None:
                    self._resolver_by_thread.put(record.thread, (m.group(2), m.group(3).strip()))
        finally:
            self._last_by_thread.put(record.thread, state)
        return out

    def _feed_manager(self, record, csds):
        other = ("other", None, None, None, None, False)
        m = _MANAGER.match(record.message)
        if m is None:
            return [], other
        ptr, rest = m.group(1), m.group(2)
        if _M_START.match(rest) is not None:
            return self._manager_started(record, ptr), other
        mgr = self._managers.get(ptr)
        if mgr is None:
            return [], other
        w = _M_WATCH.match(rest)
        if w is not None:
            short, name = _WATCH_WORD[w.group(1)], canonical_name(w.group(2))
            mgr.directed.pop((short, name), None)
            return [], ("start", mgr.client, short, name, ptr, False)
        if rest == "shutting down":
            mgr.shut = True
            return [], other
        if mgr.shut or mgr.token is None:
            return [], other
        watch = self.watches.get(mgr.token)
        if watch is None or not watch.active:
            return [], other
        word = TYPES[watch.short][1]
        if watch.probe:
            # Not reported; it only ends the probe's wait: WatchResource
            # logs "returning cached ..." before it schedules this call.
            told = _M_UPDATE.match(rest) or _M_ERROR.match(rest)
            if told is not None and told.group(1) == word and canonical_name(told.group(2)) == canonical_name(watch.name):
                watch.notified = True
            return [], other
        upd = _M_UPDATE.match(rest)
        if upd is not None:
            if upd.group(1) != word or canonical_name(upd.group(2)) != canonical_name(watch.name):
                return [], other  # another resource of this channel (scaffold, induced)
            return self._update(watch, mgr, csds), other
        err = _M_ERROR.match(rest)
        if err is not None:
            if err.group(1) != word or canonical_name(err.group(2)) != canonical_name(watch.name):
                return [], other
            return [Output("event", watch.token, classify_ambient(err.group(3)))], other
        return [], other

    def _manager_started(self, record, ptr):
        uri, authority = self._resolver_by_thread.pop(record.thread, (None, None))
        client = self._client_by_key.get(uri) if uri is not None else None
        mgr = _Manager(ptr=ptr, seq=self.seq, uri=uri, authority=authority, client=client)
        self._managers.put(ptr, mgr)  # a reused address is a new manager
        for watch in self._pending:
            if authority is not None and (watch.authority != authority or not _same_target(watch.target, uri)):
                continue
            self._pending.remove(watch)
            mgr.token = watch.token
            watch.manager = ptr
            watch.scope = uri
            watch.client = client
            watch.bound_seq = self.seq
            return [Output("bound", watch.token)]
        return []

    def _feed_client(self, record):
        m = _CLIENT.match(record.message)
        if m is None:
            return [], ("other", None, None, None, None, False)
        client, rest = m.group(1), m.group(2)
        state = ("other", client, None, None, None, False)
        if (c := _C_PARSED.match(rest)) is not None:
            short, name = _BY_PARSER_WORD[c.group(1)], canonical_name(c.group(2))
            self._typed.put(
                (client, short, name), Hint(VALUE, self.seq, text=c.group(3)[:4000], source=f"parsed {c.group(1)} {name}")
            )
        elif (c := _C_INVALID.match(rest)) is not None:
            short, name = _BY_PARSER_WORD[c.group(1)], canonical_name(c.group(2))
            self._typed.put(
                (client, short, name),
                Hint(
                    NACK,
                    self.seq,
                    code=c.group(3),
                    message=strip_source_trace(c.group(4)),
                    source=f"invalid {c.group(1)} {name}",
                ),
            )
        elif (c := _C_IDENTICAL.match(rest)) is not None:
            short, name = short_type(c.group(1)), canonical_name(c.group(2))
            if short is not None:
                self._typed.put(
                    (client, short, name), Hint(VALUE, self.seq, identical=True, source=f"{name} identical to current")
                )
        elif (c := _C_TIMEOUT.match(rest)) is not None:
            short, name = short_type(c.group(2)), canonical_name(c.group(3))
            if short is not None:
                self._typed.put((client, short, name), Hint(TIMEOUT, self.seq, source=f"timeout obtaining {name}"))
        elif (c := _C_CACHED_DATA.match(rest)) is not None:
            name = canonical_name(c.group(1))
            hint = Hint(VALUE, self.seq, source=f"returning cached data for {name}")
            state = self._cached(record, client, name, hint, with_value=True)
        elif (c := _C_CACHED_ERROR.match(rest)) is not None:
            name, code, message = canonical_name(c.group(2)), c.group(3), strip_source_trace(c.group(4))
            if code in CODES:
                hint = Hint(ERROR, self.seq, code=code, message=message, source=f"returning cached {c.group(1)} for {name}")
                state = self._cached(record, client, name, hint, with_value=False)
                if c.group(1) == "error":
                    self.cached_errors.append(CachedError(self.seq, client, name, state[4], code, message))
                    del self.cached_errors[:-16]
        elif (c := _C_CHANNEL.match(rest)) is not None:
            if c.group(1) in CODES:
                self._channel.put(
                    (client, c.group(3)),
                    Hint(CHANNEL, self.seq, code=c.group(1), message=strip_source_trace(c.group(2)), source="channel status"),
                )
        elif (c := _C_RESPONSE.match(rest)) is not None:
            short = short_type(c.group(2))
            if short is not None:
                self._response.put((client, c.group(1), short), self.seq)
        elif (c := _C_CREATED.match(rest)) is not None:
            self._client_by_key.put(c.group(1), client)
        elif (c := _C_NODE.match(rest)) is not None:
            self.node_id = c.group(1)
        return [], state

    def _cached(self, record, client, name, hint, with_value):
        """A "returning cached ..." line (XdsClient::WatchResource,
        xds_client.cc 1736-1762). It follows, on the same thread, the
        manager's "starting watch for <cluster|endpoint> <name>": it is
        for that manager's new watcher. A value first makes any error
        after it an ambient error (NotifyWatchersOnError)."""
        prev = self._last_by_thread.get(record.thread)
        if prev is not None and prev[0] in ("start", "cached") and prev[3] == name and prev[4] is not None:
            mgr = self._managers.get(prev[4])
            hint.ambient = hint.kind == ERROR and prev[5]
            if mgr is not None:
                mgr.directed.setdefault((prev[2], name), []).append(hint)
                del mgr.directed[(prev[2], name)][:-8]
            return ("cached", client, prev[2], name, prev[4], prev[5] or with_value)
        self._untyped.put((client, name), hint)
        return ("other", client, None, name, None, False)

    def _matches(self, watch, key_client):
        return watch.client is None or key_client == watch.client

    def newest_hint(self, watch):
        """The newest log statement about the watched resource that is not
        directed to one manager, and the newest channel status of its
        servers (see classify_update)."""
        name = canonical_name(watch.name)
        best = None

        def consider(h):
            nonlocal best
            if h is not None and (best is None or h.seq > best.seq):
                best = h

        for (client, short, n), h in self._typed.items():
            if short == watch.short and n == name and self._matches(watch, client):
                consider(h)
        for (client, n), h in self._untyped.items():
            if n == name and self._matches(watch, client) and not h.ambient:
                consider(h)
        servers = self.bootstrap.servers_for(watch.name) if self.bootstrap is not None else None
        channel = None
        for (client, server), h in self._channel.items():
            if self._matches(watch, client) and (servers is None or server in servers):
                if channel is None or h.seq > channel.seq:
                    channel = h
        consider(channel)
        for (client, server, short), seq in self._response.items():
            if short != watch.short or not self._matches(watch, client):
                continue
            if servers is not None and server not in servers:
                continue
            if best is None or seq > best.seq:
                best = Hint(ABSENT, seq, source="a later response of the type")
        return best, channel

    def _update(self, watch, mgr, csds):
        hint, channel = self.newest_hint(watch)
        # What WatchResource told this manager's new watcher comes first,
        # in order, unless something newer has happened since.
        queue = mgr.directed.get((watch.short, canonical_name(watch.name)))
        while queue:
            directed = queue.pop(0)
            if directed.ambient:
                continue  # reaches the manager as an ambient error line
            if hint is None or directed.seq > hint.seq:
                hint = directed
            else:
                queue.clear()
            break
        entry = None
        if csds is not None:
            entry = csds(watch.scope or "", TYPES[watch.short][0], watch.name)
        c = classify_update(
            watch.name,
            hint,
            entry,
            profile=self.profile,
            node_id=self.node_id,
            bootstrap=self.bootstrap,
            channel=channel,
        )
        return [Output("event", watch.token, c)]


def _same_target(a, b):
    """The resolver logs its URI as parsed (xds:///svc -> xds:/svc)."""
    if a is None or b is None:
        return True

    def norm(t):
        return re.sub(r"^([a-z]+):/+", r"\1:/", t)

    return a == b or norm(a) == norm(b)


def watcher_event(watch, classified):
    """The protocol line for a classified event of `watch`: the name in
    C-core's canonical form (as its CSDS has it)."""
    return {"event": "watcher", "type": watch.type, "name": canonical_name(watch.name), **classified.event}
