//! Adapter stdout lines through the harness's adapter-protocol line codec.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    xds_client_under_test::fuzzing::adapter_lines(data);
});
