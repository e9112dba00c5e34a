//! Scenario files become cargo tests through rstest's `#[files]`, which
//! globs at compile time. Watching the folder makes cargo rebuild the tests
//! when a file is added, so a new YAML file is a new test with no Rust.
//!
//! The adapters this repository ships are named from their folders
//! (`client-under-test/adapters/<name>/adapter.json`), so a new adapter is
//! a folder and nothing else: `suite::known_client_names` reads the list
//! this writes (empty where the folder is not, as in a packaged crate).
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=../scenarios");
    let adapters = Path::new("../client-under-test/adapters");
    println!("cargo:rerun-if-changed={}", adapters.display());
    let mut names: Vec<String> = std::fs::read_dir(adapters)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("adapter.json").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("shipped_adapters.rs");
    let list = names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    std::fs::write(out, format!("&[{list}]\n")).expect("OUT_DIR is writable");
}
