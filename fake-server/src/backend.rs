//! Data-plane backends: tiny gRPC servers that answer one method with their
//! own name, so an RPC's result says which endpoint served it.
//!
//! The method is schema-free on purpose (raw bytes in and out): every
//! client under test, in any language, can call it with identity
//! serializers and no generated code.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::DuplexStream;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::server::NamedService;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use crate::connection::ServerConnection;
use crate::event::Recorded;
use crate::server::ServeError;
pub use xds_vocabulary::data_plane::{BACKEND_METHOD, RawCodec};
use xds_vocabulary::network::{MemoryAcceptor, MemoryNetwork};

const SERVICE_NAME: &str = "xds_conformance.Backend";

/// What a backend records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendEvent {
    /// It answered an RPC.
    RpcServed { method: String },
}

pub type BackendObserver = Arc<dyn Fn(&Recorded<BackendEvent>) + Send + Sync>;

/// A backend. Clones share it.
#[derive(Clone)]
pub struct Backend {
    inner: Arc<BackendInner>,
}

struct BackendInner {
    name: String,
    observer: Mutex<Option<BackendObserver>>,
    served: AtomicU64,
    shutdown: watch::Sender<bool>,
}

impl BackendInner {
    fn record(&self, event: BackendEvent) {
        let observer = self
            .observer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(observer) = observer {
            observer(&Recorded {
                at: tokio::time::Instant::now(),
                server: self.name.clone(),
                event,
            });
        }
    }
}

impl Backend {
    pub fn new(name: impl Into<String>) -> Self {
        let (shutdown, _) = watch::channel(false);
        Backend {
            inner: Arc::new(BackendInner {
                name: name.into(),
                observer: Mutex::new(None),
                served: AtomicU64::new(0),
                shutdown,
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub fn set_observer(&self, observer: BackendObserver) {
        *self
            .inner
            .observer
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(observer);
    }

    /// How many RPCs it answered.
    pub fn served(&self) -> u64 {
        self.inner.served.load(Ordering::SeqCst)
    }

    /// Listens on `address` of `network`, on the current runtime.
    pub fn serve_in_memory(
        &self,
        network: &MemoryNetwork,
        address: &str,
    ) -> Result<(), ServeError> {
        let runtime = Handle::try_current().map_err(|_| ServeError::NoRuntime)?;
        let (tx, rx) = mpsc::unbounded_channel();
        network.bind(address, Arc::new(BackendListener { connections: tx }))?;
        self.spawn(&runtime, UnboundedReceiverStream::new(rx));
        Ok(())
    }

    /// Listens on `addr` (port 0 picks one); returns the bound address.
    pub async fn serve_tcp(&self, addr: SocketAddr) -> io::Result<SocketAddr> {
        let runtime = Handle::try_current().map_err(io::Error::other)?;
        let incoming = TcpIncoming::bind(addr)?.with_nodelay(Some(true));
        let bound = incoming.local_addr()?;
        self.spawn(&runtime, incoming);
        Ok(bound)
    }

    fn spawn<I, IO, E>(&self, runtime: &Handle, incoming: I)
    where
        I: tokio_stream::Stream<Item = Result<IO, E>> + Send + 'static,
        IO: tokio::io::AsyncRead
            + tokio::io::AsyncWrite
            + tonic::transport::server::Connected
            + Unpin
            + Send
            + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let service = BackendService {
            inner: self.inner.clone(),
        };
        let mut shutdown = self.inner.shutdown.subscribe();
        runtime.spawn(async move {
            let stop = async move {
                let _ = shutdown.wait_for(|stopped| *stopped).await;
            };
            let _ = Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, stop)
                .await;
        });
    }

    /// Stops serving (connections close).
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }
}

struct BackendListener {
    connections: mpsc::UnboundedSender<io::Result<ServerConnection<DuplexStream>>>,
}

impl MemoryAcceptor for BackendListener {
    fn accept(&self, address: &str, io: DuplexStream) -> io::Result<()> {
        // Backends do not number their connections; 0 says so.
        let connection = ServerConnection::new(io, 0, Box::new(|| {}));
        self.connections.send(Ok(connection)).map_err(|_| {
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("{address} is not serving"),
            )
        })
    }
}

#[derive(Clone)]
struct BackendService {
    inner: Arc<BackendInner>,
}

impl NamedService for BackendService {
    const NAME: &'static str = SERVICE_NAME;
}

impl tower::Service<http::Request<tonic::body::Body>> for BackendService {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move {
            if request.uri().path() != BACKEND_METHOD {
                return Ok(tonic::Status::unimplemented(format!(
                    "no method {}",
                    request.uri().path()
                ))
                .into_http());
            }
            let mut grpc = tonic::server::Grpc::new(RawCodec);
            Ok(grpc.unary(Who { inner }, request).await)
        })
    }
}

struct Who {
    inner: Arc<BackendInner>,
}

impl tonic::server::UnaryService<Vec<u8>> for Who {
    type Response = Vec<u8>;
    type Future = std::future::Ready<Result<tonic::Response<Vec<u8>>, tonic::Status>>;

    fn call(&mut self, _request: tonic::Request<Vec<u8>>) -> Self::Future {
        self.inner.served.fetch_add(1, Ordering::SeqCst);
        self.inner.record(BackendEvent::RpcServed {
            method: BACKEND_METHOD.to_string(),
        });
        std::future::ready(Ok(tonic::Response::new(
            self.inner.name.as_bytes().to_vec(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn call(channel: tonic::transport::Channel) -> Result<String, tonic::Status> {
        let mut client = tonic::client::Grpc::new(channel);
        client
            .ready()
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let path = http::uri::PathAndQuery::from_static(BACKEND_METHOD);
        let response = client
            .unary(tonic::Request::new(Vec::new()), path, RawCodec)
            .await?;
        Ok(String::from_utf8_lossy(&response.into_inner()).into_owned())
    }

    #[tokio::test(start_paused = true)]
    async fn answers_with_its_name_in_memory_and_records_it() {
        let network = MemoryNetwork::new();
        let backend = Backend::new("b1");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        backend.set_observer(Arc::new(move |r| {
            s.lock().unwrap().push((r.server.clone(), r.event.clone()))
        }));
        backend.serve_in_memory(&network, "10.0.0.1:80").unwrap();
        let net = network.clone();
        let channel = tonic::transport::Endpoint::from_static("http://backend")
            .connect_with_connector(tower::service_fn(move |_| {
                let net = net.clone();
                async move {
                    net.connect("10.0.0.1:80")
                        .await
                        .map(hyper_util::rt::TokioIo::new)
                }
            }))
            .await
            .unwrap();
        assert_eq!(call(channel.clone()).await.unwrap(), "b1");
        assert_eq!(call(channel).await.unwrap(), "b1");
        assert_eq!(backend.served(), 2);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        assert_eq!(
            seen[0],
            (
                "b1".to_string(),
                BackendEvent::RpcServed {
                    method: BACKEND_METHOD.into()
                }
            )
        );
    }

    #[tokio::test]
    async fn answers_over_tcp_and_rejects_other_methods() {
        let backend = Backend::new("b2");
        let addr = backend
            .serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        assert_eq!(call(channel.clone()).await.unwrap(), "b2");
        let mut client = tonic::client::Grpc::new(channel);
        client.ready().await.unwrap();
        let status = client
            .unary(
                tonic::Request::new(Vec::new()),
                http::uri::PathAndQuery::from_static("/other.Service/M"),
                RawCodec,
            )
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unimplemented);
        backend.shutdown();
    }
}
