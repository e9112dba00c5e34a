//! One HTTP/1.1 request to a local management API, within a time and a
//! size: what the drivers of clients observed through an API of their own
//! use (Envoy's admin API, a Kuma zone's REST API). A body past `max_body`
//! is an error, not memory: a client must not grow the harness.

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

/// Why a request got no answer to read.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// No connection, no HTTP exchange, or no answer in time.
    #[error("{address}: {reason}")]
    Exchange { address: SocketAddr, reason: String },
    /// The body could not be read whole (or was past the limit).
    #[error("{method} {path}: {reason}")]
    Body {
        method: String,
        path: String,
        reason: String,
    },
}

/// An answer: its status and its body (lossy UTF-8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Sends `method path` with `body` (JSON when given) to `address` and
/// reads the answer, all within `timeout`.
pub async fn request(
    address: SocketAddr,
    method: http::Method,
    path: &str,
    body: Option<Vec<u8>>,
    timeout: Duration,
    max_body: usize,
) -> Result<Answer, HttpError> {
    let exchange = |reason: String| HttpError::Exchange { address, reason };
    let fetch = async {
        let stream = tokio::net::TcpStream::connect(address)
            .await
            .map_err(|e| exchange(e.to_string()))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| exchange(e.to_string()))?;
        let driver = tokio::spawn(connection);
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(path)
            .header(http::header::HOST, address.to_string());
        if body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        let request = builder
            .body(Full::new(bytes::Bytes::from(body.unwrap_or_default())))
            .map_err(|e| exchange(e.to_string()))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| exchange(e.to_string()))?;
        let status = response.status().as_u16();
        let body = http_body_util::Limited::new(response.into_body(), max_body)
            .collect()
            .await
            .map_err(|e| HttpError::Body {
                method: method.to_string(),
                path: path.to_string(),
                reason: e.to_string(),
            })?
            .to_bytes();
        driver.abort();
        Ok(Answer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    };
    tokio::time::timeout(timeout, fetch)
        .await
        .map_err(|_| exchange(format!("no answer to {method} {path} within {timeout:?}")))?
}
