//! Scenario text (YAML with proto3-JSON resources) through the harness's loader.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    xds_conformance::fuzzing::scenario_loader(data);
});
