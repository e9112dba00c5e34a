//! Connecting a tonic client through the transport a client is started
//! with ([`crate::Transport`]): in memory on virtual time, or TCP. The
//! harness's fake servers and backends are reached by name
//! (`server_uri`, endpoint address), not by DNS.

use std::sync::Arc;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};
use xds_vocabulary::transport::XdsTransportFactory;

/// A tonic channel to the xDS server `server_uri` of the bootstrap over
/// `transport` (e.g. the `xds` factory of `Transport::InMemory`): every
/// connection attempt, reconnects included, goes through it. `endpoint`
/// sets tonic's options (timeouts, keepalive, TLS); its URI only names the
/// `:authority`.
pub fn tonic_channel(
    transport: Arc<dyn XdsTransportFactory>,
    server_uri: &str,
    endpoint: Endpoint,
) -> Channel {
    let target = server_uri.to_string();
    let connector = tower::service_fn(move |_uri: Uri| {
        let transport = transport.clone();
        let target = target.clone();
        async move {
            let io = transport.connect(&target).await?;
            Ok::<_, std::io::Error>(TokioIo::new(io))
        }
    });
    endpoint.connect_with_connector_lazy(connector)
}

/// An [`Endpoint`] whose `:authority` is `server_uri`'s host and port, in
/// plaintext.
pub fn plaintext_endpoint(server_uri: &str) -> Result<Endpoint, tonic::transport::Error> {
    let authority = server_uri
        .trim_start_matches("dns:///")
        .trim_start_matches("http://");
    Endpoint::from_shared(format!("http://{authority}"))
}
