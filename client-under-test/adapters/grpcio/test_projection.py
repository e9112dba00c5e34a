"""Unit tests of projection.py: C-core 1.85 log records + CSDS -> watcher events.

Run from the repository root (projection.py needs only the standard
library, so any Python 3.8+ will do):

  .peers/grpcio/venv/bin/python -m unittest discover -s client-under-test/adapters/grpcio -p 'test_*.py'

Three kinds of traces:

- recorded (testdata/*.jsonl): real runs of adapter.py against grpcio
  1.85.0 and a scripted fake ADS server, recorded with
  XDS_CONFORMANCE_GRPCIO_TAP_RECORD (every xDS log record, every CSDS
  snapshot the classifier took, every watch); multi-line parser dumps are
  cut to their first line. Replayed through the same Tracker, they must
  give the events C-core's watchers really got;
- synthetic traces of a correct C-core (the line formats of 1.85);
- synthetic traces of a *broken* C-core, one or more per projection rule
  (class BrokenClients): the classifier must report what that trace shows,
  so a scenario checking the rule fails on such a client. They are the
  evidence that every projection rule can fail.
"""

import json
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import projection as P  # noqa: E402

TESTDATA = os.path.join(HERE, "testdata")
CDS = P.CDS_URL
EDS = P.EDS_URL
SCAFFOLD = "xds://xds-conformance-scaffold/watches"
LISTENER = "xdstp://xds-conformance-scaffold/envoy.config.listener.v3.Listener/watches"
NODE = " (node ID:xds-conformance-client)"
PRIMARY = "127.0.0.1:40001"
SCAFFOLD_SERVER = "127.0.0.1:40002"
BOOT = P.Bootstrap(
    node_id="xds-conformance-client",
    servers=(PRIMARY,),
    authorities={"xds-conformance-scaffold": (SCAFFOLD_SERVER,)},
)
TRACE = "\n=== Source Location Trace: === \nsrc/core/xds/xds_client/xds_client.cc:1915\n"


# --- a google.protobuf.Any, by hand (no protobuf needed) ---------------------


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, data):
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def make_any(type_url, name):
    """An Any holding a resource whose field 1 (Cluster.name,
    ClusterLoadAssignment.cluster_name) is `name`."""
    return _field(1, type_url.encode()) + _field(2, _field(1, name.encode()))


def read_any(b64):
    """(type_url, the resource's field 1) of a base64 Any."""
    import base64

    data = base64.b64decode(b64)

    def varint(buf, i):
        n, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n, i

    def fields(buf):
        """field number -> the first length-delimited value (others skipped)."""
        i, out = 0, {}
        while i < len(buf):
            key, i = varint(buf, i)
            wire = key & 7
            if wire == 0:
                _, i = varint(buf, i)
            elif wire == 1:
                i += 8
            elif wire == 5:
                i += 4
            elif wire == 2:
                length, i = varint(buf, i)
                out.setdefault(key >> 3, buf[i : i + length])
                i += length
            else:
                raise ValueError(f"wire type {wire}")
        return out

    top = fields(data)
    inner = fields(top[2])
    return top[1].decode(), inner[1].decode()


def acked(type_url, name, version="1"):
    return P.CsdsEntry("ACKED", version=version, any_bytes=make_any(type_url, name))


# --- replaying a recording ------------------------------------------------------


class Replay:
    """Feeds a recording through a Tracker as adapter.py did, including
    its code probe (a needs_code event takes its code from the first
    "returning cached error" logged for a probe's manager after it)."""

    def __init__(self, path, profile=None, **kw):
        with open(path, encoding="utf-8") as f:
            self.lines = [json.loads(line) for line in f]
        prof = [d["profile"] for d in self.lines if "profile" in d]
        boot = [d["bootstrap"] for d in self.lines if "bootstrap" in d]
        bootstrap = None
        if boot:
            b = boot[0]
            bootstrap = P.Bootstrap(b["node_id"], tuple(b["servers"]), {k: tuple(v) for k, v in b["authorities"].items()})
        self.tracker = P.Tracker(profile=profile if profile is not None else (prof[0] if prof else None), bootstrap=bootstrap)
        self.events = []  # dicts: watch, kind, ...
        self.bound = []
        self.rules = []
        self._labels = {}
        self._pending = []  # [event dict, name, seq]
        self._probe_managers = set()
        self._run()

    def _label(self, name, authority, probe):
        base = f"{name}@{authority}" + (" probe" if probe else "")
        n = self._labels.get(base, 0) + 1
        self._labels[base] = n
        return base if n == 1 else f"{base}#{n}"

    def _run(self):
        ids = {}
        lines = self.lines
        i = 0
        while i < len(lines):
            d = lines[i]
            i += 1
            if "expect" in d:
                type_url, name, authority, target, probe = d["expect"]
                label = self._label(name, authority, probe)
                ids[d.get("id", len(ids) + 1)] = label
                self.tracker.expect(label, type_url, name, authority, target, probe=probe)
            elif "unbind" in d:
                self.tracker.unbind(ids.get(d["unbind"]))
            elif "r" in d:
                severity, thread, file, line, message = d["r"]
                entries = []
                while i < len(lines) and "csds" in lines[i]:
                    entries.append(P.CsdsEntry.from_json(lines[i]["entry"]))
                    i += 1
                answers = iter(entries)
                outputs = self.tracker.feed(P.Record(severity, thread, file, line, message), csds=lambda *a: next(answers))
                for o in outputs:
                    if o.kind == "bound":
                        self.bound.append(o.token)
                        if o.token.endswith("probe") or " probe#" in o.token:
                            self._probe_managers.add(self.tracker.watches[o.token].manager)
                    elif o.kind == "event" and "probe" not in o.token:
                        event = {"watch": o.token, **o.classified.event}
                        self.events.append(event)
                        self.rules.append(o.classified.rule)
                        if o.classified.needs_code:
                            self._pending.append([event, P.canonical_name(o.token.split("@")[0]), self.tracker.seq])
                for pending in list(self._pending):
                    event, name, seq = pending
                    for e in self.tracker.cached_errors:
                        if e.seq > seq and e.name == name and e.manager in self._probe_managers:
                            event["code"] = e.code
                            self._pending.remove(pending)
                            break

    def by_watch(self, fields=("kind", "code", "message")):
        """watch -> its events in order (the order across watches depends
        on C-core's threads; each watcher's own order is what counts)."""
        out = {}
        for e in self.events:
            out.setdefault(e["watch"], []).append(tuple(e.get(f) for f in fields))
        return out


def testdata(name):
    return os.path.join(TESTDATA, name)


class RecordedRuns(unittest.TestCase):
    """Real grpcio 1.85.0 runs (see the module docstring)."""

    def test_cds_default_profile(self):
        # c1 watched twice (w1, w2); c1 NACKed while cached; c1 changed;
        # c1 resent identical; c3 NACKed, never valid; c9 never sent; the
        # primary server stops and restarts; c1 deleted; w2 cancelled.
        r = Replay(testdata("cds-default-profile.jsonl"))
        nack = "invalid resource: errors validating Cluster resource: [field:lb_policy error:LB policy is not supported]" + NODE
        down = (
            "xDS channel for server 127.0.0.1:38675: channel in TRANSIENT_FAILURE: failed to connect to all "
            "addresses; last error: UNKNOWN: ipv4:127.0.0.1:38675: Failed to connect to remote host: Connection refused" + NODE
        )
        c1 = [
            ("changed", None, None),
            ("ambient_error", "INVALID_ARGUMENT", nack),
            ("changed", None, None),
            # the identical resend: nothing
            ("ambient_error", "UNAVAILABLE", down),
            # No ambient_error_cleared: after the restart the first response
            # was EDS, whose SetHealthyLocked (xds_client.cc 1326) made the
            # channel healthy, so the identical CDS resend that followed
            # cleared nothing (xds_client.cc 1086). A real C-core 1.85
            # behaviour (another run, with CDS first, did clear).
            ("does_not_exist", None, None),  # deletion (A53: value dropped)
        ]
        self.assertEqual(
            r.by_watch(),
            {
                "c1@w1": c1,
                "c1@w2": c1,  # its first `changed` is the cached value
                "c3@w3": [
                    ("resource_error", "INVALID_ARGUMENT", nack),
                    ("resource_error", "INVALID_ARGUMENT", nack),  # NACKed again when c9 is subscribed
                    ("resource_error", "UNAVAILABLE", down),
                    ("resource_error", "INVALID_ARGUMENT", nack),  # after the reconnection
                    ("resource_error", "INVALID_ARGUMENT", nack),  # the deletion response
                ],
                "c9@w4": [
                    ("resource_error", "UNAVAILABLE", down),
                    ("does_not_exist", None, None),  # 15 s after the reconnection
                ],
            },
        )
        changed = [e for e in r.events if e["kind"] == "changed"]
        self.assertEqual({read_any(e["resource"]) for e in changed}, {(CDS, "c1")})
        self.assertIn("log: returning cached data for c1", r.rules)

    def test_cds_a88_profile(self):
        # The same run under profile a88 (GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING):
        # the deletion keeps the value (ambient NOT_FOUND) and the timer is
        # a resource error NOT_FOUND.
        r = Replay(testdata("cds-a88-profile.jsonl"))
        w = r.by_watch()
        for watch in ("c1@w1", "c1@w2"):
            self.assertEqual(
                [k for k, _, _ in w[watch]],
                ["changed", "ambient_error", "changed", "ambient_error", "ambient_error_cleared", "ambient_error"],
            )
            self.assertEqual(w[watch][-1], ("ambient_error", "NOT_FOUND", "does not exist" + NODE))
        self.assertEqual(w["c9@w4"][-1], ("resource_error", "NOT_FOUND", "does not exist" + NODE))
        self.assertNotIn("does_not_exist", [e["kind"] for e in r.events])

    def test_server_reported_errors(self):
        # A88 resource_errors: c1 (cached) UNAVAILABLE, c2 (uncached)
        # NOT_FOUND; a second watcher of c2; then c2 arrives.
        r = Replay(testdata("a88-server-reported-errors.jsonl"))
        self.assertEqual(
            r.by_watch(),
            {
                "c1@w1": [("changed", None, None), ("ambient_error", "UNAVAILABLE", "backend store down" + NODE)],
                "c2@w5": [
                    # the code is in neither the log nor CSDS: from the probe's
                    # "returning cached error for c2: NOT_FOUND: c2 was deleted"
                    ("resource_error", "NOT_FOUND", "c2 was deleted" + NODE),
                    ("changed", None, None),
                ],
                # the second watcher's own "returning cached error" line
                "c2@w5#2": [("resource_error", "NOT_FOUND", "c2 was deleted" + NODE), ("changed", None, None)],
            },
        )
        self.assertIn("log: returning cached error for c2", r.rules)

    def test_fail_on_data_errors_and_transient_timer(self):
        # a88 + server features fail_on_data_errors and
        # resource_timer_is_transient_error: a NACK and a deletion drop the
        # value (resource errors), the timer is UNAVAILABLE (CSDS TIMEOUT) --
        # and fires after 15 s, not A88's 30 s (GrpcXdsClient's default
        # request timeout, xds_client_grpc.cc 352-355).
        r = Replay(testdata("a88-fail-on-data-errors-transient-timer.jsonl"))
        self.assertEqual(
            r.by_watch(("kind", "code")),
            {
                "c1@w1": [("changed", None), ("resource_error", "INVALID_ARGUMENT"), ("resource_error", "INVALID_ARGUMENT")],
                "c2@w5": [("changed", None), ("resource_error", "NOT_FOUND")],
                "c9@w4": [("resource_error", "UNAVAILABLE")],
            },
        )
        self.assertTrue(r.events[-1]["message"].startswith("timeout obtaining resource from xDS server 127.0.0.1:"))
        self.assertTrue(r.events[-1]["message"].endswith(NODE))

    def test_stream_closed_before_any_response(self):
        r = Replay(testdata("stream-closed-before-any-response.jsonl"))
        overloaded = "xDS call failed with no responses received; status: UNAVAILABLE: control plane overloaded" + NODE
        w = r.by_watch()
        self.assertEqual([k[:2] for k in w["c1@w1"]], [("resource_error", "UNAVAILABLE")] * 2 + [("changed", None)])
        self.assertEqual([k[:2] for k in w["c1@w2"]], [("changed", None)])
        for _, _, message in w["c1@w1"][:2]:
            self.assertTrue(message.startswith("xDS channel for server 127.0.0.1:"), message)
            self.assertTrue(message.endswith(overloaded), message)

    def test_endpoints_and_unknown_authority(self):
        r = Replay(testdata("eds-and-unknown-authority.jsonl"))
        x = "xdstp://nowhere/envoy.config.cluster.v3.Cluster/x"
        self.assertEqual(
            [(e["watch"], e["kind"], e.get("code"), e.get("message")) for e in r.events],
            [
                ("e5@w1", "changed", None, None),
                (f"{x}@w3", "resource_error", "FAILED_PRECONDITION", 'authority "nowhere" not present in bootstrap config' + NODE),
                ("e9@w2", "does_not_exist", None, None),
            ],
        )
        self.assertEqual(read_any(r.events[0]["resource"]), (EDS, "e5"))

    def test_endpoints_nack_and_second_watcher(self):
        r = Replay(testdata("eds-nack-and-second-watcher.jsonl"))
        message = (
            "invalid resource: errors parsing EDS resource: [field:endpoints[0].priority error:priority 1 >= "
            "number of localities (1)]" + NODE
        )
        self.assertEqual(
            [(e["watch"], e["kind"], e.get("code"), e.get("message")) for e in r.events],
            [("e5@w1", "resource_error", "INVALID_ARGUMENT", message), ("e5@w1#2", "resource_error", "INVALID_ARGUMENT", message)],
        )

    def test_research_probe_log_ignore_resource_deletion(self):
        # /work/notes-tmp/projection-probe/cpp-del.log (the research note's
        # plain trace, trimmed by hand): a deletion with the value kept
        # reaches watchers as an ambient NOT_FOUND.
        assembler = P.RecordAssembler()
        tracker = P.Tracker(bootstrap=None)
        tracker.expect("w1", CDS, "c1", "w1", SCAFFOLD)
        events = []
        with open(testdata("research-probe-deletion.log"), encoding="utf-8") as f:
            lines = f.read().split("\n")
        records = [r for r in (assembler.push(line) for line in lines) if r is not None]
        records.append(assembler.flush())
        for record in records:
            for o in tracker.feed(record, csds=lambda s, t, n: acked(t, n)):
                if o.kind == "event":
                    events.append((o.classified.event["kind"], o.classified.event.get("code"), o.classified.event.get("message")))
        self.assertEqual(
            events,
            [("changed", None, None), ("ambient_error", "NOT_FOUND", "does not exist (node ID:xds-conformance-client)")],
        )


# --- synthetic traces ------------------------------------------------------------


class Synth:
    """Writes C-core 1.85 trace records (the formats of the recordings)
    into a Tracker, with a CSDS the test sets."""

    def __init__(self, profile=None, bootstrap=BOOT, client="0xc1"):
        self.tracker = P.Tracker(profile=profile, bootstrap=bootstrap)
        self.csds = {}
        self.client = client
        self.events = []  # (token, event dict)
        self.classified = []
        self.bound = []
        self._n = 0
        self._created = False

    def feed(self, message, thread="100", severity="I"):
        for o in self.tracker.feed(
            P.Record(severity, thread, "x.cc", 1, message), csds=lambda scope, t, n: self.csds.get((t, P.canonical_name(n)))
        ):
            if o.kind == "event":
                self.events.append((o.token, o.classified.event))
                self.classified.append(o.classified)
            else:
                self.bound.append(o.token)

    def kinds(self):
        return [(t, e["kind"], e.get("code")) for t, e in self.events]

    # a projected channel: resolver, XdsClient (once), manager
    def channel(self, token, name="c1", type_url=CDS, authority="w1", mgr=None, thread="100", expect=True):
        self._n += 1
        mgr = mgr or f"0xm{self._n}"
        if expect:
            self.tracker.expect(token, type_url, name, authority, SCAFFOLD)
        self.feed(f"[xds_resolver 0xr{self._n}] created for URI {SCAFFOLD}; data plane authority is {authority}", thread)
        if not self._created:
            self._created = True
            self.feed(f"[xds_client {self.client}] creating xds client", thread)
            self.feed(f"[xds_client {self.client}] xDS node ID: xds-conformance-client", thread)
            self.feed(f"[xds_client {self.client}] Created xDS client for key {SCAFFOLD}", thread)
        self.feed(f"[xds_resolver 0xr{self._n}] Started with lds_resource_name {LISTENER}", thread)
        self.feed(f"[XdsDependencyManager {mgr}] starting watch for listener {LISTENER}", thread)
        return mgr

    def watch_cluster(self, mgr, name="c1", thread="100", word="cluster"):
        self.feed(f"[XdsDependencyManager {mgr}] starting watch for {word} {name}", thread)

    def response(self, short="CDS", server=PRIMARY, version="1", resources=1, errors=0):
        url = P.TYPES[short][0].split("/", 1)[1]
        self.feed(
            f"[xds_client {self.client}] xds server {server}: received ADS response: type_url={url}, "
            f"version={version}, nonce={version}, num_resources={resources}, num_errors={errors}"
        )

    def parsed(self, name="c1", word="Cluster"):
        self.feed(f"[xds_client {self.client}] parsed {word} {name}: {{type=EDS, eds_service_name=e1}}")

    def invalid(self, name="c1", word="Cluster", detail="errors validating Cluster resource: [field:lb_policy error:LB policy is not supported]"):
        self.feed(f"[xds_client {self.client}] invalid {word} {name}: INVALID_ARGUMENT: {detail}\n=== Source Location Trace: === \nsrc/core/util/validation_errors.cc:55\n", severity="E")

    def identical(self, name="c1"):
        self.feed(f"[xds_client {self.client}] envoy.config.cluster.v3.Cluster resource {name} identical to current, ignoring.")

    def timeout(self, name="c1", server=PRIMARY):
        self.feed(
            f"[xds_client {self.client}] xds server {server}: timeout obtaining resource "
            f"{{type=envoy.config.cluster.v3.Cluster name={name}}} from xds server"
        )

    def channel_status(self, code="UNAVAILABLE", server=PRIMARY, detail="channel in TRANSIENT_FAILURE: Connection refused"):
        self.feed(f"[xds_client {self.client}] {code}: xDS channel for server {server}: {detail}\n=== Source Location Trace: === \nsrc/core/xds/xds_client/xds_client.cc:572\n")

    def cached(self, what, name="c1", status=None, thread="100"):
        text = f"returning cached {what} for {name}" + (f": {status}" if status else "")
        self.feed(f"[xds_client {self.client}] {text}", thread)

    def update(self, mgr, name="c1", word="Cluster", thread="100"):
        self.feed(f"[XdsDependencyManager {mgr}] received {word} update: {name}", thread)

    def ambient(self, mgr, status, name="c1", word="Cluster", trace=True):
        self.feed(f"[XdsDependencyManager {mgr}] received {word} error: {name} {status}" + (TRACE if trace and status != "OK" else ""))


def cluster_acked(s, name="c1", version="1"):
    s.csds[(CDS, name)] = acked(CDS, name, version)


def first_value(s, token="t1", name="c1"):
    """A watch whose resource arrives: its first `changed`."""
    m = s.channel(token, name=name)
    s.watch_cluster(m, name)
    s.response()
    s.parsed(name)
    cluster_acked(s, name)
    s.update(m, name)
    return m


class CorrectClients(unittest.TestCase):
    """Each projection rule on a trace of a C-core that behaves."""

    def test_changed_carries_the_csds_value(self):
        s = Synth()
        first_value(s)
        self.assertEqual(s.kinds(), [("t1", "changed", None)])
        self.assertEqual(read_any(s.events[0][1]["resource"]), (CDS, "c1"))

    def test_changed_without_a_csds_value_says_what_c_core_parsed(self):
        s = Synth()
        m = s.channel("t1")
        s.watch_cluster(m)
        s.response()
        s.parsed()
        s.update(m)  # CSDS has nothing (a later change raced the snapshot)
        event = s.events[0][1]
        self.assertEqual(event["kind"], "changed")
        self.assertNotIn("resource", event)
        self.assertEqual(event["summary"], "C-core parsed: {type=EDS, eds_service_name=e1}")
        self.assertTrue(s.classified[0].warnings)

    def test_ambient_error_is_exact(self):
        s = Synth()
        m = first_value(s)
        s.invalid()
        s.ambient(m, "INVALID_ARGUMENT: invalid resource: bad" + NODE)
        self.assertEqual(s.events[-1][1], {"kind": "ambient_error", "code": "INVALID_ARGUMENT", "message": "invalid resource: bad" + NODE})

    def test_ambient_error_cleared(self):
        s = Synth()
        m = first_value(s)
        s.ambient(m, "OK")
        self.assertEqual(s.events[-1][1], {"kind": "ambient_error_cleared"})

    def test_nack_without_a_value_is_a_resource_error(self):
        s = Synth()
        m = s.channel("t1")
        s.watch_cluster(m)
        s.response()
        s.invalid()
        s.csds[(CDS, "c1")] = P.CsdsEntry("NACKED", details="invalid resource: errors validating Cluster resource: [field:lb_policy error:LB policy is not supported]", error_version="1")
        s.update(m)
        self.assertEqual(
            s.events[-1][1],
            {
                "kind": "resource_error",
                "code": "INVALID_ARGUMENT",
                "message": "invalid resource: errors validating Cluster resource: [field:lb_policy error:LB policy is not supported]" + NODE,
            },
        )

    def test_timer_is_does_not_exist_or_a88_not_found(self):
        for profile, expected in ((None, {"kind": "does_not_exist"}), ("a88", {"kind": "resource_error", "code": "NOT_FOUND", "message": "does not exist" + NODE})):
            s = Synth(profile=profile)
            m = s.channel("t1", name="c9")
            s.watch_cluster(m, "c9")
            s.timeout("c9")
            s.csds[(CDS, "c9")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist")
            s.update(m, "c9")
            self.assertEqual(s.events, [("t1", expected)], profile)

    def test_transient_timer_is_unavailable(self):
        s = Synth(profile="a88")
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        s.timeout("c9")
        s.csds[(CDS, "c9")] = P.CsdsEntry("TIMEOUT", details=f"timeout obtaining resource from xDS server {PRIMARY}")
        s.update(m, "c9")
        self.assertEqual(s.events[-1][1], {"kind": "resource_error", "code": "UNAVAILABLE", "message": f"timeout obtaining resource from xDS server {PRIMARY}" + NODE})

    def test_deletion(self):
        s = Synth()
        m = first_value(s)
        s.response(version="2", resources=0)
        s.csds[(CDS, "c1")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist", error_version="2")
        s.update(m)
        self.assertEqual(s.kinds()[-1], ("t1", "does_not_exist", None))

    def test_connectivity_error_without_a_value(self):
        s = Synth()
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        s.channel_status()
        s.csds[(CDS, "c9")] = P.CsdsEntry("REQUESTED")
        s.update(m, "c9")
        self.assertEqual(
            s.events[-1][1],
            {"kind": "resource_error", "code": "UNAVAILABLE", "message": f"xDS channel for server {PRIMARY}: channel in TRANSIENT_FAILURE: Connection refused" + NODE},
        )

    def test_a_channel_error_of_another_server_is_not_this_resources(self):
        s = Synth()
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        s.channel_status(code="UNAVAILABLE")
        s.channel_status(code="INTERNAL", server=SCAFFOLD_SERVER)  # newer, but the scaffold's
        s.csds[(CDS, "c9")] = P.CsdsEntry("REQUESTED")
        s.update(m, "c9")
        self.assertEqual(s.kinds(), [("t1", "resource_error", "UNAVAILABLE")])

    def test_server_reported_error_without_a_value_needs_its_code(self):
        s = Synth(profile="a88")
        m = s.channel("t1", name="c2")
        s.watch_cluster(m, "c2")
        s.response(resources=0, errors=1)
        s.csds[(CDS, "c2")] = P.CsdsEntry("RECEIVED_ERROR", details="c2 was deleted", error_version="1")
        s.update(m, "c2")
        self.assertTrue(s.classified[-1].needs_code)
        self.assertEqual(s.events[-1][1]["message"], "c2 was deleted" + NODE)
        # the probe: a second manager's watch logs the status C-core holds
        p = s.channel("probe", name="c2", authority="w1")
        s.watch_cluster(p, "c2")
        s.cached("error", "c2", "NOT_FOUND: c2 was deleted" + TRACE.rstrip("\n"))
        hit = s.tracker.cached_errors[-1]
        self.assertEqual((hit.name, hit.code, hit.message, hit.manager), ("c2", "NOT_FOUND", "c2 was deleted", p))
        self.assertEqual(s.kinds(), [("t1", "resource_error", "UNKNOWN")])  # the probe's own update is not reported

    def test_a_probe_is_told_once_its_manager_hears_of_the_resource(self):
        # The probe's wait ends on a definite line, not on a timer: C-core
        # logs what WatchResource holds before it tells the new watcher.
        s = Synth(profile="a88")
        s.channel("t1", name="c2")
        s.tracker.expect("probe", CDS, "c2", "w1", SCAFFOLD, probe=True)
        p = s.channel("probe", name="c2", authority="w1", expect=False)
        probe = s.tracker.watches["probe"]
        s.watch_cluster(p, "c2")
        s.update(p, "c1")  # another resource of its channel
        s.ambient(p, "UNAVAILABLE: gone", name="c2", word="Endpoint")  # another type
        self.assertFalse(probe.notified)
        s.cached("error", "c2", "NOT_FOUND: c2 was deleted")
        self.assertFalse(probe.notified)
        s.update(p, "c2")
        self.assertTrue(probe.notified)
        self.assertEqual(s.kinds(), [])  # a probe reports nothing

    def test_second_watcher_gets_the_cached_value(self):
        s = Synth()
        first_value(s)
        m2 = s.channel("t2")
        s.watch_cluster(m2)
        s.cached("data")
        s.update(m2)
        self.assertEqual(s.kinds(), [("t1", "changed", None), ("t2", "changed", None)])

    def test_second_watcher_of_a_nacked_cached_value_gets_value_then_ambient(self):
        s = Synth()
        m1 = first_value(s)
        s.invalid()
        s.ambient(m1, "INVALID_ARGUMENT: invalid resource: x" + NODE)
        m2 = s.channel("t2")
        s.watch_cluster(m2)
        s.cached("data")
        s.cached("error", status="INVALID_ARGUMENT: invalid resource: x")
        s.update(m2)  # the value (NotifyWatchersOnError with a value: ambient)
        s.ambient(m2, "INVALID_ARGUMENT: invalid resource: x" + NODE)
        self.assertEqual(s.kinds()[-2:], [("t2", "changed", None), ("t2", "ambient_error", "INVALID_ARGUMENT")])

    def test_second_watcher_of_a_failed_uncached_resource_gets_both_errors_in_order(self):
        s = Synth()
        m1 = s.channel("t1", name="c9")
        s.watch_cluster(m1, "c9")
        s.timeout("c9")
        s.channel_status()
        m2 = s.channel("t2", name="c9")
        s.watch_cluster(m2, "c9")
        s.cached("error", "c9", "NOT_FOUND: does not exist")
        s.cached("channel error", "c9", f"UNAVAILABLE: xDS channel for server {PRIMARY}: down")
        s.csds[(CDS, "c9")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist")
        s.update(m2, "c9")
        s.update(m2, "c9")
        self.assertEqual(s.kinds(), [("t2", "does_not_exist", None), ("t2", "resource_error", "UNAVAILABLE")])

    def test_unparsable_name_without_a_csds_entry(self):
        s = Synth()
        name = "xdstp://xds-conformance-scaffold/envoy.config.listener.v3.Listener/oops"
        m = s.channel("t1", name=name)
        s.watch_cluster(m, name)
        s.update(m, name)
        self.assertEqual(s.events[-1][1], {"kind": "resource_error", "code": "INVALID_ARGUMENT", "message": f"Unable to parse resource name {name}" + NODE})

    def test_endpoints_of_a_watched_cluster_and_scaffold_resources_are_not_reported(self):
        s = Synth()
        m = first_value(s)
        s.feed(f"[XdsDependencyManager {m}] received Listener update")
        s.feed(f"[XdsDependencyManager {m}] received RouteConfig update for <inline>")
        s.watch_cluster(m, "e1", word="endpoint")
        s.update(m, "e1", word="Endpoint")
        s.ambient(m, "UNAVAILABLE: x", name="e1", word="Endpoint")
        s.update(m, "c2")  # a Cluster, but not the watched one
        self.assertEqual(s.kinds(), [("t1", "changed", None)])

    def test_endpoint_watch_ignores_its_scaffold_cluster(self):
        s = Synth()
        scaffold_cluster = "xdstp://xds-conformance-scaffold/envoy.config.cluster.v3.Cluster/w4"
        m = s.channel("t1", name="e1", type_url=EDS, authority="w4")
        s.watch_cluster(m, scaffold_cluster)
        s.update(m, scaffold_cluster)
        s.watch_cluster(m, "e1", word="endpoint")
        s.feed(f"[xds_client {s.client}] parsed ClusterLoadAssignment e1: {{priorities=[]}}")
        s.csds[(EDS, "e1")] = acked(EDS, "e1")
        s.update(m, "e1", word="Endpoint")
        self.assertEqual(s.kinds(), [("t1", "changed", None)])
        self.assertEqual(read_any(s.events[0][1]["resource"]), (EDS, "e1"))

    def test_binding_needs_the_authority_and_target(self):
        s = Synth()
        s.tracker.expect("t1", CDS, "c1", "w2", SCAFFOLD)
        s.channel("other", authority="w1", expect=False)  # a channel of another authority
        self.assertEqual(s.bound, [])
        s.channel("t1", authority="w2", expect=False)
        self.assertEqual(s.bound, ["t1"])

    def test_a_dialled_channel_is_not_a_watch(self):
        s = Synth()
        s.tracker.expect("t1", CDS, "c1", "w1", SCAFFOLD)
        s.feed("[xds_resolver 0xr9] created for URI xds:/svc; data plane authority is svc", "7")
        s.feed("[XdsDependencyManager 0xm9] starting watch for listener svc", "7")
        self.assertEqual(s.bound, [])

    def test_cancelled_watch_is_silent_and_the_other_goes_on(self):
        s = Synth()
        m1 = first_value(s)
        m2 = s.channel("t2")
        s.watch_cluster(m2)
        s.cached("data")
        s.update(m2)
        s.tracker.unbind("t2")
        s.response(version="2")
        s.parsed()
        cluster_acked(s, version="2")
        s.update(m1)
        s.update(m2)
        s.feed(f"[XdsDependencyManager {m2}] shutting down")
        self.assertEqual(s.kinds(), [("t1", "changed", None), ("t2", "changed", None), ("t1", "changed", None)])

    def test_canonical_xdstp_names(self):
        self.assertEqual(P.canonical_name("xdstp://a/t/id?b=2&a=1"), "xdstp://a/t/id?a=1&b=2")
        self.assertEqual(P.canonical_name("c1?b=2&a=1"), "c1?b=2&a=1")
        # a47/context-parameters-in-canonical-order: the event names the
        # resource as C-core (and its CSDS) do
        s = Synth()
        written = "xdstp://xds-conformance-scaffold/envoy.config.cluster.v3.Cluster/c1?zone=b&env=prod"
        canonical = "xdstp://xds-conformance-scaffold/envoy.config.cluster.v3.Cluster/c1?env=prod&zone=b"
        m = s.channel("t1", name=written)
        s.watch_cluster(m, written)
        s.response(server=SCAFFOLD_SERVER)
        s.parsed(canonical)
        s.csds[(CDS, canonical)] = acked(CDS, canonical)
        s.update(m, written)
        watch = s.tracker.watches["t1"]
        line = P.watcher_event(watch, s.classified[-1])
        self.assertEqual((line["name"], line["kind"], line["type"]), (canonical, "changed", CDS))
        self.assertEqual(read_any(line["resource"]), (CDS, canonical))


class BrokenClients(unittest.TestCase):
    """For every projection rule, a trace of a C-core that breaks what the
    rule observes: the projection reports what that trace shows, so the
    scenario that checks the rule fails on such a client."""

    # changed = an update line with a value in CSDS
    def test_notifying_an_identical_resend_is_reported(self):
        # a27/unchanged-resource-resent: expect_none watcher -> fails
        s = Synth()
        m = first_value(s)
        s.response(version="2")
        s.identical()
        cluster_acked(s, version="2")
        s.update(m)  # C-core should have said nothing
        self.assertEqual(s.kinds(), [("t1", "changed", None), ("t1", "changed", None)])

    def test_accepting_an_invalid_resource_is_a_change_not_a_resource_error(self):
        # a resource error logged as an update with a value: C-core parsed
        # what it should have rejected, and CSDS holds it
        s = Synth()
        m = s.channel("t1", name="bad-lb")
        s.watch_cluster(m, "bad-lb")
        s.response()
        s.parsed("bad-lb")
        cluster_acked(s, "bad-lb")
        s.update(m, "bad-lb")
        self.assertEqual(s.kinds(), [("t1", "changed", None)])

    def test_a_value_delivered_as_an_error_is_a_resource_error(self):
        # the opposite: an update while CSDS says NACKED without a value and
        # nothing parsed it
        s = Synth()
        m = s.channel("t1")
        s.watch_cluster(m)
        s.response()
        s.csds[(CDS, "c1")] = P.CsdsEntry("NACKED", details="invalid resource: x")
        s.update(m)
        self.assertEqual(s.kinds(), [("t1", "resource_error", "INVALID_ARGUMENT")])

    # ambient_error = the error line
    def test_an_ambient_error_never_logged_is_never_reported(self):
        # validation/watch-*-errors-reach-only-their-watchers: expect
        # ambient_error -> fails
        s = Synth()
        m = first_value(s)
        s.response(version="2")
        s.invalid()
        s.csds[(CDS, "c1")] = P.CsdsEntry("NACKED", details="invalid resource: x", any_bytes=make_any(CDS, "c1"))
        self.assertEqual(s.kinds(), [("t1", "changed", None)])
        del m

    def test_an_ambient_error_with_another_code_keeps_it(self):
        s = Synth()
        m = first_value(s)
        s.ambient(m, "INTERNAL: invalid resource: x" + NODE)
        self.assertEqual(s.kinds()[-1], ("t1", "ambient_error", "INTERNAL"))

    def test_an_error_given_to_the_wrong_watcher_is_not_this_watchers(self):
        # a C-core calling back another channel's manager: only the
        # watch's own manager counts
        s = Synth()
        first_value(s)
        m2 = s.channel("t2", name="c2", authority="w2")
        s.watch_cluster(m2, "c2")
        s.ambient(m2, "INVALID_ARGUMENT: meant for c1", name="c1")
        self.assertEqual(s.kinds(), [("t1", "changed", None)])

    # ambient_error_cleared = the "OK" error line
    def test_a_cleared_error_never_logged_is_never_reported(self):
        # a57/ambient-error-cleared-by-a-response-that-changes-nothing
        s = Synth()
        m = first_value(s)
        s.channel_status()
        s.ambient(m, f"UNAVAILABLE: xDS channel for server {PRIMARY}: down" + NODE)
        s.response(version="1")
        s.identical()  # the "OK" line should follow
        self.assertEqual([k for _, k, _ in s.kinds()], ["changed", "ambient_error"])

    # resource_error (connectivity) = the channel-status line + an update
    def test_a_silent_stream_failure_is_not_reported(self):
        # a57/stream-closed-before-response-uncached: expect resource_error
        s = Synth()
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        s.channel_status(detail="xDS call failed with no responses received; status: UNAVAILABLE: overloaded")
        self.assertEqual(s.kinds(), [])
        del m

    def test_a_connectivity_error_with_another_code_keeps_it(self):
        s = Synth()
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        s.channel_status(code="INTERNAL")
        s.csds[(CDS, "c9")] = P.CsdsEntry("REQUESTED")
        s.update(m, "c9")
        self.assertEqual(s.kinds(), [("t1", "resource_error", "INTERNAL")])

    def test_an_unexplained_error_is_unknown(self):
        s = Synth()
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        s.csds[(CDS, "c9")] = P.CsdsEntry("REQUESTED")
        s.update(m, "c9")  # no channel error, nothing cached: C-core made it up
        self.assertEqual(s.kinds(), [("t1", "resource_error", "UNKNOWN")])
        self.assertTrue(s.classified[-1].warnings)

    # does_not_exist = timer line / deletion + update + DOES_NOT_EXIST
    def test_a_timer_that_fires_while_connecting_is_reported(self):
        # a57/does-not-exist-timer-needs-a-connected-stream: expect_none
        # does_not_exist while connections are refused -> fails
        s = Synth()
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        s.channel_status()
        s.csds[(CDS, "c9")] = P.CsdsEntry("REQUESTED")
        s.update(m, "c9")
        s.timeout("c9")
        s.csds[(CDS, "c9")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist")
        s.update(m, "c9")
        self.assertEqual(s.kinds(), [("t1", "resource_error", "UNAVAILABLE"), ("t1", "does_not_exist", None)])

    def test_a_timer_that_never_fires_reports_nothing(self):
        s = Synth()
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        self.assertEqual(s.kinds(), [])
        del m

    def test_a_deletion_kept_as_an_ambient_error(self):
        # a53: expect does_not_exist -> fails (C-core with
        # ignore_resource_deletion semantics, as measured in the note)
        s = Synth()
        m = first_value(s)
        s.response(version="2", resources=0)
        s.csds[(CDS, "c1")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist", any_bytes=make_any(CDS, "c1"))
        s.ambient(m, "NOT_FOUND: does not exist" + NODE)
        self.assertEqual(s.kinds()[-1], ("t1", "ambient_error", "NOT_FOUND"))

    def test_a_deletion_never_notified(self):
        s = Synth()
        first_value(s)
        s.response(version="2", resources=0)
        s.csds[(CDS, "c1")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist")
        self.assertEqual(s.kinds(), [("t1", "changed", None)])

    def test_a_timeout_stored_as_does_not_exist(self):
        # a88/resource-timer-is-transient-error...: expect UNAVAILABLE -> fails
        s = Synth(profile="a88")
        m = s.channel("t1", name="c9")
        s.watch_cluster(m, "c9")
        s.timeout("c9")
        s.csds[(CDS, "c9")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist")
        s.update(m, "c9")
        self.assertEqual(s.kinds(), [("t1", "resource_error", "NOT_FOUND")])

    # resource_error (server-reported, A88)
    def test_a_server_error_stored_as_a_deletion(self):
        # a88/server-error-without-a-value-is-a-resource-error: contains
        # "c2 was deleted" -> fails
        s = Synth(profile="a88")
        m = s.channel("t1", name="c2")
        s.watch_cluster(m, "c2")
        s.response(resources=0, errors=1)
        s.csds[(CDS, "c2")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist")
        s.update(m, "c2")
        self.assertEqual(s.events, [("t1", {"kind": "resource_error", "code": "NOT_FOUND", "message": "does not exist" + NODE})])

    def test_a_server_error_code_c_core_changed_is_reported_as_it_holds_it(self):
        s = Synth(profile="a88")
        m = s.channel("t1", name="c2")
        s.watch_cluster(m, "c2")
        m2 = s.channel("t2", name="c2")
        s.watch_cluster(m2, "c2")
        s.cached("error", "c2", "UNKNOWN: c2 was deleted")
        s.csds[(CDS, "c2")] = P.CsdsEntry("RECEIVED_ERROR", details="c2 was deleted")
        s.update(m2, "c2")
        self.assertEqual(s.kinds(), [("t2", "resource_error", "UNKNOWN")])
        del m

    # a second watcher of a cached resource = a second channel
    def test_no_cached_value_for_a_new_watcher(self):
        # a27/cached-value-for-new-watcher: expect changed within 0s -> fails
        s = Synth()
        first_value(s)
        m2 = s.channel("t2")
        s.watch_cluster(m2)  # C-core neither says "returning cached data" nor calls back
        self.assertEqual(s.kinds(), [("t1", "changed", None)])

    def test_a_cached_error_instead_of_the_cached_value(self):
        s = Synth()
        first_value(s)
        m2 = s.channel("t2")
        s.watch_cluster(m2)
        s.cached("error", status="UNAVAILABLE: stale")
        s.update(m2)
        self.assertEqual(s.kinds()[-1], ("t2", "resource_error", "UNAVAILABLE"))

    # the tap must be alive
    def test_no_manager_no_binding(self):
        # GRPC_TRACE without xds_resolver: the manager is never seen; the
        # adapter fails the watch (nothing could pass an expect_none)
        s = Synth()
        s.tracker.expect("t1", CDS, "c1", "w1", SCAFFOLD)
        s.feed(f"[xds_client {s.client}] xds server {PRIMARY}: received ADS response: type_url=envoy.config.cluster.v3.Cluster, version=1, nonce=1, num_resources=1, num_errors=0")
        self.assertEqual(s.bound, [])

    # profile: the same C-core status is named per profile
    def test_profile_names_the_timer(self):
        for profile, kind in ((None, "does_not_exist"), ("a88", "resource_error")):
            s = Synth(profile=profile)
            m = s.channel("t1", name="c9")
            s.watch_cluster(m, "c9")
            s.timeout("c9")
            s.csds[(CDS, "c9")] = P.CsdsEntry("DOES_NOT_EXIST", details="does not exist")
            s.update(m, "c9")
            self.assertEqual(s.events[-1][1]["kind"], kind)


class Robustness(unittest.TestCase):
    def test_source_trace_is_stripped_only_at_the_end(self):
        self.assertEqual(P.strip_source_trace("a (node ID:n)" + TRACE), "a (node ID:n)")
        self.assertEqual(P.strip_source_trace("a" + TRACE.rstrip("\n")), "a")
        nested = "outer: x\n=== Source Location Trace: === \nf.cc:1\n; more"
        self.assertEqual(P.strip_source_trace(nested), nested)
        self.assertEqual(P.strip_source_trace("plain"), "plain")

    def test_assembler_joins_continuation_lines(self):
        a = P.RecordAssembler()
        lines = [
            "stray continuation before any record",
            "I1124 20:59:42.962320   20535 xds_dependency_manager.cc:515] [XdsDependencyManager 0x1] received Cluster error: c1 INVALID_ARGUMENT: x (node ID:n)",
            "=== Source Location Trace: === ",
            "src/core/xds/xds_client/xds_client.cc:1915",
            "",
            "I1124 20:59:42.962321   20535 xds_dependency_manager.cc:962] [XdsDependencyManager 0x1] returning config: {",
        ]
        out = [r for r in (a.push(line) for line in lines) if r is not None]
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0].thread, "20535")
        self.assertEqual(out[0].line, 515)
        self.assertTrue(out[0].message.endswith("xds_client.cc:1915\n"))
        self.assertTrue(a.pending())
        self.assertEqual(a.flush().message, "[XdsDependencyManager 0x1] returning config: {")
        self.assertIsNone(a.flush())

    def test_assembler_is_bounded(self):
        a = P.RecordAssembler(max_lines=5, max_chars=1000)
        a.push("I1124 20:59:42.962320   1 f.cc:1] start")
        for _ in range(10000):
            a.push("x" * 100)
        record = a.flush()
        self.assertLessEqual(len(record.message), 1000)

    def test_garbage_never_raises(self):
        rng = random.Random(1185)
        recorded = []
        for name in sorted(os.listdir(TESTDATA)):
            if name.endswith(".jsonl"):
                with open(os.path.join(TESTDATA, name), encoding="utf-8") as f:
                    recorded += [json.loads(line)["r"][4] for line in f if line.startswith('{"r"')]
        s = Synth()
        s.tracker.expect("t1", CDS, "c1", "w1", SCAFFOLD)
        alphabet = "[]:0x aAZ_\n{}=,.;()" + "".join(chr(c) for c in range(0x20, 0x7F))
        for i in range(5000):
            base = rng.choice(recorded)
            cut = rng.randrange(len(base) + 1)
            noise = "".join(rng.choice(alphabet) for _ in range(rng.randrange(30)))
            message = base[:cut] + noise + base[cut + rng.randrange(5) :]
            s.csds[(CDS, "c1")] = rng.choice([None, acked(CDS, "c1"), P.CsdsEntry("WHATEVER")])
            s.feed(message, thread=str(rng.randrange(4)))
            P.parse_header(message)
        for message in ["", "[", "[XdsDependencyManager ", "[xds_client 0x1] ", "\x00\xff", "[XdsDependencyManager 0x1] received Cluster error: c1 "]:
            s.feed(message)

    def test_memory_is_bounded(self):
        s = Synth()
        s.tracker = P.Tracker(bootstrap=BOOT, limit=100)
        for i in range(20000):
            s.feed(f"[xds_client 0xc1] parsed Cluster n{i}: {{}}")
            s.feed(f"[xds_client 0xc1] returning cached data for n{i}", thread=str(i))
            s.feed(f"[XdsDependencyManager 0xm{i}] starting watch for listener {LISTENER}", thread=str(i))
        t = s.tracker
        self.assertLessEqual(len(t._typed), 100)
        # a bound manager is never forgotten
        s.tracker = t = P.Tracker(bootstrap=BOOT, limit=10)
        m = first_value(s)
        for i in range(100):
            s.feed(f"[XdsDependencyManager 0xe{i}] starting watch for listener {LISTENER}", thread=str(i))
        s.response(version="2")
        s.parsed()
        cluster_acked(s, version="2")
        s.update(m)
        self.assertEqual(s.kinds(), [("t1", "changed", None), ("t1", "changed", None)])
        self.assertLessEqual(len(t._managers), 10)
        self.assertLessEqual(len(t._untyped), 100)
        self.assertLessEqual(len(t._managers), 100)
        self.assertLessEqual(len(t._last_by_thread), 256)

    def test_projectable_types(self):
        t = P.Tracker()
        t.expect("a", "CDS", "c1", "w1", SCAFFOLD)
        t.expect("b", EDS, "e1", "w2", SCAFFOLD)
        with self.assertRaises(ValueError):
            t.expect("c", P.LDS_URL, "l1", "w3", SCAFFOLD)


if __name__ == "__main__":
    unittest.main()
