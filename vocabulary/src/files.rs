//! Reading a file named by a person or a program: a regular file only,
//! and never more than a limit.
//!
//! A path on a command line, in a manifest or in a bootstrap may name a
//! FIFO (an open that blocks until a writer comes), a device (`/dev/zero`
//! never ends) or a folder. The file is opened without blocking and asked
//! what it is through the open handle, so nothing can swap it between the
//! question and the read; then at most one byte past the limit is read,
//! even if it grows meanwhile.

use std::io::Read as _;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file (it is {0}): not read")]
    NotRegular(&'static str),
    #[error("the file is larger than the {limit} bytes allowed ({size} bytes or more)")]
    TooLarge { size: u64, limit: u64 },
}

/// What a non-regular file is, in words.
pub fn kind_of(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_file() {
        "a file"
    } else {
        "something else"
    }
}

/// The bytes of the regular file at `path`, at most `limit` of them.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // O_NONBLOCK: opening a FIFO for reading returns at once instead of
    // waiting for a writer; a regular file ignores the flag.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(ReadError::NotRegular(kind_of(metadata.file_type())));
    }
    if metadata.len() > limit {
        return Err(ReadError::TooLarge {
            size: metadata.len(),
            limit,
        });
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// The UTF-8 text of the regular file at `path`, at most `limit` bytes.
pub fn read_regular_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read_regular(path, limit)?).map_err(|e| {
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8: {e}"),
        ))
    })
}

/// That `path`, if something is there, is a regular file a writer may
/// replace: a FIFO, a device or a folder in its place is refused rather
/// than replaced or written into.
pub fn check_replaceable(path: &Path) -> Result<(), ReadError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.into()),
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) if m.file_type().is_symlink() => match std::fs::metadata(path) {
            Ok(target) if !target.is_file() => {
                Err(ReadError::NotRegular(kind_of(target.file_type())))
            }
            _ => Ok(()),
        },
        Ok(m) => Err(ReadError::NotRegular(kind_of(m.file_type()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("fifo");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        path
    }

    #[test]
    fn only_regular_files_are_read_and_never_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo(dir.path());
        // At once, not blocked waiting for a writer.
        assert!(matches!(
            read_regular(&fifo, 10),
            Err(ReadError::NotRegular("a FIFO"))
        ));
        assert!(matches!(
            read_regular(Path::new("/dev/zero"), 10),
            Err(ReadError::NotRegular("a device"))
        ));
        assert!(matches!(
            read_regular(dir.path(), 10),
            Err(ReadError::NotRegular("a folder"))
        ));
        let file = dir.path().join("f");
        std::fs::write(&file, b"0123456789a").unwrap();
        assert!(matches!(
            read_regular(&file, 10),
            Err(ReadError::TooLarge {
                size: 11,
                limit: 10
            })
        ));
        assert_eq!(read_regular(&file, 11).unwrap(), b"0123456789a");
        assert!(check_replaceable(&file).is_ok());
        assert!(check_replaceable(&dir.path().join("none")).is_ok());
        assert!(check_replaceable(&fifo).is_err());
        assert!(check_replaceable(Path::new("/dev/zero")).is_err());
    }
}
