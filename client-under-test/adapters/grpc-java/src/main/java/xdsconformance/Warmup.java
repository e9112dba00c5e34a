package xdsconformance;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.status.v3.ClientStatusDiscoveryServiceGrpc;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.status.v3.ClientStatusRequest;
import java.util.concurrent.TimeUnit;

/**
 * Work the JVM does once, done before {@code hello} rather than at the
 * scenario's first watch.
 *
 * <p>The class-data-sharing archive spares the parsing of classes, not their
 * initialisation: the first watch still built the protobuf descriptors of the
 * xDS resources and Netty's client side before its first DiscoveryRequest
 * (~120 ms unloaded, measured with measure_start.py; half a second when a
 * matrix starts many clients at once on two cores, past what a scenario's
 * {@code within: 0s} allows on real time). The harness gives each client
 * start a core of its own until {@code hello} (client-under-test's
 * {@code starting} module), so the same work done here costs the scenario
 * nothing. It touches no xDS server: a CSDS call to this process's own CSDS
 * server warms the client transport, and the descriptors are built
 * directly. A failure here only costs time later.
 */
final class Warmup {
  private Warmup() {}

  static void run(int csdsPort) {
    try {
      // The xDS resources' descriptors (the envoy protos' file descriptors,
      // built on first use) and a request like the first one a watch sends.
      for (String name : new String[] {
          "io.grpc.xds.shaded.io.envoyproxy.envoy.config.listener.v3.Listener",
          "io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
          "io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.RouteConfiguration",
          "io.grpc.xds.shaded.io.envoyproxy.envoy.config.cluster.v3.Cluster",
          "io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment",
          "io.grpc.xds.client.XdsClientImpl",
          "io.grpc.xds.client.ControlPlaneClient",
          "io.grpc.xds.XdsListenerResource",
          "io.grpc.xds.XdsClusterResource"}) {
        Class<?> type = Class.forName(name, true, Warmup.class.getClassLoader());
        try {
          type.getMethod("getDescriptor").invoke(null);
        } catch (NoSuchMethodException notAMessage) {
          // A class of the client, not a message: initialised is enough.
        }
      }
      DiscoveryRequest.newBuilder()
          .setNode(Node.newBuilder().setId("warmup"))
          .setTypeUrl("type.googleapis.com/envoy.config.listener.v3.Listener")
          .addResourceNames("warmup")
          .build()
          .toByteArray();
      // Netty's client side, HTTP/2 and the CSDS messages, against this
      // process's own CSDS server.
      ManagedChannel channel = Grpc.newChannelBuilderForAddress(
              "127.0.0.1", csdsPort, InsecureChannelCredentials.create())
          .build();
      try {
        ClientStatusDiscoveryServiceGrpc.newBlockingStub(channel)
            .withDeadlineAfter(5, TimeUnit.SECONDS)
            .fetchClientStatus(ClientStatusRequest.getDefaultInstance());
      } finally {
        channel.shutdownNow();
        channel.awaitTermination(1, TimeUnit.SECONDS);
      }
    } catch (Exception | LinkageError e) {
      Adapter.stderr("warm-up before hello failed (only costs time): " + e);
    }
  }
}
