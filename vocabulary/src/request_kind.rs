//! How a request on an ADS stream relates to the responses sent before it:
//! the same four kinds for state-of-the-world and delta streams.

/// How a request relates to what the stream has sent for its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RequestKind {
    /// Empty `response_nonce`: the first request for the type on the stream
    /// (or a client that does not track nonces); in delta, also a request
    /// that only changes the subscription.
    Initial,
    /// The nonce of a response sent for this type on this stream, no error.
    Ack,
    /// `error_detail` is set: the client rejected a response.
    Nack,
    /// A nonce this stream never sent for this type.
    UnknownNonce,
    /// `error_detail` is set, but the nonce is not one this stream sent
    /// for the type: the client rejects a response it never got on this
    /// stream (an old stream's, another type's, an invented one).
    NackOfUnknownNonce,
}

impl RequestKind {
    pub const ALL: [RequestKind; 5] = [
        RequestKind::Initial,
        RequestKind::Ack,
        RequestKind::Nack,
        RequestKind::UnknownNonce,
        RequestKind::NackOfUnknownNonce,
    ];

    /// Classifies a request by its `response_nonce`, whether it carries an
    /// `error_detail`, and the nonces sent for its type on its stream. The
    /// order matters: an empty nonce is `Initial` even with an error
    /// detail, because there is no response it could reject.
    pub fn classify(nonce: &str, has_error: bool, sent_nonce: impl Fn(&str) -> bool) -> Self {
        if nonce.is_empty() {
            RequestKind::Initial
        } else {
            match (has_error, sent_nonce(nonce)) {
                (true, true) => RequestKind::Nack,
                (true, false) => RequestKind::NackOfUnknownNonce,
                (false, true) => RequestKind::Ack,
                (false, false) => RequestKind::UnknownNonce,
            }
        }
    }

    /// The name scenarios use: `initial`, `ack`, `nack`, `unknown_nonce`,
    /// `nack_of_unknown_nonce`.
    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Initial => "initial",
            RequestKind::Ack => "ack",
            RequestKind::Nack => "nack",
            RequestKind::UnknownNonce => "unknown_nonce",
            RequestKind::NackOfUnknownNonce => "nack_of_unknown_nonce",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::initial("", false, RequestKind::Initial)]
    #[case::initial_even_with_error("", true, RequestKind::Initial)]
    #[case::ack("1", false, RequestKind::Ack)]
    #[case::nack("1", true, RequestKind::Nack)]
    #[case::nack_of_unknown_nonce("7", true, RequestKind::NackOfUnknownNonce)]
    #[case::unknown("7", false, RequestKind::UnknownNonce)]
    fn classify(#[case] nonce: &str, #[case] error: bool, #[case] expected: RequestKind) {
        assert_eq!(RequestKind::classify(nonce, error, |n| n == "1"), expected);
    }
}
