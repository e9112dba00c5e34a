#!/usr/bin/env node
// xds-conformance adapter for gRPC Node: @grpc/grpc-js + @grpc/grpc-js-xds.
//
// Speaks the adapter protocol (client-under-test/ADAPTER_PROTOCOL.md, version
// 1): JSON lines on stdin (commands) and stdout (hello, replies, events).
// stderr is the client's log (GRPC_TRACE / GRPC_VERBOSITY).
//
// Modules come from the project-local install in .peers/grpc-js/ (see
// install.sh); NODE_PATH is honoured as a fallback.
'use strict';

const path = require('path');
const readline = require('readline');
const util = require('util');
const { createRequire } = require('module');

// stdout carries protocol lines only: anything a library prints goes to stderr.
for (const name of ['log', 'info', 'warn', 'debug']) {
  console[name] = (...args) => process.stderr.write(util.format(...args) + '\n');
}

const PROTOCOL = 1;
const CLIENT = 'grpc-js';
const DEFAULT_METHOD = '/xds_conformance.Backend/Who';
const DEFAULT_RPC_TIMEOUT_MS = 5000;

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function log(level, message) {
  send({ event: 'log', level, message: String(message) });
}

function errorText(err) {
  if (err instanceof Error) return err.stack || err.message || String(err);
  return String(err);
}

// --- modules ------------------------------------------------------------------

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const PEER_DIR = path.join(REPO_ROOT, '.peers', 'grpc-js');

function loadPeer(name) {
  // grpc-js-xds takes @grpc/grpc-js as a peer dependency: both must resolve
  // to the same copy, so both are loaded from the same node_modules.
  const peerRequire = createRequire(path.join(PEER_DIR, 'package.json'));
  try {
    return { mod: peerRequire(name), pkg: peerRequire(name + '/package.json') };
  } catch (err) {
    if (err && err.code !== 'MODULE_NOT_FOUND') throw err;
    return { mod: require(name), pkg: require(name + '/package.json') };
  }
}

let grpc, grpcPkg, xds, xdsPkg;
try {
  ({ mod: grpc, pkg: grpcPkg } = loadPeer('@grpc/grpc-js'));
  ({ mod: xds, pkg: xdsPkg } = loadPeer('@grpc/grpc-js-xds'));
  // Registers the xds: resolver, the xDS LB policies and the CSDS admin service.
  xds.register();
} catch (err) {
  process.stderr.write(
    `grpc-js adapter: cannot load @grpc/grpc-js / @grpc/grpc-js-xds ` +
      `(run client-under-test/adapters/grpc-js/install.sh): ${errorText(err)}\n`,
  );
  process.exit(1);
}

// Version: grpc-js (the channel) with the grpc-js-xds version (the xDS client)
// as semver build metadata.
const VERSION = `${grpcPkg.version}+grpc-js-xds.${xdsPkg.version}`;

const CAPABILITIES = {
  dial: true,
  rpc: true,
  watch: false, // no public resource-watch API
  csds: true,
  fallback: false, // grpc-js-xds uses only xds_servers[0]
  delta: false,
  serve: true, // gRFC A36: grpc-js-xds's XdsServer
  profiles: [],
};

// --- name tables --------------------------------------------------------------

const STATE_NAMES = {
  [grpc.connectivityState.IDLE]: 'IDLE',
  [grpc.connectivityState.CONNECTING]: 'CONNECTING',
  [grpc.connectivityState.READY]: 'READY',
  [grpc.connectivityState.TRANSIENT_FAILURE]: 'TRANSIENT_FAILURE',
  [grpc.connectivityState.SHUTDOWN]: 'SHUTDOWN',
};

const CODE_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

function codeName(code) {
  return typeof code === 'number' && CODE_NAMES[code] ? CODE_NAMES[code] : 'UNKNOWN';
}

// --- channels -----------------------------------------------------------------

/** target -> { client, closed, lastState } */
const channels = new Map();

function emitState(target, entry, state) {
  if (entry.lastState === state) return;
  entry.lastState = state;
  send({ event: 'channel_state', target, state: STATE_NAMES[state] || String(state) });
}

function watchStates(target, entry) {
  const channel = entry.client.getChannel();
  // Each round reads the channel's state now (grpc-js calls watchers
  // synchronously, right after it changed state), reports it if new, and
  // waits for a change from exactly that state, so no state is skipped.
  const loop = () => {
    if (entry.closed) return;
    let state;
    try {
      state = channel.getConnectivityState(false);
      emitState(target, entry, state);
      if (state === grpc.connectivityState.SHUTDOWN) return;
      channel.watchConnectivityState(state, Infinity, loop);
    } catch (err) {
      // The channel was shut down under us.
      emitState(target, entry, grpc.connectivityState.SHUTDOWN);
    }
  };
  // Report the state the channel starts in (IDLE), then ask it to connect:
  // getConnectivityState(true) returns the state from BEFORE it left IDLE,
  // so the loop reads the state afresh.
  emitState(target, entry, channel.getConnectivityState(false));
  channel.getConnectivityState(true);
  loop();
}

function dial(target) {
  let entry = channels.get(target);
  if (entry) return entry;
  const client = new grpc.Client(target, grpc.credentials.createInsecure());
  entry = { client, closed: false, lastState: undefined };
  channels.set(target, entry);
  watchStates(target, entry);
  return entry;
}

function identity(x) {
  return x;
}

function rpc(cmd) {
  return new Promise((resolve) => {
    const target = cmd.target;
    if (typeof target !== 'string' || target === '') {
      throw new Error('rpc: missing "target"');
    }
    const { client } = dial(target);
    const method = cmd.method || DEFAULT_METHOD;
    const timeoutMs = Number.isFinite(cmd.timeout_ms) ? cmd.timeout_ms : DEFAULT_RPC_TIMEOUT_MS;
    const options = { deadline: new Date(Date.now() + timeoutMs) };
    // grpc-js takes wait-for-ready as a Metadata option, not a call option.
    const metadata = new grpc.Metadata({ waitForReady: Boolean(cmd.wait_for_ready) });
    client.makeUnaryRequest(
      method,
      identity,
      identity,
      Buffer.alloc(0),
      metadata,
      options,
      (err, value) => {
        if (err) {
          resolve({
            code: codeName(err.code),
            message: err.details !== undefined ? String(err.details) : String(err.message || ''),
          });
        } else {
          resolve({
            code: 'OK',
            message: '',
            backend: Buffer.isBuffer(value) ? value.toString('utf8') : String(value),
          });
        }
      },
    );
  });
}

// --- commands -----------------------------------------------------------------

let server = null;
let shuttingDown = false;

// --- xDS-enabled servers (gRFC A36) -------------------------------------------

/** listening address -> XdsServer */
const xdsServers = new Map();

const BACKEND_METHOD = '/xds_conformance.Backend/Who';

function serve(address) {
  if (xdsServers.has(address)) throw new Error(`already serving on ${address}`);
  let xdsServer;
  try {
    xdsServer = new xds.XdsServer();
  } catch (err) {
    // A36 lets a client refuse to create the server (a bootstrap without
    // server_listener_resource_name_template): the protocol reports that
    // as NOT_SERVING, FAILED_PRECONDITION.
    send({
      event: 'serving_status',
      address,
      state: 'NOT_SERVING',
      code: 'FAILED_PRECONDITION',
      message: err && err.message ? err.message : String(err),
    });
    return;
  }
  // The data-plane method answers "server", so a serving server can be called.
  xdsServer.register(
    BACKEND_METHOD,
    (call, callback) => callback(null, Buffer.from('server')),
    (x) => x,
    (x) => x,
    'unary',
  );
  xdsServer.bindAsync(address, grpc.ServerCredentials.createInsecure(), () => {
    // Called once serving; the serving-state listener reports it.
  });
  xdsServer.addServingStateListener(address, (status) => {
    if (shuttingDown) return;
    if (status.code === grpc.status.OK) {
      send({ event: 'serving_status', address, state: 'SERVING' });
    } else {
      send({
        event: 'serving_status',
        address,
        state: 'NOT_SERVING',
        code: codeName(status.code),
        message: String(status.details || ''),
      });
    }
  });
  xdsServers.set(address, xdsServer);
}

function closeAll() {
  for (const xdsServer of xdsServers.values()) {
    try {
      xdsServer.forceShutdown();
    } catch (_) {
      // best effort
    }
  }
  xdsServers.clear();
  for (const entry of channels.values()) {
    entry.closed = true;
    try {
      entry.client.close();
    } catch (_) {
      // closing is best effort
    }
  }
  if (server) {
    try {
      server.forceShutdown();
    } catch (_) {
      // best effort
    }
  }
}

function shutdown(id) {
  if (shuttingDown) {
    if (id !== undefined) send({ id, ok: true });
    return;
  }
  shuttingDown = true;
  closeAll();
  const exit = () => process.exit(0);
  if (id !== undefined) {
    process.stdout.write(JSON.stringify({ id, ok: true }) + '\n', exit);
  } else {
    exit();
  }
  // If stdout never drains, still leave well within the harness's 10 s.
  setTimeout(exit, 2000).unref();
}

async function handle(cmd) {
  const id = cmd.id;
  switch (cmd.op) {
    case 'dial':
      if (typeof cmd.target !== 'string' || cmd.target === '') {
        return { id, ok: false, error: 'dial: missing "target"' };
      }
      dial(cmd.target);
      return { id, ok: true };
    case 'rpc':
      return { id, ok: true, result: await rpc(cmd) };
    case 'serve':
      if (typeof cmd.address !== 'string' || cmd.address === '') {
        return { id, ok: false, error: 'serve: missing "address"' };
      }
      serve(cmd.address);
      return { id, ok: true };
    case 'watch':
    case 'cancel_watch':
      return {
        id,
        ok: false,
        error: 'unsupported: grpc-js-xds has no public resource-watch API (use dial)',
      };
    case 'shutdown':
      shutdown(id);
      return null; // replied by shutdown()
    default:
      return { id, ok: false, error: `unsupported: unknown op ${JSON.stringify(cmd.op)}` };
  }
}

function onLine(line) {
  if (line.trim() === '') return;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (err) {
    log('error', `adapter: not JSON: ${line.slice(0, 200)}`);
    return;
  }
  if (cmd === null || typeof cmd !== 'object') {
    log('error', `adapter: not a command object: ${line.slice(0, 200)}`);
    return;
  }
  if (shuttingDown) return;
  Promise.resolve()
    .then(() => handle(cmd))
    .then(
      (reply) => {
        if (reply && !shuttingDown) send(reply);
      },
      (err) => {
        if (!shuttingDown) send({ id: cmd.id, ok: false, error: errorText(err) });
      },
    );
}

// --- start --------------------------------------------------------------------

process.on('uncaughtException', (err) => {
  process.stderr.write(`grpc-js adapter: uncaught exception: ${errorText(err)}\n`);
  log('error', `adapter: uncaught exception: ${err && err.message ? err.message : err}`);
});
process.on('unhandledRejection', (err) => {
  process.stderr.write(`grpc-js adapter: unhandled rejection: ${errorText(err)}\n`);
});
process.on('SIGTERM', () => shutdown(undefined));

function start() {
  if (process.env.XDS_CONFORMANCE_PROFILE) {
    process.stderr.write(
      `grpc-js adapter: profile ${process.env.XDS_CONFORMANCE_PROFILE} ignored (none declared)\n`,
    );
  }
  server = new grpc.Server();
  // CSDS (envoy.service.status.v3.ClientStatusDiscoveryService) is registered
  // as an admin service by grpc-js-xds's register().
  grpc.addAdminServicesToServer(server);
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    const hello = {
      event: 'hello',
      protocol: PROTOCOL,
      client: CLIENT,
      version: VERSION,
      capabilities: CAPABILITIES,
    };
    if (err) {
      process.stderr.write(`grpc-js adapter: CSDS server did not bind: ${errorText(err)}\n`);
    } else {
      hello.csds_address = `127.0.0.1:${port}`;
    }
    send(hello);
    const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    rl.on('line', onLine);
    rl.on('close', () => shutdown(undefined));
  });
}

start();
