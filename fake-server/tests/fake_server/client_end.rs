//! How a client's end of a stream is recorded, driven by a raw HTTP/2
//! client: tonic's client cannot reset a bidi stream without first
//! half-closing it, and the point is to tell the two apart.

use bytes::{BufMut, Bytes, BytesMut};
use h2::Reason;
use prost::Message;
use rstest::rstest;
use tonic::Code;
use xds_fake_server::ServingMode;
use xds_fake_server::event::{CLIENT_CANCELLED, CLIENT_HALF_CLOSED};

use crate::support::*;

/// How the client ends its side of the stream.
#[derive(Clone, Copy, Debug)]
enum End {
    /// An empty DATA frame with END_STREAM.
    HalfClose,
    /// RST_STREAM with this reason.
    Reset(Reason),
}

/// A DiscoveryRequest in gRPC's length-prefixed framing.
fn grpc_frame(message: &impl Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut framed = BytesMut::with_capacity(5 + body.len());
    framed.put_u8(0);
    framed.put_u32(u32::try_from(body.len()).expect("small"));
    framed.put_slice(&body);
    framed.freeze()
}

#[rstest]
#[case::half_close(End::HalfClose, Code::Ok, CLIENT_HALF_CLOSED)]
#[case::cancel(End::Reset(Reason::CANCEL), Code::Cancelled, CLIENT_CANCELLED)]
// RFC 9113 section 8.1: a reset with NO_ERROR ends the request early
// without failing it; hyper reads it as the end of the body.
#[case::reset_no_error(End::Reset(Reason::NO_ERROR), Code::Ok, CLIENT_HALF_CLOSED)]
#[tokio::test(start_paused = true)]
async fn a_client_end_is_recorded_as_what_it_sent(
    #[case] end: End,
    #[case] code: Code,
    #[case] message: &str,
) {
    let (server, network) = serving(ServingMode::Auto);
    let io = network.connect(ADDRESS).await.expect("connect");
    let (client, connection) = h2::client::handshake(io).await.expect("h2 handshake");
    tokio::spawn(connection);
    let mut client = client.ready().await.expect("ready");
    let headers = http::Request::post(
        "http://primary/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
    )
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .body(())
    .expect("request");
    let (_response, mut body) = client.send_request(headers, false).expect("send");
    body.send_data(grpc_frame(&request(RDS, &["r"], None)), false)
        .expect("data");
    tokio::time::sleep(QUIET).await;
    match end {
        End::HalfClose => body.send_data(Bytes::new(), true).expect("end"),
        End::Reset(reason) => body.send_reset(reason),
    }
    tokio::time::sleep(QUIET).await;

    let closes = stream_closes(&server);
    assert_eq!(closes, vec![(code, message.to_string(), true)]);
}
