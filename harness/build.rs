//! Scenario files become cargo tests through rstest's `#[files]`, which
//! globs at compile time. Watching the folder makes cargo rebuild the tests
//! when a file is added, so a new YAML file is a new test with no Rust.
fn main() {
    println!("cargo:rerun-if-changed=../scenarios");
}
