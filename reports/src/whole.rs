//! Report files are written whole or not at all: each goes to a temporary
//! file beside its place and is renamed over it, so a full disk, a crash
//! or a signal mid-write never leaves a truncated `junit.xml` or
//! `matrix.html` for CI to read as a result.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` through a temporary file in the same folder
/// (a rename within one file system replaces the old file at once). On an
/// error the temporary file is removed and nothing at `path` changes.
pub fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    // A FIFO, a device or a folder where the file goes is not replaced
    // (as root, a rename over /dev/null would replace the device).
    xds_vocabulary::files::check_replaceable(path).map_err(|e| match e {
        xds_vocabulary::files::ReadError::Io(e) => e,
        other => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {other}", path.display()),
        ),
    })?;
    let partial = partial_path(path);
    let written = std::fs::File::create(&partial)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&partial, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

fn partial_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

/// That `dir` can take reports (it is created if missing): checked before
/// a run, so a report folder that is a file or read-only is found before
/// anything runs, not after.
pub fn check_writable(dir: &Path) -> io::Result<()> {
    // Something else there (a file, a FIFO, a device) is named as such.
    if let Ok(metadata) = std::fs::metadata(dir)
        && !metadata.is_dir()
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "not a folder (it is {})",
                xds_vocabulary::files::kind_of(metadata.file_type())
            ),
        ));
    }
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".write-probe.{}", std::process::id()));
    write_whole(&probe, b"")?;
    std::fs::remove_file(&probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_partial() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("junit.xml");
        write_whole(&path, b"old").expect("write");
        // A folder where the partial file would go makes the write fail.
        std::fs::create_dir(partial_path(&path)).expect("mkdir");
        assert!(write_whole(&path, b"new").is_err());
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
        std::fs::remove_dir(partial_path(&path)).expect("rmdir");
        write_whole(&path, b"new").expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["junit.xml"]);
    }

    #[test]
    fn a_report_folder_that_is_a_file_is_found_before_a_run() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let file = dir.path().join("reports-out");
        std::fs::write(&file, b"").expect("write");
        assert!(check_writable(&file).is_err());
        assert!(check_writable(&dir.path().join("fresh/reports")).is_ok());
    }
}
