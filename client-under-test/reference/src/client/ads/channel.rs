//! The seam between the worker and the network: an ADS channel to one
//! server starts ADS calls and reports their events. In production it is a
//! tonic channel over the byte-stream transport
//! ([`crate::transport::XdsTransport`]); in unit tests it is a script
//! (`fake`), so the XdsClient is tested message by message on virtual
//! time, as gRPC C-core tests its XdsClient with a fake transport.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::call::{self, CallId, CallMessage};
use super::wire::Request;
use crate::bootstrap::XdsServerConfig;
use crate::transport::tls::TlsDefects;
use crate::transport::{XdsTransport, XdsTransportFactory};

/// Starts ADS calls to one server.
pub(crate) trait AdsChannel: Send {
    /// Starts call `call`: it sends what arrives on `requests` and reports
    /// on `events` until it ends. Aborting the handle cancels it.
    fn start_call(
        &self,
        call: CallId,
        requests: mpsc::UnboundedReceiver<Request>,
        events: mpsc::UnboundedSender<CallMessage>,
    ) -> JoinHandle<()>;
}

/// Opens an [`AdsChannel`] per server; a new one replaces a connection
/// attempt that stalled.
pub(crate) trait AdsChannelFactory: Send + Sync + 'static {
    fn open(&self, server: &XdsServerConfig) -> Box<dyn AdsChannel>;
}

/// Tonic channels over a byte-stream transport (TCP, or the harness's
/// in-memory network), with the TLS shortcuts of a broken build.
pub(crate) struct TonicChannels(pub Arc<dyn XdsTransportFactory>, pub TlsDefects);

impl AdsChannelFactory for TonicChannels {
    fn open(&self, server: &XdsServerConfig) -> Box<dyn AdsChannel> {
        Box::new(XdsTransport::new(self.0.clone(), server, self.1))
    }
}

impl AdsChannel for XdsTransport {
    fn start_call(
        &self,
        call: CallId,
        requests: mpsc::UnboundedReceiver<Request>,
        events: mpsc::UnboundedSender<CallMessage>,
    ) -> JoinHandle<()> {
        tokio::spawn(call::run(
            self.channel.clone(),
            self.state.clone(),
            call,
            requests,
            events,
        ))
    }
}
