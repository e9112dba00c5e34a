// {{NAME}}: an xds-conformance adapter (the protocol: the book's "Adapter
// protocol" page). It speaks JSON lines on stdin/stdout; stdout is the
// protocol's alone, so everything else (your client's logs) goes to stderr.
//
// What to fill in is marked TODO: start your client from the bootstrap the
// harness wrote (GRPC_XDS_BOOTSTRAP), add and remove its resource watchers,
// and report what they hear as `watcher` events. Until then every watch is
// answered and hears nothing, so the first run shows what to fill in.
'use strict';
const readline = require('node:readline');

function send(line) {
  process.stdout.write(JSON.stringify(line) + '\n');
}

// TODO: create your xDS client from process.env.GRPC_XDS_BOOTSTRAP.
send({event: 'hello', protocol: 1, client: '{{NAME}}', version: '0',
      capabilities: {watch: true}});

const lines = readline.createInterface({input: process.stdin});
lines.on('line', (raw) => {
  const command = JSON.parse(raw);
  const reply = {id: command.id, ok: true};
  switch (command.op) {
    case 'watch':
      // TODO: start a watcher of (command.type, command.name) and, from its
      // callbacks, send({event: 'watcher', type, name, kind: 'changed',
      // summary}) (or resource_error / ambient_error with code and message,
      // does_not_exist).
      break;
    case 'cancel_watch':
      // TODO: cancel the most recent watcher of (type, name).
      break;
    case 'shutdown':
      send(reply);
      process.exit(0);
      break;
    default:
      send({id: command.id, ok: false, error: 'unsupported: ' + command.op});
      return;
  }
  send(reply);
});
lines.on('close', () => process.exit(0));
