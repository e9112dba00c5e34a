package xdsconformance;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.Any;
import io.grpc.CallOptions;
import io.grpc.ConnectivityState;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusOr;
import io.grpc.internal.GrpcUtil;
import io.grpc.internal.ObjectPool;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.xds.ConformanceXds;
import io.grpc.xds.CsdsService;
import io.grpc.xds.XdsServerBuilder;
import io.grpc.xds.client.XdsClient;
import io.grpc.xds.client.XdsResourceType;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.logging.ConsoleHandler;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * The xds-conformance adapter for grpc-java (io.grpc:grpc-xds, the version
 * pom.xml pins).
 *
 * <p>Speaks the adapter protocol (client-under-test/ADAPTER_PROTOCOL.md,
 * version 1): JSON lines on stdin (commands) and stdout (hello, replies,
 * events). stderr is the client's log (java.util.logging); its io.grpc.xds records at INFO and
 * above are `log` events too (LogForwarder). See README.md.
 */
public final class Adapter {
  static final int PROTOCOL = 1;
  static final String CLIENT = "grpc-java";
  static final String DEFAULT_METHOD = "/xds_conformance.Backend/Who";
  static final long DEFAULT_TIMEOUT_MS = 10_000;
  /** The shared pool's target (CSDS client_scope) of the watches' XdsClient. */
  static final String WATCH_TARGET = "xds-conformance-watches";

  static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();

  // --- output ---------------------------------------------------------------

  /** The protocol's stdout; System.out itself is pointed at stderr. */
  private static PrintStream protocolOut;
  private static final Object OUT_LOCK = new Object();
  private static volatile boolean sealed;

  static void send(JsonObject obj) {
    String line = GSON.toJson(obj);
    synchronized (OUT_LOCK) {
      if (sealed) {
        return;
      }
      protocolOut.print(line);
      protocolOut.print('\n');
      protocolOut.flush();
      if (protocolOut.checkError()) {
        // The harness is gone.
        Runtime.getRuntime().halt(0);
      }
    }
  }

  static JsonObject event(String name) {
    JsonObject o = new JsonObject();
    o.addProperty("event", name);
    return o;
  }

  static void reply(JsonElement id, JsonObject fields) {
    JsonObject o = new JsonObject();
    o.add("id", id);
    o.addProperty("ok", true);
    if (fields != null) {
      for (Map.Entry<String, JsonElement> e : fields.entrySet()) {
        o.add(e.getKey(), e.getValue());
      }
    }
    send(o);
  }

  static void fail(JsonElement id, String error) {
    JsonObject o = new JsonObject();
    o.add("id", id);
    o.addProperty("ok", false);
    o.addProperty("error", error);
    send(o);
  }

  static void log(String level, String message) {
    JsonObject o = event("log");
    o.addProperty("level", level);
    o.addProperty("message", message);
    send(o);
  }

  static void stderr(String message) {
    System.err.println("[adapter] " + message);
  }

  static String codeName(Status.Code code) {
    // Status.Code names are the canonical ones (CANCELLED, UNAVAILABLE, ...).
    return code.name();
  }

  static String describe(Status status) {
    StringBuilder b = new StringBuilder();
    if (status.getDescription() != null) {
      b.append(status.getDescription());
    }
    if (status.getCause() != null) {
      if (b.length() > 0) {
        b.append(": ");
      }
      b.append(status.getCause());
    }
    return b.toString();
  }

  // --- channels -------------------------------------------------------------

  static final class Chan {
    final String target;
    final ManagedChannel channel;
    ConnectivityState last;
    volatile boolean closed;

    Chan(String target, ManagedChannel channel) {
      this.target = target;
      this.channel = channel;
    }

    synchronized void report(ConnectivityState state) {
      if (closed || state == last) {
        return;
      }
      last = state;
      JsonObject o = event("channel_state");
      o.addProperty("target", target);
      o.addProperty("state", state.name());
      send(o);
    }

    /** Reads the state afresh, reports it if new, waits for a change from it. */
    void loop() {
      if (closed) {
        return;
      }
      ConnectivityState s = channel.getState(false);
      report(s);
      if (s == ConnectivityState.SHUTDOWN) {
        return;
      }
      channel.notifyWhenStateChanged(s, this::loop);
    }
  }

  private final Map<String, Chan> channels = new HashMap<>();
  private final ExecutorService workers = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "adapter-worker");
    t.setDaemon(true);
    return t;
  });

  synchronized Chan dial(String target) {
    Chan c = channels.get(target);
    if (c != null) {
      return c;
    }
    ManagedChannel ch = Grpc.newChannelBuilder(target, InsecureChannelCredentials.create()).build();
    c = new Chan(target, ch);
    channels.put(target, c);
    // The state it starts in (IDLE), then ask it to connect, then every
    // change, each read afresh and waited on from exactly that state.
    c.report(ch.getState(false));
    ch.getState(true);
    c.loop();
    return c;
  }

  static final MethodDescriptor.Marshaller<byte[]> RAW = new MethodDescriptor.Marshaller<byte[]>() {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw Status.INTERNAL.withDescription("cannot read the response").withCause(e).asRuntimeException();
      }
    }
  };

  static MethodDescriptor<byte[], byte[]> method(String name) {
    String full = name.startsWith("/") ? name.substring(1) : name;
    return MethodDescriptor.<byte[], byte[]>newBuilder(RAW, RAW)
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(full)
        .build();
  }

  void rpc(JsonElement id, JsonObject cmd) {
    String target = str(cmd, "target");
    if (target == null || target.isEmpty()) {
      fail(id, "rpc: missing target");
      return;
    }
    if (cmd.has("authority")) {
      fail(id, "unsupported: rpc with authority (grpc-java is not a proxy)");
      return;
    }
    String methodName = str(cmd, "method");
    if (methodName == null || methodName.isEmpty()) {
      methodName = DEFAULT_METHOD;
    }
    long timeoutMs = cmd.has("timeout_ms") ? cmd.get("timeout_ms").getAsLong() : DEFAULT_TIMEOUT_MS;
    boolean waitForReady = cmd.has("wait_for_ready") && cmd.get("wait_for_ready").getAsBoolean();
    Chan c = dial(target);
    CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(timeoutMs, TimeUnit.MILLISECONDS);
    if (waitForReady) {
      options = options.withWaitForReady();
    }
    ListenableFuture<byte[]> f;
    try {
      f = ClientCalls.futureUnaryCall(c.channel.newCall(method(methodName), options), new byte[0]);
    } catch (RuntimeException e) {
      fail(id, "rpc: " + e);
      return;
    }
    Futures.addCallback(f, new FutureCallback<byte[]>() {
      @Override
      public void onSuccess(byte[] value) {
        JsonObject result = new JsonObject();
        result.addProperty("code", "OK");
        result.addProperty("message", "");
        result.addProperty("backend", new String(value, StandardCharsets.UTF_8));
        JsonObject fields = new JsonObject();
        fields.add("result", result);
        reply(id, fields);
      }

      @Override
      public void onFailure(Throwable t) {
        Status s = Status.fromThrowable(t);
        JsonObject result = new JsonObject();
        result.addProperty("code", codeName(s.getCode()));
        result.addProperty("message", s.getDescription() == null ? "" : s.getDescription());
        JsonObject fields = new JsonObject();
        fields.add("result", result);
        reply(id, fields);
      }
    }, MoreExecutors.directExecutor());
  }

  // --- watches --------------------------------------------------------------

  static final Map<String, String> SHORT_TYPES = Map.of(
      "LDS", ConformanceXds.LDS,
      "RDS", ConformanceXds.RDS,
      "CDS", ConformanceXds.CDS,
      "EDS", ConformanceXds.EDS);

  static String fullType(String type) {
    return SHORT_TYPES.getOrDefault(type, type);
  }

  /**
   * One `watch`: a ResourceWatcher on the watches' XdsClient. grpc-java calls
   * it through the executor given at watch time; the adapter gives a direct
   * one, so callbacks run in the XdsClient's synchronization context, in the
   * order the client decided them, and can read the client's raw resource.
   */
  final class Watch implements XdsClient.ResourceWatcher<XdsClient.ResourceUpdate> {
    final String typeUrl;
    final String name;
    final XdsResourceType<XdsClient.ResourceUpdate> type;
    final ObjectPool<XdsClient> pool;
    final XdsClient client;
    volatile boolean stopped;

    Watch(String typeUrl, String name, XdsResourceType<XdsClient.ResourceUpdate> type,
        ObjectPool<XdsClient> pool, XdsClient client) {
      this.typeUrl = typeUrl;
      this.name = name;
      this.type = type;
      this.pool = pool;
      this.client = client;
    }

    void report(String kind, JsonObject extra) {
      if (stopped || shuttingDown) {
        return;
      }
      JsonObject o = event("watcher");
      o.addProperty("type", typeUrl);
      o.addProperty("name", name);
      o.addProperty("kind", kind);
      if (extra != null) {
        for (Map.Entry<String, JsonElement> e : extra.entrySet()) {
          o.add(e.getKey(), e.getValue());
        }
      }
      send(o);
    }

    @Override
    public void onResourceChanged(StatusOr<XdsClient.ResourceUpdate> update) {
      JsonObject extra = new JsonObject();
      if (update.hasValue()) {
        Any raw = ConformanceXds.rawResource(client, type, name);
        if (raw != null) {
          extra.addProperty("resource", Base64.getEncoder().encodeToString(raw.toByteArray()));
        } else {
          extra.addProperty("summary", String.valueOf(update.getValue()));
        }
        report("changed", extra);
        return;
      }
      Status s = update.getStatus();
      if (s.getCode() == Status.Code.NOT_FOUND && !a88) {
        // grpc-java's only NOT_FOUND resource errors are its does-not-exist
        // verdicts: a SotW response without the resource, the timer
        // ("Timed out waiting for resource ..."), or a new watcher of a
        // resource known absent (XdsClientImpl ResourceSubscriber.onAbsent,
        // addWatcher). The protocol names that does_not_exist under the
        // default profile (gRFC A53's name) and a resource error NOT_FOUND
        // under a88, as grpc-java's own API always does.
        report("does_not_exist", null);
        return;
      }
      extra.addProperty("code", codeName(s.getCode()));
      extra.addProperty("message", describe(s));
      report("resource_error", extra);
    }

    @Override
    public void onAmbientError(Status s) {
      JsonObject extra = new JsonObject();
      extra.addProperty("code", codeName(s.getCode()));
      extra.addProperty("message", describe(s));
      report("ambient_error", extra);
    }
  }

  private final Map<String, Deque<Watch>> watches = new HashMap<>();

  synchronized void watch(JsonObject cmd) throws Exception {
    String typeUrl = fullType(str(cmd, "type"));
    String name = str(cmd, "name");
    if (name == null) {
      throw new IllegalArgumentException("watch: missing name");
    }
    if (cmd.has("via")) {
      throw new UnsupportedOperationException("unsupported: projected watches (grpc-java has a watch API)");
    }
    @SuppressWarnings("unchecked")
    XdsResourceType<XdsClient.ResourceUpdate> type =
        (XdsResourceType<XdsClient.ResourceUpdate>) ConformanceXds.resourceType(typeUrl);
    if (type == null) {
      throw new UnsupportedOperationException("unsupported: resource type " + typeUrl);
    }
    // Each watch is a user of the shared pool's XdsClient for WATCH_TARGET,
    // as each channel's resolver is of its target's: it takes a reference
    // (getObject) and gives it back when cancelled (returnObject). The
    // client, its cache and its ADS streams live while one watch does
    // (README.md, "Watches").
    // grpc-java's callers canonicalise xdstp: names before they watch them
    // (XdsNameResolver.start, XdsNameResolver.java:246: xdstp context
    // parameters sorted, gRFC A47); watchXdsResource keys the name as given.
    name = canonical(name);
    ObjectPool<XdsClient> pool = ConformanceXds.sharedClientPool(WATCH_TARGET);
    XdsClient client = pool.getObject();
    Watch w = new Watch(typeUrl, name, type, pool, client);
    watches.computeIfAbsent(typeUrl + " " + name, k -> new ArrayDeque<>()).addLast(w);
    client.watchXdsResource(type, name, w, MoreExecutors.directExecutor());
  }

  static String canonical(String name) {
    if (name == null) {
      return null;
    }
    try {
      return XdsClient.canonifyResourceName(name);
    } catch (RuntimeException e) {
      return name; // not a URI: the client takes it as it is
    }
  }

  synchronized void cancelWatch(JsonObject cmd) {
    String typeUrl = fullType(str(cmd, "type"));
    String name = canonical(str(cmd, "name"));
    Deque<Watch> list = watches.get(typeUrl + " " + name);
    if (list == null || list.isEmpty()) {
      throw new IllegalStateException("cancel_watch: no watch of " + typeUrl + " " + name);
    }
    Watch w = list.removeLast();
    w.stopped = true;
    w.client.cancelXdsResourceWatch(w.type, w.name, w);
    w.pool.returnObject(w.client);
  }

  // --- xDS-enabled servers (gRFC A36) ---------------------------------------

  static final String BACKEND_SERVICE = "xds_conformance.Backend";

  static ServerServiceDefinition backendService() {
    return ServerServiceDefinition.builder(BACKEND_SERVICE)
        .addMethod(method("/" + BACKEND_SERVICE + "/Who"),
            ServerCalls.asyncUnaryCall((req, obs) -> {
              obs.onNext("server".getBytes(StandardCharsets.UTF_8));
              obs.onCompleted();
            }))
        .build();
  }

  /**
   * Serving-status events of one server. Until the serve command has decided
   * whether the server started at all, events are held: a server grpc-java
   * refuses to start (XdsServerWrapper.internalStart: no listener template,
   * no bootstrap) first tells its listener NOT_SERVING and then fails
   * start(); the protocol reports that as one NOT_SERVING
   * FAILED_PRECONDITION with the client's error.
   */
  static final class ServingListener implements XdsServerBuilder.XdsServingStatusListener {
    final String address;
    List<JsonObject> held = new ArrayList<>();

    ServingListener(String address) {
      this.address = address;
    }

    synchronized void emit(JsonObject o) {
      if (shuttingDown) {
        return;
      }
      if (held != null) {
        held.add(o);
      } else {
        send(o);
      }
    }

    synchronized void release(JsonObject replacement) {
      List<JsonObject> h = held;
      held = null;
      if (replacement != null) {
        send(replacement);
        return;
      }
      for (JsonObject o : h) {
        send(o);
      }
    }

    @Override
    public void onServing() {
      JsonObject o = event("serving_status");
      o.addProperty("address", address);
      o.addProperty("state", "SERVING");
      emit(o);
    }

    @Override
    public void onNotServing(Throwable t) {
      Status s = Status.fromThrowable(t);
      JsonObject o = event("serving_status");
      o.addProperty("address", address);
      o.addProperty("state", "NOT_SERVING");
      o.addProperty("code", codeName(s.getCode()));
      o.addProperty("message", describe(s));
      emit(o);
    }
  }

  private final Map<String, Server> servers = new HashMap<>();

  void serve(JsonElement id, String address) {
    InetSocketAddress sa;
    try {
      int colon = address.lastIndexOf(':');
      String host = address.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      }
      sa = new InetSocketAddress(host, Integer.parseInt(address.substring(colon + 1)));
    } catch (RuntimeException e) {
      fail(id, "serve: bad address " + address);
      return;
    }
    ServingListener listener = new ServingListener(address);
    Server server;
    synchronized (this) {
      if (servers.containsKey(address)) {
        fail(id, "serve: already serving on " + address);
        return;
      }
      server = XdsServerBuilder.forAddress(sa, InsecureServerCredentials.create())
          .xdsServingStatusListener(listener)
          .addService(backendService())
          .build();
      servers.put(address, server);
    }
    // XdsServerWrapper.start() blocks until the server first serves (or
    // fails): it runs on a worker, and the reply waits only until the
    // wrapper has made its start decision (internalStart: a refusal, or the
    // Listener watch started).
    Future<?> starting = workers.submit(() -> {
      try {
        server.start();
        return null;
      } catch (IOException | RuntimeException e) {
        return e;
      }
    });
    Throwable refused = awaitStartDecision(server, starting);
    if (refused != null) {
      Status s = Status.fromThrowable(refused);
      JsonObject o = event("serving_status");
      o.addProperty("address", address);
      o.addProperty("state", "NOT_SERVING");
      o.addProperty("code", "FAILED_PRECONDITION");
      o.addProperty("message", describe(s));
      listener.release(o);
    } else {
      listener.release(null);
    }
    reply(id, null);
  }

  /**
   * Waits (at most 5 s) until XdsServerWrapper has run internalStart: its
   * {@code discoveryState} is set (the Listener is being watched), or its
   * {@code initialStartFuture} is done (refused, or serving). Returns the
   * start failure if start() failed before serving. Reads the wrapper's
   * private fields by reflection (1.85.1 names); if they are not there, waits
   * 200 ms instead.
   */
  static Throwable awaitStartDecision(Server server, Future<?> starting) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    Field discovery = null;
    Field initial = null;
    try {
      discovery = server.getClass().getDeclaredField("discoveryState");
      discovery.setAccessible(true);
      initial = server.getClass().getDeclaredField("initialStartFuture");
      initial.setAccessible(true);
    } catch (ReflectiveOperationException | RuntimeException e) {
      discovery = null;
      deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
    }
    while (System.nanoTime() < deadline) {
      if (starting.isDone()) {
        break;
      }
      try {
        if (discovery != null) {
          if (discovery.get(server) != null) {
            return null;
          }
          Object f = initial.get(server);
          if (f instanceof Future && ((Future<?>) f).isDone()) {
            Object v = ((Future<?>) f).get();
            return v instanceof Throwable ? (Throwable) v : null;
          }
        }
        Thread.sleep(1);
      } catch (Exception e) {
        break;
      }
    }
    if (starting.isDone()) {
      try {
        Object r = starting.get();
        return r instanceof Throwable ? (Throwable) r : null;
      } catch (Exception e) {
        return e;
      }
    }
    return null;
  }

  // --- lifecycle ------------------------------------------------------------

  static volatile boolean shuttingDown;
  /** XDS_CONFORMANCE_PROFILE=a88: gRFC A88 data error handling is on. */
  static boolean a88;
  private Server csdsServer;

  void shutdown(JsonElement id) {
    shuttingDown = true;
    synchronized (this) {
      for (Deque<Watch> list : watches.values()) {
        for (Watch w : list) {
          w.stopped = true;
        }
      }
      for (Chan c : channels.values()) {
        c.closed = true;
        c.channel.shutdownNow();
      }
      for (Server s : servers.values()) {
        s.shutdownNow();
      }
      if (csdsServer != null) {
        csdsServer.shutdownNow();
      }
    }
    if (id != null) {
      reply(id, null);
    }
    synchronized (OUT_LOCK) {
      sealed = true;
      protocolOut.flush();
    }
    System.err.flush();
    // The ADS streams are not closed gracefully: the fake servers see the
    // connections drop, as with the other adapters.
    Runtime.getRuntime().halt(0);
  }

  void handle(JsonObject cmd) {
    JsonElement id = cmd.get("id");
    if (id == null) {
      log("error", "adapter: a command needs an id: " + cmd);
      return;
    }
    String op = str(cmd, "op");
    try {
      switch (op == null ? "" : op) {
        case "dial": {
          String target = str(cmd, "target");
          if (target == null || target.isEmpty()) {
            fail(id, "dial: missing target");
            return;
          }
          dial(target);
          reply(id, null);
          return;
        }
        case "rpc":
          rpc(id, cmd);
          return;
        case "watch":
          watch(cmd);
          reply(id, null);
          return;
        case "cancel_watch":
          cancelWatch(cmd);
          reply(id, null);
          return;
        case "serve": {
          String address = str(cmd, "address");
          if (address == null || address.isEmpty()) {
            fail(id, "serve: missing address");
            return;
          }
          workers.execute(() -> {
            try {
              serve(id, address);
            } catch (RuntimeException e) {
              fail(id, "serve: " + e);
            }
          });
          return;
        }
        case "shutdown":
          shutdown(id);
          return;
        default:
          fail(id, "unsupported: unknown op " + op);
      }
    } catch (UnsupportedOperationException e) {
      fail(id, e.getMessage());
    } catch (Exception e) {
      stderr("command " + cmd + " failed: " + e);
      e.printStackTrace(System.err);
      fail(id, op + ": " + e);
    }
  }

  static String str(JsonObject o, String key) {
    JsonElement e = o.get(key);
    return e == null || e.isJsonNull() ? null : e.getAsString();
  }

  static JsonObject capabilities() {
    JsonObject c = new JsonObject();
    c.addProperty("dial", true);
    c.addProperty("rpc", true);
    c.addProperty("watch", true);
    c.addProperty("csds", true);
    c.addProperty("delta", false);
    c.addProperty("serve", true);
    com.google.gson.JsonArray logs = new com.google.gson.JsonArray();
    logs.add("info");
    logs.add("warning");
    logs.add("error");
    c.add("logs", logs);
    com.google.gson.JsonArray profiles = new com.google.gson.JsonArray();
    profiles.add("a88");
    c.add("profiles", profiles);
    return c;
  }

  static void configureLogging() {
    // java.util.logging to stderr. XdsLogger maps its levels to FINEST
    // (DEBUG), FINER (INFO), FINE (WARNING): FINER shows every request,
    // response and subscription. XDS_CONFORMANCE_JAVA_LOG_LEVEL overrides.
    String level = System.getenv().getOrDefault("XDS_CONFORMANCE_JAVA_LOG_LEVEL", "FINER");
    Level l;
    try {
      l = Level.parse(level);
    } catch (IllegalArgumentException e) {
      l = Level.FINER;
    }
    Logger root = Logger.getLogger("");
    for (Handler h : root.getHandlers()) {
      root.removeHandler(h);
    }
    ConsoleHandler h = new ConsoleHandler(); // System.err
    h.setLevel(Level.ALL);
    System.setProperty("java.util.logging.SimpleFormatter.format",
        "%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n");
    h.setFormatter(new SimpleFormatter());
    root.addHandler(h);
    root.setLevel(Level.INFO);
    Logger.getLogger("io.grpc.xds").setLevel(l);
    LogForwarder.attach();
    // More loggers for debugging: XDS_CONFORMANCE_JAVA_LOGGERS="name=LEVEL,..."
    // (e.g. io.grpc.netty.shaded.io.netty.handler.ssl=FINE).
    String more = System.getenv("XDS_CONFORMANCE_JAVA_LOGGERS");
    if (more != null) {
      for (String item : more.split(",")) {
        int eq = item.indexOf('=');
        if (eq > 0) {
          try {
            Logger.getLogger(item.substring(0, eq).trim()).setLevel(Level.parse(item.substring(eq + 1).trim()));
          } catch (IllegalArgumentException e) {
            stderr("XDS_CONFORMANCE_JAVA_LOGGERS: bad level in " + item);
          }
        }
      }
    }
  }

  public static void main(String[] args) throws Exception {
    // stdout carries protocol lines only: anything else printed goes to stderr.
    if (args.length > 0 && args[0].equals("--train")) {
      // install.sh's class-data-sharing run (Training.java): its protocol
      // lines go to stderr (install.sh keeps them in .peers/grpc-java/train.log).
      protocolOut = System.err;
      System.setOut(System.err);
      Training.run();
      return;
    }
    protocolOut = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    System.setOut(System.err);

    String profile = System.getenv("XDS_CONFORMANCE_PROFILE");
    if ("a88".equals(profile)) {
      // gRFC A88 behind grpc-java's flag (BootstrapperImpl reads it with
      // GrpcUtil.getFlag: the environment first, then this system property).
      // Set before any grpc-xds class is loaded.
      System.setProperty("GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING", "true");
      a88 = true;
    } else if (profile != null && !profile.isEmpty()) {
      stderr("profile " + profile + " is not one of this adapter's (a88); ignored");
    }
    configureLogging();

    Adapter a = new Adapter();
    a.start();
  }

  void start() throws IOException {
    startCsds();
    // What the first watch would otherwise do on the scenario's clock
    // (Warmup.java says why).
    Warmup.run(csdsServer.getPort());
    JsonObject hello = event("hello");
    hello.addProperty("protocol", PROTOCOL);
    hello.addProperty("client", CLIENT);
    hello.addProperty("version", GrpcUtil.IMPLEMENTATION_VERSION);
    hello.add("capabilities", capabilities());
    hello.addProperty("csds_address", "127.0.0.1:" + csdsServer.getPort());
    send(hello);
    LogForwarder.ready = true;
    readCommands();
  }

  int startCsds() throws IOException {
    csdsServer = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0), InsecureServerCredentials.create())
        .addService(CsdsService.newInstance())
        .build()
        .start();
    return csdsServer.getPort();
  }

  void readCommands() throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      handleLine(line);
    }
    // stdin closed: the harness is gone or done.
    shutdown(null);
  }

  void handleLine(String line) {
    if (line.isBlank() || shuttingDown) {
      return;
    }
    JsonElement e;
    try {
      e = JsonParser.parseString(line);
    } catch (RuntimeException ex) {
      log("error", "adapter: not JSON: " + abbreviate(line));
      return;
    }
    if (!e.isJsonObject()) {
      log("error", "adapter: not a command object: " + abbreviate(line));
      return;
    }
    handle(e.getAsJsonObject());
  }

  static String abbreviate(String s) {
    return s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }

}
