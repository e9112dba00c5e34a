//! `new-adapter`: writes a working adapter folder for a client this
//! project does not ship, so that an implementer's first run is seconds
//! away: `adapter.json` with the capabilities the skeleton has (a watch
//! API, nothing more), a skeleton in the implementer's language that
//! speaks the adapter protocol (`hello`, `watch`, `cancel_watch`,
//! `shutdown`) with what to fill in marked, the name of its expectations
//! file in the manifest (not written: a client without recorded
//! expectations is not retried, so its first run shows its failures at
//! once, and `--update-expectations` creates the file), and a README with
//! the next commands.
//!
//! The skeletons are templates in `templates/`, compiled into the binary;
//! `tests/scaffold.rs` writes each one and runs it against scenarios. This
//! module knows the adapter protocol only through those templates, and no
//! client: what the skeleton does is what the protocol asks of any adapter.

use std::fmt;
use std::path::{Path, PathBuf};

/// The languages a skeleton is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Language {
    Python,
    Node,
    Go,
    Java,
}

/// One file of a skeleton: its name in the folder and its template.
struct Template {
    file: &'static str,
    text: &'static str,
}

impl Language {
    fn templates(self) -> &'static [Template] {
        match self {
            Language::Python => &[Template {
                file: "adapter.py",
                text: include_str!("templates/python/adapter.py"),
            }],
            Language::Node => &[Template {
                file: "adapter.js",
                text: include_str!("templates/node/adapter.js"),
            }],
            Language::Go => &[
                Template {
                    file: "main.go",
                    text: include_str!("templates/go/main.go"),
                },
                Template {
                    file: "go.mod",
                    text: include_str!("templates/go/go.mod"),
                },
            ],
            Language::Java => &[Template {
                file: "Adapter.java",
                text: include_str!("templates/java/Adapter.java"),
            }],
        }
    }

    /// The manifest's way to start (and, for Go, build) the skeleton: its
    /// `install`, `installed`, `install_inputs` and `command` entries.
    fn manifest_start(self) -> &'static str {
        match self {
            Language::Python => r#"  "command": ["python3", "adapter.py"],"#,
            Language::Node => r#"  "command": ["node", "adapter.js"],"#,
            // The marker is a file of its own: the harness appends the
            // inputs' digests to it, which would spoil a binary.
            Language::Go => {
                r#"  "install": ["sh", "-c", "go build -o bin/adapter . && touch bin/.installed"],
  "installed": "bin/.installed",
  "install_inputs": ["main.go", "go.mod"],
  "command": ["bin/adapter"],"#
            }
            // Java 11+ runs a single source file as it is; a build tool
            // comes in once the adapter needs the client's jars.
            Language::Java => r#"  "command": ["java", "Adapter.java"],"#,
        }
    }
}

/// Why no adapter folder was written.
#[derive(Debug)]
pub enum ScaffoldError {
    /// The name cannot name a client (reports, expectations, a Go module).
    BadName { name: String, why: &'static str },
    /// Something is there already: nothing is overwritten.
    Exists(PathBuf),
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl fmt::Display for ScaffoldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScaffoldError::BadName { name, why } => {
                write!(f, "adapter name `{name}`: {why}")
            }
            ScaffoldError::Exists(path) => write!(
                f,
                "{} exists already: nothing was written (pick another name or folder)",
                path.display()
            ),
            ScaffoldError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for ScaffoldError {}

/// A client name: what reports and expectations files show, and a Go
/// module path element.
fn check_name(name: &str) -> Result<(), ScaffoldError> {
    let bad = |why| ScaffoldError::BadName {
        name: name.to_string(),
        why,
    };
    if name.is_empty() || name.len() > 64 {
        return Err(bad("1 to 64 characters"));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return Err(bad("starts with a lowercase letter or a digit"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
    {
        return Err(bad("lowercase letters, digits, '-', '_' and '.' only"));
    }
    Ok(())
}

/// The name of the expectations file the manifest names.
pub const EXPECTATIONS_FILE: &str = "expectations.yaml";

/// Writes the adapter folder `parent/name` for `language`; returns it.
pub fn write(name: &str, language: Language, parent: &Path) -> Result<PathBuf, ScaffoldError> {
    check_name(name)?;
    let dir = parent.join(name);
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ScaffoldError::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let mut files: Vec<(String, String)> = language
        .templates()
        .iter()
        .map(|t| (t.file.to_string(), t.text.replace("{{NAME}}", name)))
        .collect();
    files.push(("adapter.json".into(), manifest(name, language)));
    files.push(("README.md".into(), readme(name, language)));
    for (file, text) in files {
        let path = dir.join(&file);
        std::fs::write(&path, text).map_err(io(&path))?;
    }
    Ok(dir)
}

fn manifest(name: &str, language: Language) -> String {
    format!(
        r#"{{
  "name": "{name}",
  "description": "{name}, through its adapter (written by xds-conformance new-adapter)",
  "expectations": "{EXPECTATIONS_FILE}",
{}
  "capabilities": {{"watch": true}}
}}
"#,
        language.manifest_start()
    )
}

fn readme(name: &str, language: Language) -> String {
    let file = language.templates()[0].file;
    format!(
        "# {name}: an xds-conformance adapter\n\n\
         Written by `xds-conformance new-adapter {name} --lang {}`. The skeleton \
         speaks the adapter protocol (the book's \"Adapter protocol\" page) and \
         answers every watch, but hears nothing yet: fill in the TODOs of \
         `{file}` with your client.\n\n\
         1. Run the suite against it (runs that need more than `watch` are n/a):\n\n   \
         ```sh\n   xds-conformance run scenarios --client ./{name}\n   ```\n\n\
         2. Declare in `adapter.json` (and in `hello`) each capability your client \
         gains (`dial`, `rpc`, `csds`, ...: the book's capability reference).\n\
         3. Record what still fails, with why, and gate on the rest:\n\n   \
         ```sh\n   xds-conformance run scenarios --client ./{name} --update-expectations\n   ```\n",
        language_name(language)
    )
}

fn language_name(language: Language) -> &'static str {
    match language {
        Language::Python => "python",
        Language::Node => "node",
        Language::Go => "go",
        Language::Java => "java",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_cannot_name_a_client_are_refused_and_nothing_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["", "My-Client", "-x", "a/b", "a b", &"x".repeat(65)] {
            assert!(
                matches!(
                    write(bad, Language::Python, dir.path()),
                    Err(ScaffoldError::BadName { .. })
                ),
                "{bad:?}"
            );
        }
        write("c1", Language::Python, dir.path()).unwrap();
        let again = write("c1", Language::Go, dir.path()).unwrap_err();
        assert!(again.to_string().contains("exists already"), "{again}");
        // The first folder is as it was written.
        assert!(dir.path().join("c1/adapter.py").exists());
        assert!(!dir.path().join("c1/main.go").exists());
    }

    #[test]
    fn every_skeleton_names_its_client_and_its_manifest_is_json() {
        let dir = tempfile::tempdir().unwrap();
        for (i, language) in [
            Language::Python,
            Language::Node,
            Language::Go,
            Language::Java,
        ]
        .into_iter()
        .enumerate()
        {
            let name = format!("client-{i}");
            let folder = write(&name, language, dir.path()).unwrap();
            let manifest: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(folder.join("adapter.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(manifest["name"], name.as_str());
            assert_eq!(manifest["expectations"], EXPECTATIONS_FILE);
            // Named, not written: the first run is then not retried.
            assert!(!folder.join(EXPECTATIONS_FILE).exists());
            let skeleton =
                std::fs::read_to_string(folder.join(language.templates()[0].file)).unwrap();
            assert!(skeleton.contains(&name), "{language:?}");
            assert!(!skeleton.contains("{{NAME}}"), "{language:?}");
        }
    }
}
