//! The first-line header of the broken and hostile scenario files:
//! `# expect: <line>:<column>: <message fragment>`, where the loader must
//! report the file's error. Shared by `broken_scenarios.rs` and
//! `hostile.rs` (each test file includes it with `#[path]`).

use std::path::Path;

/// Where a file's load error must be, and a fragment of its message.
pub struct Located {
    pub line: u64,
    pub column: u64,
    pub fragment: String,
}

/// Parses the `spec` after `# expect: ` of `path`'s first line `first`.
pub fn parse(path: &Path, first: &str, spec: &str) -> Result<Located, String> {
    let mut parts = spec.splitn(3, ':');
    let mut number = |what| {
        parts
            .next()
            .and_then(|n| n.trim().parse::<u64>().ok())
            .ok_or_else(|| format!("{}: bad {what} in `{first}`", path.display()))
    };
    let line = number("line")?;
    let column = number("column")?;
    let fragment = parts.next().unwrap_or_default().trim().to_string();
    if fragment.is_empty() {
        return Err(format!("{}: empty message fragment", path.display()));
    }
    Ok(Located {
        line,
        column,
        fragment,
    })
}
