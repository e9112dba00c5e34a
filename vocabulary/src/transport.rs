//! Byte streams to xDS servers and data-plane endpoints: what a client
//! connects through, whether the other end is over TCP or on the
//! in-memory network ([`crate::network::MemoryNetwork`]).

use std::future::Future;
use std::io;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

/// A bidirectional byte stream.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

pub type BoxIo = Box<dyn Io>;
pub type ConnectFuture = Pin<Box<dyn Future<Output = io::Result<BoxIo>> + Send>>;

/// Opens byte streams to xDS servers, by the bootstrap's `server_uri`.
pub trait XdsTransportFactory: Send + Sync + 'static {
    fn connect(&self, server_uri: &str) -> ConnectFuture;
}

/// Opens byte streams to data-plane endpoints (`ip:port` from EDS).
pub trait DataPlaneConnector: Send + Sync + 'static {
    fn connect(&self, address: &str) -> ConnectFuture;
}

/// Plain TCP (with TCP_NODELAY: gRPC's small messages would otherwise wait
/// out Nagle's delay) to `host:port`, or `dns:///host:port`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpTransport;

impl TcpTransport {
    fn open(target: &str) -> ConnectFuture {
        let target = target.trim_start_matches("dns:///").to_string();
        Box::pin(async move {
            let stream = tokio::net::TcpStream::connect(&target).await?;
            stream.set_nodelay(true)?;
            Ok(Box::new(stream) as BoxIo)
        })
    }
}

impl XdsTransportFactory for TcpTransport {
    fn connect(&self, server_uri: &str) -> ConnectFuture {
        TcpTransport::open(server_uri)
    }
}

impl DataPlaneConnector for TcpTransport {
    fn connect(&self, address: &str) -> ConnectFuture {
        TcpTransport::open(address)
    }
}
