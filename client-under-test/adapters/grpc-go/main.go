// Command adapter is the xds-conformance adapter for grpc-go
// (google.golang.org/grpc, the version pinned in go.mod).
//
// It speaks the adapter protocol (client-under-test/ADAPTER_PROTOCOL.md,
// version 1): JSON lines in on stdin (commands), JSON lines out on stdout (a
// hello, one reply per command, channel_state / watcher / serving_status /
// log events). stderr is the client's log (grpclog; GRPC_GO_LOG_* in
// adapter.json); the lines of its xDS packages are `log` events too
// (log.go).
//
// The module is named google.golang.org/grpc/xdsconformance so that it may
// import grpc-go's internal packages (Go's internal rule is by import path,
// not by module): the generic XdsClient's WatchResource, through the same
// DefaultPool the channels, the xDS-enabled servers and CSDS use. See
// README.md, "Watches".
//
// Started by the harness from the repository root with the binary install.sh
// built: .peers/grpc-go/bin/grpc-go-adapter
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	v3statusgrpc "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"
	"google.golang.org/grpc/xds/csds"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	istats "google.golang.org/grpc/internal/stats"
	genericxdsclient "google.golang.org/grpc/internal/xds/clients/xdsclient"
	"google.golang.org/grpc/internal/xds/xdsclient"
	"google.golang.org/grpc/internal/xds/xdsclient/xdsresource"
	"google.golang.org/grpc/internal/xds/xdsclient/xdsresource/version"
)

const (
	protocolVersion = 1
	clientName      = "grpc-go"
	defaultMethod   = "/xds_conformance.Backend/Who"
	defaultTimeout  = 10 * time.Second
	// The name under which the watches' XdsClient sits in DefaultPool: CSDS
	// reports it as that ClientConfig's client_scope. Channels are keyed by
	// their target (xds:///svc), xDS-enabled servers by "#server".
	watchClientName = "xds-conformance-watches"
)

// capabilities must equal adapter.json's.
var capabilities = map[string]any{
	"dial":     true,
	"rpc":      true,
	"watch":    true, // the generic XdsClient's WatchResource (internal API)
	"csds":     true,
	"delta":    false, // grpc-go speaks SotW only (README.md)
	"serve":    true,  // gRFC A36: xds.NewGRPCServer
	"profiles": []string{},
	// The levels of grpc-go's xDS log forwarded as `log` events; main sets
	// them (log.go, logLevels).
	"logs": []string{},
}

// --- output -------------------------------------------------------------------

// output is the protocol's stdout: whole lines, one writer at a time; after
// the shutdown reply it is sealed.
type output struct {
	mu     sync.Mutex
	f      *os.File
	sealed bool
}

func (o *output) send(v map[string]any, seal bool) {
	line, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "[adapter] cannot encode %v: %v\n", v, err)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sealed {
		return
	}
	if _, err := o.f.Write(append(line, '\n')); err != nil {
		// The harness is gone.
		os.Exit(0)
	}
	if seal {
		o.sealed = true
	}
}

func (o *output) event(name string, fields map[string]any) {
	m := map[string]any{"event": name}
	for k, v := range fields {
		m[k] = v
	}
	o.send(m, false)
}

func (o *output) reply(id any, fields map[string]any) {
	m := map[string]any{"id": id, "ok": true}
	for k, v := range fields {
		m[k] = v
	}
	o.send(m, false)
}

func (o *output) fail(id any, format string, args ...any) {
	o.send(map[string]any{"id": id, "ok": false, "error": fmt.Sprintf(format, args...)}, false)
}

func (o *output) log(level, format string, args ...any) {
	o.event("log", map[string]any{"level": level, "message": fmt.Sprintf(format, args...)})
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[adapter] "+format+"\n", args...)
}

// --- raw bytes codec ------------------------------------------------------------

// rawCodec sends and receives the bytes as they are: the data-plane service is
// schema-free. Named "proto" so the content-type stays application/grpc+proto.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch b := v.(type) {
	case *[]byte:
		return *b, nil
	case []byte:
		return b, nil
	}
	return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// --- names ----------------------------------------------------------------------

var stateNames = map[connectivity.State]string{
	connectivity.Idle:             "IDLE",
	connectivity.Connecting:       "CONNECTING",
	connectivity.Ready:            "READY",
	connectivity.TransientFailure: "TRANSIENT_FAILURE",
	connectivity.Shutdown:         "SHUTDOWN",
}

var codeNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

func codeName(c codes.Code) string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "UNKNOWN"
}

var shortTypes = map[string]string{
	"LDS": version.V3ListenerURL,
	"RDS": version.V3RouteConfigURL,
	"CDS": version.V3ClusterURL,
	"EDS": version.V3EndpointsURL,
}

func fullTypeURL(t string) (string, error) {
	if u, ok := shortTypes[t]; ok {
		return u, nil
	}
	for _, u := range shortTypes {
		if u == t {
			return u, nil
		}
	}
	return "", fmt.Errorf("unsupported: resource type %q", t)
}

// --- grpc-go's watcher errors ------------------------------------------------------

// The generic XdsClient passes watchers Go errors, not statuses. Most carry a
// type (internal/xds/clients/xdsclient/internal/xdsresource/errors.go, an
// internal package this module cannot import, hence reflection on its
// unexported field). These are the values of its ErrorType (errors.go:32-47).
const (
	errTypeUnknown = iota
	errTypeConnection
	errTypeResourceNotFound
	errTypeResourceTypeUnsupported
	errTypeStreamFailedAfterRecv
	errTypeNACKed
)

// xdsErrType finds the generic XdsClient's *xdsClientError in err's chain and
// returns its type, or errTypeUnknown (-1 when there is none at all).
func xdsErrType(err error) int {
	for e := err; e != nil; e = errors.Unwrap(e) {
		v := reflect.ValueOf(e)
		if v.Kind() != reflect.Pointer || v.IsNil() {
			continue
		}
		t := v.Type().Elem()
		if t.Name() != "xdsClientError" || !strings.HasSuffix(t.PkgPath(), "/xdsresource") {
			continue
		}
		if f := v.Elem().FieldByName("t"); f.IsValid() && f.CanInt() {
			return int(f.Int())
		}
	}
	return -1
}

// errorCode is the adapter's status code for an error grpc-go gives a
// watcher or a server (README.md, "Codes"): grpc-go itself gives none.
func errorCode(err error) string {
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return codeName(s.Code())
	}
	switch xdsErrType(err) {
	case errTypeConnection, errTypeStreamFailedAfterRecv:
		return "UNAVAILABLE"
	case errTypeResourceNotFound:
		return "NOT_FOUND"
	case errTypeNACKed, errTypeResourceTypeUnsupported:
		return "INVALID_ARGUMENT"
	case -1:
		// No type: for a watcher, one of WatchResource's own refusals
		// (clientimpl_watchers.go:69, an unknown type; :79, an authority
		// not in the bootstrap): the watch cannot start as configured.
		return "FAILED_PRECONDITION"
	}
	return "UNKNOWN"
}

// --- channels ---------------------------------------------------------------------

type channel struct {
	conn   *grpc.ClientConn
	cancel context.CancelFunc
}

type adapter struct {
	out *output

	mu       sync.Mutex
	channels map[string]*channel
	servers  map[string]*xds.GRPCServer

	watchClient      xdsclient.XDSClient
	watchClientClose func()
	watches          map[string][]func() // "typeURL name" -> cancels, most recent last

	csdsServer   *grpc.Server
	shuttingDown bool
	inflight     sync.WaitGroup
}

func (a *adapter) emitState(target string, s connectivity.State) {
	a.out.event("channel_state", map[string]any{"target": target, "state": stateNames[s]})
}

// dial returns the channel of target, creating it (and reporting its states)
// the first time.
func (a *adapter) dial(target string) (*channel, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch, ok := a.channels[target]; ok {
		return ch, nil
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := &channel{conn: conn, cancel: cancel}
	a.channels[target] = ch
	// The state it starts in (IDLE), then every change, each read afresh
	// and waited on from exactly that state, so none is skipped.
	last := conn.GetState()
	a.emitState(target, last)
	conn.Connect()
	go func() {
		for {
			s := conn.GetState()
			if s != last {
				last = s
				a.emitState(target, s)
			}
			if s == connectivity.Shutdown || !conn.WaitForStateChange(ctx, s) {
				return
			}
		}
	}()
	return ch, nil
}

func (a *adapter) rpc(id any, cmd map[string]any) {
	defer a.inflight.Done()
	target, _ := cmd["target"].(string)
	if target == "" {
		a.out.fail(id, "rpc: missing target")
		return
	}
	if _, ok := cmd["authority"]; ok {
		a.out.fail(id, "unsupported: rpc with authority (grpc-go is not a proxy)")
		return
	}
	method, _ := cmd["method"].(string)
	if method == "" {
		method = defaultMethod
	}
	timeout := defaultTimeout
	if ms, ok := cmd["timeout_ms"].(float64); ok {
		timeout = time.Duration(ms) * time.Millisecond
	}
	waitForReady, _ := cmd["wait_for_ready"].(bool)
	ch, err := a.dial(target)
	if err != nil {
		a.out.fail(id, "rpc: dial %s: %v", target, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := []byte{}
	var resp []byte
	err = ch.conn.Invoke(ctx, method, &req, &resp, grpc.ForceCodec(rawCodec{}), grpc.WaitForReady(waitForReady))
	if err != nil {
		s := status.Convert(err)
		a.out.reply(id, map[string]any{"result": map[string]any{"code": codeName(s.Code()), "message": s.Message()}})
		return
	}
	a.out.reply(id, map[string]any{"result": map[string]any{"code": "OK", "message": "", "backend": string(resp)}})
}

// --- watches ------------------------------------------------------------------------

// watcher is one `watch`: a genericxdsclient.ResourceWatcher whose callbacks
// become watcher events. The generic client calls them serially and waits for
// done before it reads the next response (flow control): done is called
// once the event is written.
type watcher struct {
	a       *adapter
	typeURL string
	name    string // as the XdsClient keys it: xdsresource.ParseName(name).String()
	mu      sync.Mutex
	stopped bool
}

func (w *watcher) report(fields map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	m := map[string]any{"type": w.typeURL, "name": w.name}
	for k, v := range fields {
		m[k] = v
	}
	w.a.out.event("watcher", m)
}

func (w *watcher) ResourceChanged(data genericxdsclient.ResourceData, done func()) {
	defer done()
	var raw *anypb.Any
	switch d := data.(type) {
	case *xdsresource.ListenerResourceData:
		raw = d.Resource.Raw
	case *xdsresource.RouteConfigResourceData:
		raw = d.Resource.Raw
	case *xdsresource.ClusterResourceData:
		raw = d.Resource.Raw
	case *xdsresource.EndpointsResourceData:
		raw = d.Resource.Raw
	}
	if raw == nil {
		// Bytes() is the resource's serialized proto: the type is ours.
		raw = &anypb.Any{TypeUrl: w.typeURL, Value: data.Bytes()}
	}
	b, err := proto.Marshal(raw)
	if err != nil {
		w.report(map[string]any{"kind": "changed", "summary": fmt.Sprintf("(cannot encode the resource: %v)", err)})
		return
	}
	w.report(map[string]any{"kind": "changed", "resource": base64.StdEncoding.EncodeToString(b)})
}

func (w *watcher) ResourceError(err error, done func()) {
	defer done()
	if xdsErrType(err) == errTypeResourceNotFound {
		// The does-not-exist timer, or a SotW response without it
		// (authority.go:505,549,731).
		w.report(map[string]any{"kind": "does_not_exist"})
		return
	}
	w.report(map[string]any{"kind": "resource_error", "code": errorCode(err), "message": err.Error()})
}

func (w *watcher) AmbientError(err error, done func()) {
	defer done()
	w.report(map[string]any{"kind": "ambient_error", "code": errorCode(err), "message": err.Error()})
}

func (a *adapter) watchClientLocked() (xdsclient.XDSClient, error) {
	if a.watchClient != nil {
		return a.watchClient, nil
	}
	// DefaultPool: the pool the channels' resolvers, the xDS-enabled servers
	// and CSDS use (one bootstrap, read once per process).
	c, closeFn, err := xdsclient.DefaultPool.NewClient(watchClientName, istats.NewMetricsRecorderList(nil))
	if err != nil {
		return nil, err
	}
	a.watchClient, a.watchClientClose = c, closeFn
	return c, nil
}

func (a *adapter) watch(cmd map[string]any) error {
	typeURL, err := fullTypeURL(fmt.Sprint(cmd["type"]))
	if err != nil {
		return err
	}
	name, ok := cmd["name"].(string)
	if !ok {
		return fmt.Errorf("watch: missing name")
	}
	if _, ok := cmd["via"]; ok {
		return fmt.Errorf("unsupported: projected watches (grpc-go has a watch API)")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	client, err := a.watchClientLocked()
	if err != nil {
		return fmt.Errorf("watch: no XdsClient: %v", err)
	}
	w := &watcher{a: a, typeURL: typeURL, name: xdsresource.ParseName(name).String()}
	cancel := client.WatchResource(typeURL, name, w)
	key := typeURL + " " + name
	a.watches[key] = append(a.watches[key], func() {
		cancel()
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
	})
	return nil
}

func (a *adapter) cancelWatch(cmd map[string]any) error {
	typeURL, err := fullTypeURL(fmt.Sprint(cmd["type"]))
	if err != nil {
		return err
	}
	name, _ := cmd["name"].(string)
	a.mu.Lock()
	key := typeURL + " " + name
	list := a.watches[key]
	if len(list) == 0 {
		a.mu.Unlock()
		return fmt.Errorf("cancel_watch: no watch of %s %s", typeURL, name)
	}
	cancel := list[len(list)-1]
	a.watches[key] = list[:len(list)-1]
	a.mu.Unlock()
	cancel()
	return nil
}

// --- xDS-enabled servers (gRFC A36) -----------------------------------------------

func (a *adapter) serve(address string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.servers[address]; ok {
		return fmt.Errorf("already serving on %s", address)
	}
	report := func(args xds.ServingModeChangeArgs) {
		a.mu.Lock()
		down := a.shuttingDown
		a.mu.Unlock()
		if down {
			return
		}
		if args.Mode == connectivity.ServingModeServing {
			a.out.event("serving_status", map[string]any{"address": address, "state": "SERVING"})
			return
		}
		code, message := "UNKNOWN", "not serving"
		if args.Err != nil {
			code, message = errorCode(args.Err), args.Err.Error()
		}
		a.out.event("serving_status", map[string]any{"address": address, "state": "NOT_SERVING", "code": code, "message": message})
	}
	s, err := xds.NewGRPCServer(
		grpc.Creds(insecure.NewCredentials()),
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			var req []byte
			if err := stream.RecvMsg(&req); err != nil {
				return err
			}
			resp := []byte("server")
			return stream.SendMsg(&resp)
		}),
		xds.ServingModeCallback(func(_ net.Addr, args xds.ServingModeChangeArgs) { report(args) }),
	)
	if err != nil {
		// A36 lets a client refuse to create the server (a bootstrap without
		// server_listener_resource_name_template, xds/server.go): the
		// protocol reports that as NOT_SERVING FAILED_PRECONDITION.
		a.out.event("serving_status", map[string]any{"address": address, "state": "NOT_SERVING", "code": "FAILED_PRECONDITION", "message": err.Error()})
		return nil
	}
	// grpc-go names the server's Listener resource after lis.Addr()
	// (xds/server.go, Serve): an IPv4 address must be listened on as tcp4,
	// or Go reports 0.0.0.0:P as [::]:P.
	network := "tcp"
	if host, _, err := net.SplitHostPort(address); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
			network = "tcp4"
		} else if ip != nil {
			network = "tcp6"
		}
	}
	lis, err := net.Listen(network, address)
	if err != nil {
		s.Stop()
		return fmt.Errorf("serve: listen on %s: %v", address, err)
	}
	a.servers[address] = s
	go func() {
		if err := s.Serve(lis); err != nil {
			logf("server on %s: Serve returned: %v", address, err)
		}
	}()
	return nil
}

// --- commands ---------------------------------------------------------------------------

func (a *adapter) handle(line []byte) {
	var cmd map[string]any
	if err := json.Unmarshal(line, &cmd); err != nil {
		a.out.log("error", "adapter: not a JSON object: %v: %.200q", err, line)
		return
	}
	id, ok := cmd["id"]
	if !ok {
		a.out.log("error", "adapter: a command needs an id: %.200q", line)
		return
	}
	op, _ := cmd["op"].(string)
	switch op {
	case "dial":
		target, _ := cmd["target"].(string)
		if target == "" {
			a.out.fail(id, "dial: missing target")
			return
		}
		if _, err := a.dial(target); err != nil {
			a.out.fail(id, "dial %s: %v", target, err)
			return
		}
		a.out.reply(id, nil)
	case "rpc":
		a.inflight.Add(1)
		go a.rpc(id, cmd)
	case "watch":
		if err := a.watch(cmd); err != nil {
			a.out.fail(id, "%v", err)
			return
		}
		a.out.reply(id, nil)
	case "cancel_watch":
		if err := a.cancelWatch(cmd); err != nil {
			a.out.fail(id, "%v", err)
			return
		}
		a.out.reply(id, nil)
	case "serve":
		address, _ := cmd["address"].(string)
		if address == "" {
			a.out.fail(id, "serve: missing address")
			return
		}
		if err := a.serve(address); err != nil {
			a.out.fail(id, "%v", err)
			return
		}
		a.out.reply(id, nil)
	case "shutdown":
		a.shutdown(id)
	case "":
		a.out.fail(id, "a command needs an op")
	default:
		a.out.fail(id, "unsupported: op %s", op)
	}
}

// shutdown closes the channels (their RPCs end CANCELLED and reply), the
// watches, the servers and the CSDS server, replies if asked, and exits 0.
func (a *adapter) shutdown(id any) {
	a.mu.Lock()
	if a.shuttingDown {
		a.mu.Unlock()
		return
	}
	a.shuttingDown = true
	channels := a.channels
	servers := a.servers
	var cancels []func()
	keys := make([]string, 0, len(a.watches))
	for k := range a.watches {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cancels = append(cancels, a.watches[k]...)
	}
	a.mu.Unlock()

	for _, cancel := range cancels {
		cancel()
	}
	for _, ch := range channels {
		ch.cancel()
		ch.conn.Close()
	}
	waited := make(chan struct{})
	go func() { a.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Second):
	}
	for _, s := range servers {
		s.Stop()
	}
	if a.watchClientClose != nil {
		a.watchClientClose()
	}
	if a.csdsServer != nil {
		a.csdsServer.Stop()
	}
	if id != nil {
		a.out.send(map[string]any{"id": id, "ok": true}, true)
	}
	os.Exit(0)
}

func main() {
	// stdout belongs to the protocol: keep a private handle on it and point
	// fd 1 at stderr, so nothing else in the process can write a line there.
	fd, err := unix.Dup(1)
	if err != nil {
		fmt.Fprintf(os.Stderr, "[adapter] dup stdout: %v\n", err)
		os.Exit(1)
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		fmt.Fprintf(os.Stderr, "[adapter] redirect stdout: %v\n", err)
		os.Exit(1)
	}
	out := &output{f: os.NewFile(uintptr(fd), "protocol-stdout")}
	logger := installLogger(out)
	capabilities["logs"] = logger.logLevels()

	if p := os.Getenv("XDS_CONFORMANCE_PROFILE"); p != "" {
		logf("profile %q ignored (none declared)", p)
	}

	a := &adapter{
		out:      out,
		channels: map[string]*channel{},
		servers:  map[string]*xds.GRPCServer{},
		watches:  map[string][]func(){},
	}

	// CSDS, in process: every XdsClient of DefaultPool (csds.go).
	a.csdsServer = grpc.NewServer()
	csdsService, err := csds.NewClientStatusDiscoveryServer()
	if err != nil {
		logf("cannot create the CSDS service: %v", err)
		os.Exit(1)
	}
	v3statusgrpc.RegisterClientStatusDiscoveryServiceServer(a.csdsServer, csdsService)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		logf("cannot listen for CSDS: %v", err)
		os.Exit(1)
	}
	go func() { _ = a.csdsServer.Serve(lis) }()

	out.event("hello", map[string]any{
		"protocol":     protocolVersion,
		"client":       clientName,
		"version":      grpc.Version,
		"capabilities": capabilities,
		"csds_address": lis.Addr().String(),
	})
	logger.ready.Store(true)
	logf("hello: grpc-go %s, CSDS on %s, bootstrap %s", grpc.Version, lis.Addr(), os.Getenv("GRPC_XDS_BOOTSTRAP"))

	reader := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := reader.ReadBytes('\n')
		if trimmed := strings.TrimSpace(string(line)); trimmed != "" {
			a.handle([]byte(trimmed))
		}
		if err != nil {
			logf("stdin closed: shutting down")
			a.shutdown(nil)
			return
		}
	}
}
