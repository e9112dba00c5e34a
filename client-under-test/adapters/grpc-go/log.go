package main

// The client's log as `log` events (ADAPTER_PROTOCOL.md, "The client's
// log"). grpc-go logs through grpclog: this LoggerV2 writes every line to
// stderr as grpc-go's own logger does (GRPC_GO_LOG_SEVERITY_LEVEL,
// GRPC_GO_LOG_VERBOSITY_LEVEL) and forwards the lines of grpc-go's xDS
// packages, with their level, once hello is out.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/grpclog"
)

// xdsComponent is the first argument of every line of
// grpclog.Component("xds"), the logger of all of grpc-go's xDS packages
// (the XdsClient, the resolver, the balancers, the xDS-enabled server).
const xdsComponent = "[xds]"

// forwardingLogger is a grpclog.DepthLoggerV2: component loggers (the xDS
// ones among them) log through its *Depth methods, other code through
// the plain ones, which are stderr's alone.
type forwardingLogger struct {
	stderr    grpclog.LoggerV2
	verbosity int
	out       *output
	// Set once hello is sent: the protocol allows no line before it.
	ready atomic.Bool
}

// installLogger makes grpc-go log through a forwardingLogger; called
// first thing in main, as grpclog.SetLoggerV2 must be.
func installLogger(out *output) *forwardingLogger {
	l := newForwardingLogger(out)
	grpclog.SetLoggerV2(l)
	return l
}

// newForwardingLogger reads the environment as grpc-go's default logger
// does (grpclog/loggerv2.go, newLoggerV2).
func newForwardingLogger(out *output) *forwardingLogger {
	infoW, warningW, errorW := io.Discard, io.Discard, io.Discard
	switch strings.ToLower(os.Getenv("GRPC_GO_LOG_SEVERITY_LEVEL")) {
	case "", "error":
		errorW = os.Stderr
	case "warning":
		warningW = os.Stderr
	case "info":
		infoW = os.Stderr
	}
	verbosity, _ := strconv.Atoi(os.Getenv("GRPC_GO_LOG_VERBOSITY_LEVEL"))
	return &forwardingLogger{
		stderr:    grpclog.NewLoggerV2WithVerbosity(infoW, warningW, errorW, verbosity),
		verbosity: verbosity,
		out:       out,
	}
}

// logLevels is what capabilities.logs declares. grpc-go writes its
// verbose lines (`if logger.V(2) { logger.Infof(...) }`, each request,
// response and watch) as INFO lines this logger cannot tell from the
// others: with a verbosity above 0 its INFO lines are not its log alone,
// so hello leaves info out (and the harness says that hello differs from
// adapter.json).
func (l *forwardingLogger) logLevels() []string {
	if l.verbosity > 0 {
		return []string{"warning", "error"}
	}
	return []string{"info", "warning", "error"}
}

// forward sends an xDS component's line (`args` as grpclog.InfoDepth gets
// them: the component's tag, then the message) as a `log` event.
func (l *forwardingLogger) forward(level string, args []any) {
	if !l.ready.Load() || len(args) < 2 {
		return
	}
	if tag, _ := args[0].(string); tag != xdsComponent {
		return
	}
	l.out.event("log", map[string]any{
		"level":   level,
		"message": strings.TrimSuffix(fmt.Sprintln(args...), "\n"),
	})
}

func (l *forwardingLogger) InfoDepth(_ int, args ...any) {
	l.stderr.Infoln(args...)
	l.forward("info", args)
}

func (l *forwardingLogger) WarningDepth(_ int, args ...any) {
	l.stderr.Warningln(args...)
	l.forward("warning", args)
}

func (l *forwardingLogger) ErrorDepth(_ int, args ...any) {
	l.stderr.Errorln(args...)
	l.forward("error", args)
}

func (l *forwardingLogger) FatalDepth(_ int, args ...any) {
	l.forward("error", args)
	l.stderr.Fatalln(args...)
}

func (l *forwardingLogger) Info(args ...any)                    { l.stderr.Info(args...) }
func (l *forwardingLogger) Infoln(args ...any)                  { l.stderr.Infoln(args...) }
func (l *forwardingLogger) Infof(format string, args ...any)    { l.stderr.Infof(format, args...) }
func (l *forwardingLogger) Warning(args ...any)                 { l.stderr.Warning(args...) }
func (l *forwardingLogger) Warningln(args ...any)               { l.stderr.Warningln(args...) }
func (l *forwardingLogger) Warningf(format string, args ...any) { l.stderr.Warningf(format, args...) }
func (l *forwardingLogger) Error(args ...any)                   { l.stderr.Error(args...) }
func (l *forwardingLogger) Errorln(args ...any)                 { l.stderr.Errorln(args...) }
func (l *forwardingLogger) Errorf(format string, args ...any)   { l.stderr.Errorf(format, args...) }
func (l *forwardingLogger) Fatal(args ...any)                   { l.stderr.Fatal(args...) }
func (l *forwardingLogger) Fatalln(args ...any)                 { l.stderr.Fatalln(args...) }
func (l *forwardingLogger) Fatalf(format string, args ...any)   { l.stderr.Fatalf(format, args...) }
func (l *forwardingLogger) V(level int) bool                    { return l.stderr.V(level) }
