//! A bootstrap file's text through the reference client's bootstrap parsing.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    xds_reference_client::fuzzing::bootstrap(data);
});
