//! The committed KDS messages (`src/kds/kuma.mesh.v1alpha1.rs`) are what
//! prost-build makes of `proto/kds.proto`. Committed rather than generated
//! by a build script: the machines have no protoc, and a build script with
//! protox would put a .proto compiler in every build of every crate above
//! the vocabulary for one small message; here it is a test's dependency
//! only. `XDS_CONFORMANCE_BLESS_KDS_PROTO=1` writes the file instead of
//! comparing (after changing the .proto).

use std::path::PathBuf;

const GENERATED: &str = "kuma.mesh.v1alpha1.rs";

fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

#[test]
fn committed_kds_messages_are_what_the_proto_generates() {
    let dir = crate_dir();
    let descriptors =
        protox::compile(["kds.proto"], [dir.join("proto")]).expect("proto/kds.proto compiles");
    let out = tempfile::tempdir().expect("a temporary directory");
    prost_build::Config::new()
        .out_dir(out.path())
        // The Anys are envoy-types' own (the type every other message of
        // the harness uses), not prost-types'.
        .extern_path(
            ".google.protobuf.Any",
            "::envoy_types::pb::google::protobuf::Any",
        )
        .extern_path(
            ".google.protobuf.Duration",
            "::envoy_types::pb::google::protobuf::Duration",
        )
        // `prost::Name`, so a KumaResource packs into an Any by its own
        // type URL.
        .enable_type_names()
        .type_name_domain(["."], "type.googleapis.com")
        // Labels in a stable order: recordings and comparisons stay
        // deterministic.
        .btree_map(["."])
        .compile_fds(descriptors)
        .expect("prost-build generates");
    let generated = std::fs::read_to_string(out.path().join(GENERATED)).expect("generated");
    let committed_path = dir.join("src/kds").join(GENERATED);
    if std::env::var_os("XDS_CONFORMANCE_BLESS_KDS_PROTO").is_some() {
        std::fs::write(&committed_path, &generated).expect("write the generated file");
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} differs from what proto/kds.proto generates; rerun this test with \
         XDS_CONFORMANCE_BLESS_KDS_PROTO=1 after changing the .proto.\ngenerated:\n{generated}",
        committed_path.display()
    );
}

/// The descriptor set `src/kds/spec.rs` embeds: `proto/kuma_specs.proto`
/// and `proto/kuma_system_specs.proto` with their imports, no source info
/// (comments would make every edit of one a change of the bytes).
const SPEC_DESCRIPTORS: &str = "descriptors/kuma-specs.bin";

#[test]
fn committed_spec_descriptors_are_what_the_protos_compile_to() {
    use prost::Message;
    let dir = crate_dir();
    let set = protox::Compiler::new([dir.join("proto")])
        .expect("the include path")
        .include_imports(true)
        .include_source_info(false)
        .open_files(["kuma_specs.proto", "kuma_system_specs.proto"])
        .expect("the spec protos compile")
        .file_descriptor_set();
    let generated = set.encode_to_vec();
    let committed_path = dir.join(SPEC_DESCRIPTORS);
    if std::env::var_os("XDS_CONFORMANCE_BLESS_KDS_PROTO").is_some() {
        std::fs::write(&committed_path, &generated).expect("write the descriptor set");
        return;
    }
    let committed = std::fs::read(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} differs from what the spec protos compile to; rerun this test with \
         XDS_CONFORMANCE_BLESS_KDS_PROTO=1 after changing them",
        committed_path.display()
    );
}
