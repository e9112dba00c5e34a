//! Fake ADS servers driven by a real tonic ADS client: over the in-memory
//! network on paused virtual time, and over real TCP; plaintext and TLS.

mod auto_mode;
mod client_end;
mod delta;
mod faults;
mod hold_streams;
mod kds;
mod recording;
mod scripted_mode;
mod stream_retries;
mod support;
mod tcp;
mod tls;
