//! Requests, store changes and stream ends through a fake server's request handling (frames: see xds_fake_server::fuzzing).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    xds_fake_server::fuzzing::requests(data);
});
