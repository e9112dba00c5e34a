package io.grpc.xds;

import com.google.protobuf.Any;
import io.grpc.MetricRecorder;
import io.grpc.internal.ObjectPool;
import io.grpc.xds.client.XdsClient;
import io.grpc.xds.client.XdsClient.ResourceMetadata;
import io.grpc.xds.client.XdsInitializationException;
import io.grpc.xds.client.XdsResourceType;
import java.lang.reflect.Field;
import java.util.Map;

/**
 * The adapter's door into package {@code io.grpc.xds} of grpc-xds 1.85.1.
 *
 * <p>A split package on the class path (grpc-xds's jar is not sealed and has
 * no module descriptor, only {@code Automatic-Module-Name}): this class is
 * compiled into the adapter's jar but lives in grpc-xds's package, so it can
 * reach what that package keeps package-private:
 *
 * <ul>
 *   <li>gRPC's own resource types ({@code XdsListenerResource},
 *       {@code XdsRouteConfigureResource}, {@code XdsEndpointResource} are
 *       package-private; {@code XdsClusterResource.getInstance()} is public):
 *       the watches parse and validate exactly as the channels do;</li>
 *   <li>{@code SharedXdsClientPoolProvider.getDefaultProvider()}: the pool of
 *       per-target XdsClients the channels' resolvers, the xDS-enabled servers
 *       ({@code #server}) and {@code CsdsService} use.</li>
 * </ul>
 *
 * <p>Everything here is grpc-java's internal API at the version pom.xml pins;
 * README.md lists what to re-read when that version changes.
 */
public final class ConformanceXds {
  private ConformanceXds() {}

  public static final String LDS = XdsListenerResource.ADS_TYPE_URL_LDS;
  public static final String RDS = XdsRouteConfigureResource.ADS_TYPE_URL_RDS;
  public static final String CDS = XdsClusterResource.ADS_TYPE_URL_CDS;
  public static final String EDS = XdsEndpointResource.ADS_TYPE_URL_EDS;

  /** gRPC's own resource type for a full type URL, or null. */
  public static XdsResourceType<? extends XdsClient.ResourceUpdate> resourceType(String typeUrl) {
    switch (typeUrl) {
      case XdsListenerResource.ADS_TYPE_URL_LDS:
        return XdsListenerResource.getInstance();
      case XdsRouteConfigureResource.ADS_TYPE_URL_RDS:
        return XdsRouteConfigureResource.getInstance();
      case XdsClusterResource.ADS_TYPE_URL_CDS:
        return XdsClusterResource.getInstance();
      case XdsEndpointResource.ADS_TYPE_URL_EDS:
        return XdsEndpointResource.getInstance();
      default:
        return null;
    }
  }

  /**
   * The shared pool's XdsClient for {@code target}, created if needed with
   * the process's default bootstrap (GRPC_XDS_BOOTSTRAP), exactly as a
   * channel's resolver gets its own (its target is its client_scope in CSDS).
   */
  public static ObjectPool<XdsClient> sharedClientPool(String target)
      throws XdsInitializationException {
    return SharedXdsClientPoolProvider.getDefaultProvider().getOrCreate(
        target, GrpcBootstrapperImpl.defaultBootstrap(), new MetricRecorder() {});
  }

  /**
   * The {@code google.protobuf.Any} the XdsClient holds for a resource (what
   * CSDS reports as its xds_config), read from the client's own subscriber.
   *
   * <p>Must run in the client's synchronization context, i.e. from a watcher
   * callback delivered with a direct executor: the subscriber's metadata is
   * then the one set just before the callback (XdsClientImpl's
   * ResourceSubscriber.onData sets {@code metadata} and then notifies).
   * XdsClientImpl keeps the subscribers private: read by reflection (fields
   * {@code resourceSubscribers} of XdsClientImpl and {@code metadata} of
   * XdsClientImpl$ResourceSubscriber in 1.85.1). Returns null if anything is
   * not where it was.
   */
  public static Any rawResource(XdsClient client, XdsResourceType<?> type, String name) {
    try {
      Field subscribersField = client.getClass().getDeclaredField("resourceSubscribers");
      subscribersField.setAccessible(true);
      Map<?, ?> byType = (Map<?, ?>) subscribersField.get(client);
      Object forType = byType.get(type);
      if (!(forType instanceof Map)) {
        return null;
      }
      Object subscriber = ((Map<?, ?>) forType).get(name);
      if (subscriber == null) {
        return null;
      }
      Field metadataField = subscriber.getClass().getDeclaredField("metadata");
      metadataField.setAccessible(true);
      Object metadata = metadataField.get(subscriber);
      if (!(metadata instanceof ResourceMetadata)) {
        return null;
      }
      return ((ResourceMetadata) metadata).getRawResource();
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
