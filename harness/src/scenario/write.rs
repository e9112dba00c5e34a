//! Writing a scenario file back as YAML (a generated or shrunk scenario),
//! as a person would write it: keys in the order the format documents
//! them, and what is absent or left at its default left out (the file
//! forms skip `None`s and empty defaults when written), so what is
//! written is what matters. The text goes through the loader like any
//! other file.

use super::file::ScenarioFile;

/// `file` as YAML, with the schema line editors complete it with.
pub fn to_yaml(file: &ScenarioFile) -> String {
    // The file forms are plain data: writing them cannot fail.
    let body = serde_saphyr::to_string(file).unwrap_or_default();
    format!("# yaml-language-server: $schema=../../harness/scenario.schema.json\n{body}")
}
