//! `close_streams`: end every open ADS stream with a gRPC status now.

use std::fmt;

/// Close every open ADS stream with this gRPC status. The client sees
/// exactly this code and message in the trailers. Connections stay up.
#[derive(Clone, Debug, PartialEq)]
pub struct CloseStreams {
    pub code: tonic::Code,
    pub message: String,
}

impl fmt::Display for CloseStreams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "close streams with {}",
            super::status_text(self.code, &self.message)
        )
    }
}
