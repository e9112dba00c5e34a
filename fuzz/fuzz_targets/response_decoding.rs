//! A DiscoveryResponse or DeltaDiscoveryResponse through the reference client's decoding and validation.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    xds_reference_client::fuzzing::response(data);
});
