//! grpc-rust's xDS channel: `tonic-xds` 0.1.0-alpha.4 (the tonic repository,
//! beside `xds-client`), which resolves an `xds:///` target with an
//! XdsClient of its own (LDS -> RDS -> CDS -> EDS), routes each RPC and
//! balances it over the cluster's endpoints. `dial` builds one
//! `XdsChannelGrpc` per target from the scenario's bootstrap; `rpc` sends the
//! backends' raw-bytes method through it with tonic's `Grpc` client.
//!
//! Real time only: tonic-xds reaches its xDS server through xds-client's
//! `TonicTransportBuilder`, which always opens TCP to `server_uri` and has
//! no connector hook, so it cannot use the harness's in-memory transport.
//! The runner plays a scenario that dials on real time over loopback for
//! this client (`Capabilities::channels_need_real_time`).
//!
//! Not observable: the channel has no connectivity-state API and no view of
//! its resolved config, so scenarios see it through the wire, RPC outcomes
//! and its XdsClient's A78 resource gauge (`counts.rs`) only. tonic-xds makes every RPC wait for the channel's first
//! config (its own `wait_for_ready`, bounded by the RPC's deadline here).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use http::uri::PathAndQuery;
use tonic_xds::{BootstrapConfig, XdsChannelBuilder, XdsChannelConfig, XdsChannelGrpc, XdsUri};
use xds_vocabulary::data_plane::RawCodec;

use super::ResourceGauge;
use crate::{ClientError, RpcOutcome, RpcRequest};

/// The dialled channels, by target.
pub struct Channels {
    /// The scenario's gRPC bootstrap, as tonic-xds parses it itself.
    bootstrap_json: String,
    channels: BTreeMap<String, XdsChannelGrpc>,
    gauge: Arc<ResourceGauge>,
}

impl Channels {
    pub fn new(bootstrap_json: &str, gauge: Arc<ResourceGauge>) -> Self {
        Self {
            bootstrap_json: with_plaintext_schemes(bootstrap_json),
            channels: BTreeMap::new(),
            gauge,
        }
    }

    /// Builds the channel for `target` (a no-op when it exists). tonic-xds
    /// starts resolving at once: its XdsClient subscribes to the Listener.
    pub fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        if self.channels.contains_key(target) {
            return Ok(());
        }
        let uri = XdsUri::parse(target)
            .map_err(|e| ClientError::Failed(format!("tonic-xds rejects target {target}: {e}")))?;
        let bootstrap = BootstrapConfig::from_json(&self.bootstrap_json)
            .map_err(|e| ClientError::Failed(format!("tonic-xds rejects the bootstrap: {e}")))?;
        let channel = XdsChannelBuilder::new(XdsChannelConfig::new(uri).with_bootstrap(bootstrap))
            .with_metrics_recorder(self.gauge.clone())
            .build_grpc_channel()
            .map_err(|e| ClientError::Failed(format!("tonic-xds cannot build a channel: {e}")))?;
        self.channels.insert(target.to_string(), channel);
        Ok(())
    }

    /// One unary RPC on `request.target`'s channel (dialled first if it is
    /// not yet, as a gRPC stub on a new channel would).
    pub async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        self.dial(&request.target)?;
        let channel = self.channels[&request.target].clone();
        let path = PathAndQuery::try_from(request.method.as_str()).map_err(|e| {
            ClientError::Failed(format!("method {} is not a path: {e}", request.method))
        })?;
        let call = unary(channel, path, request.timeout);
        // The deadline also bounds the wait for the channel's first config
        // and for a connection, which tonic's grpc-timeout header does not.
        let outcome = match tokio::time::timeout(request.timeout, call).await {
            Ok(Ok(response)) => RpcOutcome {
                code: tonic::Code::Ok,
                message: String::new(),
                backend: Some(String::from_utf8_lossy(&response.into_inner()).into_owned()),
            },
            Ok(Err(status)) => RpcOutcome {
                code: status.code(),
                message: status.message().to_string(),
                backend: None,
            },
            Err(_) => RpcOutcome {
                code: tonic::Code::DeadlineExceeded,
                message: format!("deadline of {} exceeded", format_ms(request.timeout)),
                backend: None,
            },
        };
        Ok(outcome)
    }

    /// Drops every channel: tonic-xds stops its XdsClient with the last
    /// clone of the channel.
    pub fn close(&mut self) {
        self.channels.clear();
    }
}

/// The bootstrap with `http://` before each plaintext `server_uri` that has
/// no scheme. Why: tonic-xds hands `server_uri` to xds-client's
/// `TonicTransportBuilder`, which adds a scheme for TLS only
/// (`ensure_secure_server_uri`); a plaintext `host:port`, the form gRFC A27
/// bootstraps use, reaches hyper-util's `HttpConnector` without one and
/// every attempt fails with "invalid URL, scheme is missing", so the channel
/// never connects (`tests/grpc_rust.rs` keeps that evidence). Without this,
/// no channel scenario could say anything else about the client.
pub fn with_plaintext_schemes(bootstrap_json: &str) -> String {
    let Ok(mut bootstrap) = serde_json::from_str::<serde_json::Value>(bootstrap_json) else {
        // tonic-xds reports the parse error itself.
        return bootstrap_json.to_string();
    };
    add_schemes(bootstrap.get_mut("xds_servers"));
    if let Some(authorities) = bootstrap
        .get_mut("authorities")
        .and_then(|a| a.as_object_mut())
    {
        for authority in authorities.values_mut() {
            add_schemes(authority.get_mut("xds_servers"));
        }
    }
    bootstrap.to_string()
}

fn add_schemes(servers: Option<&mut serde_json::Value>) {
    let Some(servers) = servers.and_then(|l| l.as_array_mut()) else {
        return;
    };
    for server in servers {
        let plaintext = server
            .get("channel_creds")
            .and_then(|c| c.as_array())
            .and_then(|c| c.first())
            .and_then(|c| c.get("type"))
            .is_some_and(|t| t == "insecure");
        if let Some(uri) = server.get_mut("server_uri")
            && let Some(text) = uri.as_str()
            && plaintext
            && !text.contains("://")
        {
            *uri = serde_json::Value::String(format!("http://{text}"));
        }
    }
}

/// The backends' method, once, on `channel`.
async fn unary(
    channel: XdsChannelGrpc,
    path: PathAndQuery,
    timeout: Duration,
) -> Result<tonic::Response<Vec<u8>>, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(StatusErrors(channel));
    grpc.ready().await?;
    let mut message = tonic::Request::new(Vec::new());
    message.set_timeout(timeout);
    grpc.unary(message, path, RawCodec).await
}

/// The channel with its errors as gRPC statuses. Why: with tonic-xds's
/// `BoxError`, the compiler cannot prove tonic's client future `Send` (a
/// higher-ranked `Into<StdError>` bound), so it could not run on the
/// harness's runtime; a concrete error type settles it.
#[derive(Clone)]
struct StatusErrors(XdsChannelGrpc);

type Body = tonic::body::Body;

impl tower::Service<http::Request<Body>> for StatusErrors {
    type Response = http::Response<Body>;
    type Error = tonic::Status;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, tonic::Status>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), tonic::Status>> {
        self.0.poll_ready(cx).map_err(status)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let call = self.0.call(request);
        Box::pin(async move { call.await.map_err(status) })
    }
}

/// The channel's own status if it gave one, else UNAVAILABLE with its text.
fn status(error: tower::BoxError) -> tonic::Status {
    tonic::Status::from_error(error)
}

fn format_ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}
