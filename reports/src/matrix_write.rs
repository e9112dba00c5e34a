//! Writing the matrix reports to a directory.

use std::io;
use std::path::{Path, PathBuf};

use crate::matrix::Matrix;
use crate::matrix_html::matrix_page_in;
use crate::matrix_md::matrix_markdown;

/// Writes `matrix.md` and `matrix.html` into `dir` (created if missing),
/// and the pictures of the runs that are not failing beside their text
/// timelines (loaded when their run opens); returns the paths written, the
/// pages last, as they are written: a page never links a picture not yet
/// there. The text timelines the cells link to are the caller's to write;
/// the scenario files rows link to are linked relative to `dir`.
pub fn write_matrix(m: &Matrix, dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let (page, pictures) = matrix_page_in(m, dir);
    let mut written = Vec::with_capacity(pictures.len() + 2);
    for (path, svg) in pictures {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        crate::write_whole(&path, svg.as_bytes())?;
        written.push(path);
    }
    let md = dir.join("matrix.md");
    crate::write_whole(&md, matrix_markdown(m).as_bytes())?;
    let html = dir.join("matrix.html");
    crate::write_whole(&html, page.as_bytes())?;
    written.extend([md, html]);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix_sample::sample_matrix;

    #[test]
    fn writes_markdown_and_html() {
        let dir = std::env::temp_dir().join(format!("xds-matrix-test-{}", std::process::id()));
        let written = write_matrix(&sample_matrix(), &dir).unwrap();
        // The pictures first, the pages that frame them last.
        let (pictures, pages) = written.split_at(written.len() - 2);
        assert_eq!(pages, [dir.join("matrix.md"), dir.join("matrix.html")]);
        assert_eq!(pictures.len(), 4, "{pictures:?}");
        for picture in pictures {
            let svg = std::fs::read_to_string(picture).unwrap();
            assert!(
                svg.starts_with("<svg") && svg.contains("<style>"),
                "{picture:?}"
            );
        }
        let html = std::fs::read_to_string(dir.join("matrix.html")).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<svg"), "the failing run's picture is inline");
        assert_eq!(html.matches("<iframe").count(), 4);
        let md = std::fs::read_to_string(dir.join("matrix.md")).unwrap();
        assert!(md.starts_with("# xDS client conformance"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A report folder uploaded alone (a CI artifact) keeps its links to
    /// scenario files: they are copied into it and linked there, not
    /// linked where the checkout had them (`../../scenarios/...`).
    #[test]
    fn scenario_files_are_copied_into_the_folder_and_linked_there() {
        let checkout = tempfile::tempdir().unwrap();
        let source = checkout.path().join("scenarios/a46/nack.yaml");
        std::fs::create_dir_all(source.parent().unwrap()).unwrap();
        std::fs::write(&source, "description: d\n").unwrap();
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("reports-out/matrix");
        let mut m = sample_matrix();
        m.rows[0].source = Some(source.display().to_string());
        // A file not there is linked as before.
        m.rows[1].source = Some("/nowhere/scenarios/gone.yaml".into());
        let written = write_matrix(&m, &dir).unwrap();
        let copy = dir.join("scenarios/a46/nack.yaml");
        assert!(written.contains(&copy), "{written:?}");
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), "description: d\n");
        let html = std::fs::read_to_string(dir.join("matrix.html")).unwrap();
        assert!(
            html.contains("href=\"scenarios/a46/nack.yaml\""),
            "linked inside the folder"
        );
        let hrefs: Vec<&str> = html
            .split("href=\"")
            .skip(1)
            .filter_map(|h| h.split('"').next())
            .filter(|h| h.contains("nack.yaml"))
            .collect();
        assert!(
            !hrefs.is_empty() && hrefs.iter().all(|h| *h == "scenarios/a46/nack.yaml"),
            "{hrefs:?}"
        );
        assert!(
            html.contains("gone.yaml"),
            "the missing file is still linked"
        );
        assert!(!dir.join("scenarios/gone.yaml").exists());
    }
}
