//! Writing the matrix reports to a directory.

use std::io;
use std::path::{Path, PathBuf};

use crate::matrix::Matrix;
use crate::matrix_html::matrix_html_in;
use crate::matrix_md::matrix_markdown;

/// Writes `matrix.md` and `matrix.html` into `dir` (created if missing);
/// returns the paths written. The text timelines the cells link to are the
/// caller's to write; the scenario files rows link to are linked relative
/// to `dir`.
pub fn write_matrix(m: &Matrix, dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let md = dir.join("matrix.md");
    crate::write_whole(&md, matrix_markdown(m).as_bytes())?;
    let html = dir.join("matrix.html");
    crate::write_whole(&html, matrix_html_in(m, dir).as_bytes())?;
    Ok(vec![md, html])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix_sample::sample_matrix;

    #[test]
    fn writes_markdown_and_html() {
        let dir = std::env::temp_dir().join(format!("xds-matrix-test-{}", std::process::id()));
        let written = write_matrix(&sample_matrix(), &dir).unwrap();
        assert_eq!(written, [dir.join("matrix.md"), dir.join("matrix.html")]);
        let html = std::fs::read_to_string(dir.join("matrix.html")).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<svg"));
        let md = std::fs::read_to_string(dir.join("matrix.md")).unwrap();
        assert!(md.starts_with("# xDS client conformance"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
