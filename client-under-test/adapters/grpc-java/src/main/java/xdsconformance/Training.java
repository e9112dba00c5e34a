package xdsconformance;

import com.google.protobuf.Any;
import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.Address;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.AggregatedConfigSource;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.ConfigSource;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.SocketAddress;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.Endpoint;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.LbEndpoint;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.listener.v3.ApiListener;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.listener.v3.Listener;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.Route;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.RouteAction;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.RouteMatch;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.http.router.v3.Router;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.Rds;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.xds.shaded.io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The run install.sh records a class-data-sharing archive from
 * ({@code java -XX:ArchiveClassesAtExit=... -jar adapter.jar --train}): the
 * adapter's own commands, in this process, against a small ADS server of its
 * own on 127.0.0.1 that serves one Listener, route, Cluster and endpoints
 * (pointing back at itself, which also answers the data-plane method), so
 * the classes a scenario loads (bootstrap, ADS stream, parsing, the data
 * path, CSDS, the xDS-enabled server) are in the archive. Nothing leaves the
 * machine; it takes about three seconds.
 */
final class Training {
  private Training() {}

  static final String LDS = "type.googleapis.com/envoy.config.listener.v3.Listener";
  static final String RDS = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
  static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
  static final String EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

  static Any resourceFor(String typeUrl, int port) {
    ConfigSource ads = ConfigSource.newBuilder().setAds(AggregatedConfigSource.getDefaultInstance()).build();
    switch (typeUrl) {
      case LDS:
        return Any.pack(Listener.newBuilder().setName("train")
            .setApiListener(ApiListener.newBuilder().setApiListener(Any.pack(HttpConnectionManager.newBuilder()
                .setRds(Rds.newBuilder().setRouteConfigName("r1").setConfigSource(ads))
                .addHttpFilters(HttpFilter.newBuilder().setName("router").setTypedConfig(Any.pack(Router.getDefaultInstance())))
                .build())))
            .build());
      case RDS:
        return Any.pack(RouteConfiguration.newBuilder().setName("r1")
            .addVirtualHosts(VirtualHost.newBuilder().setName("vh").addDomains("*")
                .addRoutes(Route.newBuilder().setMatch(RouteMatch.newBuilder().setPrefix(""))
                    .setRoute(RouteAction.newBuilder().setCluster("c1"))))
            .build());
      case CDS:
        return Any.pack(Cluster.newBuilder().setName("c1").setType(Cluster.DiscoveryType.EDS)
            .setEdsClusterConfig(Cluster.EdsClusterConfig.newBuilder().setEdsConfig(ads).setServiceName("e1"))
            .build());
      case EDS:
        return Any.pack(ClusterLoadAssignment.newBuilder().setClusterName("e1")
            .addEndpoints(LocalityLbEndpoints.newBuilder()
                .setLoadBalancingWeight(com.google.protobuf.UInt32Value.of(1))
                .addLbEndpoints(LbEndpoint.newBuilder().setEndpoint(Endpoint.newBuilder().setAddress(
                    Address.newBuilder().setSocketAddress(SocketAddress.newBuilder()
                        .setAddress("127.0.0.1").setPortValue(port))))))
            .build());
      default:
        return null;
    }
  }

  /** Answers each request that is not an ACK with the one resource of its type. */
  static final class Ads extends AggregatedDiscoveryServiceGrpc.AggregatedDiscoveryServiceImplBase {
    final AtomicInteger nonce = new AtomicInteger();
    volatile int port;

    @Override
    public StreamObserver<DiscoveryRequest> streamAggregatedResources(StreamObserver<DiscoveryResponse> out) {
      return new StreamObserver<DiscoveryRequest>() {
        @Override
        public void onNext(DiscoveryRequest req) {
          if (!req.getResponseNonce().isEmpty() || req.getResourceNamesCount() == 0) {
            return;
          }
          Any r = resourceFor(req.getTypeUrl(), port);
          if (r == null) {
            return;
          }
          synchronized (out) {
            out.onNext(DiscoveryResponse.newBuilder().setTypeUrl(req.getTypeUrl()).setVersionInfo("1")
                .setNonce(String.valueOf(nonce.incrementAndGet())).addResources(r).build());
          }
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onCompleted();
        }
      };
    }
  }

  static void run() throws Exception {
    System.err.println("[train] grpc-java " + io.grpc.internal.GrpcUtil.IMPLEMENTATION_VERSION);
    Ads ads = new Ads();
    Server fakeXds = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0), InsecureServerCredentials.create())
        .addService(ads)
        .addService(Adapter.backendService())
        .build()
        .start();
    ads.port = fakeXds.getPort();
    Path bootstrap = Files.createTempFile("xds-conformance-train", ".json");
    try {
      Files.writeString(bootstrap, "{\"xds_servers\":[{\"server_uri\":\"127.0.0.1:" + fakeXds.getPort()
          + "\",\"channel_creds\":[{\"type\":\"insecure\"}],\"server_features\":[\"xds_v3\"]}],"
          + "\"node\":{\"id\":\"train\",\"cluster\":\"train\",\"locality\":{\"region\":\"r\",\"zone\":\"z\"}},"
          + "\"server_listener_resource_name_template\":\"grpc/server?xds.resource.listening_address=%s\"}");
      System.setProperty("io.grpc.xds.bootstrap", bootstrap.toString());
      Adapter.configureLogging();
      Adapter a = new Adapter();
      int csds = a.startCsds();
      Adapter.send(Adapter.event("hello"));
      a.handleLine("{\"id\":1,\"op\":\"dial\",\"target\":\"xds:///train\"}");
      a.handleLine("{\"id\":2,\"op\":\"watch\",\"type\":\"type.googleapis.com/envoy.config.cluster.v3.Cluster\",\"name\":\"c1\"}");
      a.handleLine("{\"id\":3,\"op\":\"watch\",\"type\":\"EDS\",\"name\":\"e1\"}");
      a.handleLine("{\"id\":4,\"op\":\"watch\",\"type\":\"LDS\",\"name\":\"train\"}");
      a.handleLine("{\"id\":5,\"op\":\"watch\",\"type\":\"RDS\",\"name\":\"r1\"}");
      a.handleLine("{\"id\":6,\"op\":\"rpc\",\"target\":\"xds:///train\",\"method\":\"/xds_conformance.Backend/Who\",\"timeout_ms\":2000,\"wait_for_ready\":true}");
      a.handleLine("{\"id\":7,\"op\":\"serve\",\"address\":\"127.0.0.1:0\"}");
      Thread.sleep(1000);
      a.handleLine("{\"id\":8,\"op\":\"rpc\",\"target\":\"xds:///train\",\"method\":\"/xds_conformance.Backend/Who\",\"timeout_ms\":500,\"wait_for_ready\":false}");
      a.handleLine("{\"id\":9,\"op\":\"cancel_watch\",\"type\":\"EDS\",\"name\":\"e1\"}");
      a.handleLine("not json");
      // CSDS, as the harness calls it (raw bytes: an empty ClientStatusRequest).
      ManagedChannel admin = Grpc.newChannelBuilder("127.0.0.1:" + csds, InsecureChannelCredentials.create()).build();
      try {
        byte[] r = ClientCalls.blockingUnaryCall(admin,
            Adapter.method("/envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus"),
            CallOptions.DEFAULT.withDeadlineAfter(2, TimeUnit.SECONDS), new byte[0]);
        System.err.println("[train] CSDS answered " + r.length + " bytes");
      } catch (RuntimeException e) {
        System.err.println("[train] CSDS: " + e);
      }
      admin.shutdownNow();
      Thread.sleep(1000);
    } finally {
      Files.deleteIfExists(bootstrap);
      fakeXds.shutdownNow();
    }
    // A normal exit: -XX:ArchiveClassesAtExit writes the archive now.
    System.exit(0);
  }
}
