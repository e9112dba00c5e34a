package xdsconformance;

import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The run install.sh records a class-data-sharing archive from
 * ({@code java -XX:ArchiveClassesAtExit=... -jar adapter.jar --train}): the
 * adapter's own command paths, in this process, against an xDS server that
 * answers nothing (a plain gRPC server without the ADS service), so the
 * classes loaded up to the first DiscoveryRequest (and a little beyond) are
 * in the archive. Nothing leaves the machine; it takes about two seconds.
 */
final class Training {
  private Training() {}

  static void run() throws Exception {
    System.err.println("[train] grpc-java " + io.grpc.internal.GrpcUtil.IMPLEMENTATION_VERSION);
    Server fakeXds = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0), InsecureServerCredentials.create())
        .build()
        .start();
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
      a.handleLine("{\"id\":4,\"op\":\"rpc\",\"target\":\"xds:///train\",\"method\":\"/xds_conformance.Backend/Who\",\"timeout_ms\":300,\"wait_for_ready\":false}");
      a.handleLine("{\"id\":5,\"op\":\"serve\",\"address\":\"127.0.0.1:0\"}");
      a.handleLine("{\"id\":6,\"op\":\"cancel_watch\",\"type\":\"EDS\",\"name\":\"e1\"}");
      a.handleLine("not json");
      // CSDS, as the harness calls it (raw bytes: an empty ClientStatusRequest).
      ManagedChannel admin = Grpc.newChannelBuilder("127.0.0.1:" + csds, InsecureChannelCredentials.create()).build();
      try {
        ClientCalls.blockingUnaryCall(admin,
            Adapter.method("/envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus"),
            CallOptions.DEFAULT.withDeadlineAfter(2, TimeUnit.SECONDS), new byte[0]);
      } catch (RuntimeException e) {
        System.err.println("[train] CSDS: " + e);
      }
      admin.shutdownNow();
      Thread.sleep(1500);
    } finally {
      Files.deleteIfExists(bootstrap);
      fakeXds.shutdownNow();
    }
    // A normal exit: -XX:ArchiveClassesAtExit writes the archive now.
    System.exit(0);
  }
}
