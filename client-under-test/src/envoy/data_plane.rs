//! RPCs through an Envoy listener: a fresh HTTP/2 connection per RPC to
//! the listener's address, with the scenario's target as `:authority` (the
//! route's domain), so every RPC sees the listener as it is now (a removed
//! listener refuses the connection at once).

use std::time::Duration;

use tokio::time::Instant;
use tonic::Code;
use tonic::transport::{Endpoint, Uri};
use xds_vocabulary::data_plane::RawCodec;

use crate::{RpcOutcome, RpcRequest};

/// How often a `wait_for_ready` RPC retries a listener that refuses
/// connections (Envoy binds it once its routes have arrived).
const READY_RETRY: Duration = Duration::from_millis(50);

/// One unary RPC to `request.target` (`ip:port` of a listener).
pub async fn call(request: &RpcRequest) -> RpcOutcome {
    let deadline = Instant::now() + request.timeout;
    loop {
        let outcome = attempt(request, deadline).await;
        let retry = request.wait_for_ready
            && outcome.code == Code::Unavailable
            && outcome.message.starts_with(CONNECT_FAILED)
            && Instant::now() + READY_RETRY < deadline;
        if !retry {
            return outcome;
        }
        tokio::time::sleep(READY_RETRY).await;
    }
}

const CONNECT_FAILED: &str = "cannot connect to the listener";

async fn attempt(request: &RpcRequest, deadline: Instant) -> RpcOutcome {
    let failed = |code: Code, message: String| RpcOutcome {
        code,
        message,
        backend: None,
    };
    let endpoint = match Endpoint::from_shared(format!("http://{}", request.target)) {
        Ok(e) => e,
        Err(e) => return failed(Code::InvalidArgument, format!("listener address: {e}")),
    };
    let mut endpoint = endpoint.connect_timeout(deadline.saturating_duration_since(Instant::now()));
    if let Some(authority) = &request.authority {
        match format!("http://{authority}").parse::<Uri>() {
            Ok(origin) => endpoint = endpoint.origin(origin),
            Err(e) => return failed(Code::InvalidArgument, format!("authority: {e}")),
        }
    }
    let rpc = async {
        let channel = match endpoint.connect().await {
            Ok(c) => c,
            Err(e) => {
                return failed(
                    Code::Unavailable,
                    // Not the address: it is a free port chosen per run.
                    format!("{CONNECT_FAILED}: {}", source_text(&e)),
                );
            }
        };
        let mut grpc = tonic::client::Grpc::new(channel);
        if let Err(e) = grpc.ready().await {
            return failed(Code::Unavailable, e.to_string());
        }
        let path = match http::uri::PathAndQuery::try_from(request.method.as_str()) {
            Ok(p) => p,
            Err(e) => return failed(Code::InvalidArgument, format!("method: {e}")),
        };
        match grpc
            .unary(tonic::Request::new(Vec::new()), path, RawCodec)
            .await
        {
            Ok(response) => RpcOutcome {
                code: Code::Ok,
                message: String::new(),
                backend: Some(String::from_utf8_lossy(&response.into_inner()).into_owned()),
            },
            Err(status) => failed(status.code(), status.message().to_string()),
        }
    };
    match tokio::time::timeout_at(deadline, rpc).await {
        Ok(outcome) => outcome,
        Err(_) => failed(Code::DeadlineExceeded, "deadline exceeded".into()),
    }
}

/// The innermost cause: tonic's own text is only "transport error".
fn source_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = s.to_string();
        source = s.source();
    }
    text
}
