#!/usr/bin/env node
// xds-conformance adapter for gRPC Node: @grpc/grpc-js + @grpc/grpc-js-xds.
//
// Speaks the adapter protocol (client-under-test/ADAPTER_PROTOCOL.md, version
// 1): JSON lines on stdin (commands) and stdout (hello, replies, events).
// stderr is the client's log (GRPC_TRACE / GRPC_VERBOSITY); its error and
// info lines are `log` events too (setLogger below).
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
    if (name.includes('/build/')) return { mod: peerRequire(name), pkg: null };
    return { mod: peerRequire(name), pkg: peerRequire(name + '/package.json') };
  } catch (err) {
    if (err && err.code !== 'MODULE_NOT_FOUND') throw err;
    return { mod: require(name), pkg: require(name + '/package.json') };
  }
}

let grpc, grpcPkg, xds, xdsPkg, xdsClientModule, resourcesModule, resourceTypes;
try {
  ({ mod: grpc, pkg: grpcPkg } = loadPeer('@grpc/grpc-js'));
  ({ mod: xds, pkg: xdsPkg } = loadPeer('@grpc/grpc-js-xds'));
  // The XdsClient and its resource types: an internal API of the pinned
  // grpc-js-xds 1.14.1 (its own tests use it), pinned by the lock file.
  const build = '@grpc/grpc-js-xds/build/src/';
  xdsClientModule = loadPeer(build + 'xds-client').mod;
  resourcesModule = loadPeer(build + 'resources').mod;
  const type = (file, name) => loadPeer(build + 'xds-resource-type/' + file).mod[name];
  resourceTypes = {
    'type.googleapis.com/envoy.config.listener.v3.Listener': type('listener-resource-type', 'ListenerResourceType'),
    'type.googleapis.com/envoy.config.route.v3.RouteConfiguration': type('route-config-resource-type', 'RouteConfigurationResourceType'),
    'type.googleapis.com/envoy.config.cluster.v3.Cluster': type('cluster-resource-type', 'ClusterResourceType'),
    'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment': type('endpoint-resource-type', 'EndpointResourceType'),
  };
  // Registers the xds: resolver, the xDS LB policies and the CSDS admin service.
  xds.register();
} catch (err) {
  process.stderr.write(
    `grpc-js adapter: cannot load @grpc/grpc-js / @grpc/grpc-js-xds ` +
      `(run client-under-test/adapters/grpc-js/install.sh): ${errorText(err)}\n`,
  );
  process.exit(1);
}

// grpc-js's log as `log` events (ADAPTER_PROTOCOL.md, "The client's log"):
// grpc-js hands its logger error, info and debug lines, and every GRPC_TRACE
// line is a debug one (logging.trace), so its error and info lines are its log
// alone. It has no WARNING level. Every line goes to stderr first, as grpc-js's
// default logger writes it; none is forwarded before hello or during shutdown
// (its reply is the last line).
let helloSent = false;
function clientLog(prefix, level) {
  return (...args) => {
    const message = util.format(...args);
    process.stderr.write(prefix + message + '\n');
    if (level && helloSent && !shuttingDown) log(level, message);
  };
}
grpc.setLogger({
  error: clientLog('E ', 'error'),
  info: clientLog('I ', 'info'),
  debug: clientLog('D ', null),
});

// Version: grpc-js (the channel) with the grpc-js-xds version (the xDS client)
// as semver build metadata.
const VERSION = `${grpcPkg.version}+grpc-js-xds.${xdsPkg.version}`;

const CAPABILITIES = {
  dial: true,
  rpc: true,
  // XdsClient.watchResource: the channels' own XdsClient (the singleton).
  watch: true,
  csds: true,
  delta: false,
  serve: true, // gRFC A36: grpc-js-xds's XdsServer
  // Its log at every level it has (see setLogger above).
  logs: ['info', 'warning', 'error'],
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

// --- resource watches -----------------------------------------------------------

const SHORT_TYPES = {
  LDS: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  RDS: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  CDS: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  EDS: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
};

/** "typeUrl name" -> watchers, most recent last */
const watchers = new Map();

/** The resource's state in the XdsClient (cached value, CSDS meta). */
function resourceState(client, typeUrl, name) {
  const type = resourceTypes[typeUrl].get();
  let parsed;
  try {
    // The XdsClient parses names against the bare type name
    // (getTypeUrl(): "envoy.config.cluster.v3.Cluster").
    parsed = resourcesModule.parseXdsResourceName(name, type.getTypeUrl());
  } catch (err) {
    return undefined; // a name the XdsClient cannot parse holds no state
  }
  return client.authorityStateMap.get(parsed.authority)?.resourceMap.get(type)?.get(parsed.key);
}

/** The name as the XdsClient prints what it parsed, or the name as given
 *  if it cannot parse it. */
function canonicalName(typeUrl, name) {
  const bare = resourceTypes[typeUrl].get().getTypeUrl();
  try {
    return resourcesModule.xdsResourceNameToString(resourcesModule.parseXdsResourceName(name, bare), bare);
  } catch (err) {
    return name;
  }
}

/** One protobuf length-delimited field. */
function field(number, bytes) {
  const header = [];
  let length = bytes.length;
  header.push((number << 3) | 2);
  do {
    let b = length & 0x7f;
    length >>>= 7;
    if (length) b |= 0x80;
    header.push(b);
  } while (length);
  return Buffer.concat([Buffer.from(header), bytes]);
}

/** google.protobuf.Any as bytes, base64: the resource exactly as the
 *  client decoded it (the CSDS raw resource the XdsClient keeps). */
function anyBase64(any) {
  const value = Buffer.isBuffer(any.value) ? any.value : Buffer.from(any.value || []);
  return Buffer.concat([field(1, Buffer.from(String(any.type_url || ''))), field(2, value)]).toString('base64');
}

function watch(typeName, name) {
  const typeUrl = SHORT_TYPES[typeName] || typeName;
  const resourceType = resourceTypes[typeUrl];
  if (!resourceType) throw new Error(`watch: unknown type ${JSON.stringify(typeName)}`);
  const client = xdsClientModule.getSingletonXdsClient();
  // Events carry the name as the XdsClient keys the watch: its own parse
  // and print of the name (xdstp: context parameters sorted, gRFC A47).
  const canonical = canonicalName(typeUrl, name);
  const report = (fields) => {
    if (!shuttingDown) send(Object.assign({ event: 'watcher', type: typeUrl, name: canonical }, fields));
  };
  const watcher = new xdsClientModule.Watcher({
    onResourceChanged() {
      // The value the XdsClient holds now, as it received it.
      const raw = resourceState(client, typeUrl, name)?.meta?.rawResource;
      report(raw ? { kind: 'changed', resource: anyBase64(raw) } : { kind: 'changed', summary: '(no raw resource)' });
    },
    onError(status) {
      // grpc-js has one error callback. gRFC A88 names an error an
      // ambient one while the client holds a value for the resource, a
      // resource error otherwise: decided by the XdsClient's own cache.
      const cached = Boolean(resourceState(client, typeUrl, name)?.cachedResource);
      report({
        kind: cached ? 'ambient_error' : 'resource_error',
        code: codeName(status.code),
        message: String(status.details || ''),
      });
    },
    onResourceDoesNotExist() {
      report({ kind: 'does_not_exist' });
    },
  });
  try {
    resourceType.startWatch(client, name, watcher);
  } catch (err) {
    // XdsClient.watchResource throws for a name it cannot place (an
    // xdstp: name of an authority not in the bootstrap, a path of another
    // type) instead of telling the watcher. The watcher hears nothing:
    // that is the result, so the watch itself succeeded as a command and
    // the throw goes on the timeline.
    log('error', `XdsClient.watchResource threw; the watcher heard nothing: ${err && err.message ? err.message : err}`);
    return;
  }
  const key = typeUrl + ' ' + name;
  if (!watchers.has(key)) watchers.set(key, []);
  watchers.get(key).push(watcher);
}

function cancelWatch(typeName, name) {
  const typeUrl = SHORT_TYPES[typeName] || typeName;
  const list = watchers.get(typeUrl + ' ' + name);
  if (!list || list.length === 0) throw new Error(`no watch on ${typeUrl} ${name}`);
  const watcher = list.pop();
  resourceTypes[typeUrl].cancelWatch(xdsClientModule.getSingletonXdsClient(), name, watcher);
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
      watch(cmd.type, cmd.name);
      return { id, ok: true };
    case 'cancel_watch':
      cancelWatch(cmd.type, cmd.name);
      return { id, ok: true };
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
    helloSent = true;
    const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    rl.on('line', onLine);
    rl.on('close', () => shutdown(undefined));
  });
}

start();
