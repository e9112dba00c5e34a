// {{NAME}}: an xds-conformance adapter (the protocol: the book's "Adapter
// protocol" page). It speaks JSON lines on stdin/stdout; stdout is the
// protocol's alone, so everything else (your client's logs) goes to stderr.
//
// What to fill in is marked TODO: start your client from the bootstrap the
// harness wrote (GRPC_XDS_BOOTSTRAP), add and remove its resource watchers,
// and report what they hear as `watcher` events. Until then every watch is
// answered and hears nothing, so the first run shows what to fill in.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
)

var out = json.NewEncoder(os.Stdout)
var outMu sync.Mutex

// send writes one protocol line; watcher callbacks may call it from any
// goroutine.
func send(line map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	_ = out.Encode(line)
}

func main() {
	// TODO: create your xDS client from os.Getenv("GRPC_XDS_BOOTSTRAP").
	send(map[string]any{"event": "hello", "protocol": 1, "client": "{{NAME}}", "version": "0",
		"capabilities": map[string]any{"watch": true}})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var command struct {
			ID   int64  `json:"id"`
			Op   string `json:"op"`
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(in.Bytes(), &command); err != nil {
			os.Exit(2)
		}
		reply := map[string]any{"id": command.ID, "ok": true}
		switch command.Op {
		case "watch":
			// TODO: start a watcher of (command.Type, command.Name) and, from
			// its callbacks, send a "watcher" event: kind "changed" with a
			// "summary" (or resource_error / ambient_error with "code" and
			// "message", does_not_exist).
		case "cancel_watch":
			// TODO: cancel the most recent watcher of (type, name).
		case "shutdown":
			send(reply)
			os.Exit(0)
		default:
			reply = map[string]any{"id": command.ID, "ok": false, "error": "unsupported: " + command.Op}
		}
		send(reply)
	}
}
