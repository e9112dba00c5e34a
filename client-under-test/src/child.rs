//! Child processes of the drivers: where a program is, temporary files
//! that go with a run, killing a whole process group, the tail of a log,
//! a process's peak memory. Shared by the adapter-protocol driver and the
//! Envoy driver; it knows nothing of either.

use std::collections::BTreeSet;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A relative program path with a `/` is relative to the repository root.
/// (std leaves it unspecified whether such a path is resolved before or
/// after `current_dir`, so it is made absolute here.) A bare name is
/// looked up in PATH.
pub(crate) fn program(repo_root: &Path, program: &str) -> PathBuf {
    let path = Path::new(program);
    if path.is_relative() && program.contains('/') {
        repo_root.join(path)
    } else {
        path.to_path_buf()
    }
}

/// SIGKILLs a process group. A group that is already gone (ESRCH) is fine.
///
/// Called on a group whose leader may have exited: that is the point (its
/// children may still run). The pgid cannot be reused while any member
/// lives; once all are gone, a new process would need to get the same pid
/// from the kernel's cycling allocator and make itself a group leader in
/// the moments before this runs, which we accept.
pub(crate) fn kill_group(pgid: i32) {
    // killpg(0) would signal our own group and killpg(1) init's; a child's
    // pid is never either, but a bug here must not kill the harness.
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg only sends a signal; it touches no memory of ours.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// A file in the temp directory, removed on drop (and by
/// [`remove_temp_files`] when the process is about to exit without
/// dropping anything).
pub(crate) struct TempFile(PathBuf);

/// Every [`TempFile`] alive, so that an exit that runs no destructors (a
/// second interrupt: `std::process::exit`) can still take them along.
static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn live() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every temporary file a client of this process still holds
/// (bootstraps, admin address files, logs): for a process about to exit at
/// once, whose destructors will not run.
pub fn remove_temp_files() {
    for path in std::mem::take(&mut *live()) {
        let _ = std::fs::remove_file(path);
    }
}

impl TempFile {
    /// Creates `<tmp>/xds-conformance-<stem>-<pid>-<n>-<nanos><suffix>`;
    /// `create_new`, so a leftover file is never reused.
    pub(crate) fn create(stem: &str, suffix: &str, contents: &[u8]) -> io::Result<TempFile> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let stem: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut attempts = 0;
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!(
                "xds-conformance-{stem}-{}-{n}-{nanos}{suffix}",
                std::process::id()
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut file) => {
                    live().insert(path.clone());
                    let file_guard = TempFile(path);
                    io::Write::write_all(&mut file, contents)?;
                    return Ok(file_guard);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 16 => {
                    attempts += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        live().remove(&self.0);
    }
}

/// The last `lines` lines of a (possibly large) log file, lossily decoded.
pub(crate) fn file_tail(path: &Path, lines: usize) -> String {
    // Reading only the end: pip and npm can write megabytes.
    const WINDOW: u64 = 64 * 1024;
    let mut bytes = Vec::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let len = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(WINDOW)));
        let _ = file.read_to_end(&mut bytes);
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The `VmHWM` (peak resident set size) line of a `/proc/<pid>/status`
/// text, in bytes: `VmHWM:\t   12345 kB`.
pub(crate) fn vm_hwm_bytes(status: &str) -> Option<u64> {
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))?
        .trim();
    let (number, unit) = value.split_once(char::is_whitespace).unwrap_or((value, ""));
    let number: u64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "kB" => 1024,
        "" => 1,
        _ => return None,
    };
    number.checked_mul(scale)
}
