//! Installing an adapter's client: one step for every package manager
//! (pip, npm, go, maven): its own command, run once while the manifest's
//! marker is missing or names other install inputs, under a lock beside
//! the marker, within a timeout, with the tail of its output when it
//! fails.

use std::io::Read;

use super::*;

/// The most the install inputs may hold, all together: lock files and an
/// adapter's sources are kilobytes; a folder named by mistake (a
/// `node_modules`) is refused rather than read for minutes.
const MAX_INPUT_BYTES: u64 = 64 << 20;
/// The most a marker is read of (it holds one line the harness wrote).
const MAX_MARKER_BYTES: u64 = 4096;
/// How the marker's line starts.
const INPUTS_LINE: &str = "install inputs sha256 ";

/// Why the install lock was not taken.
pub(super) enum InstallLockError {
    Io(io::Error),
    TimedOut,
}

impl From<io::Error> for InstallLockError {
    fn from(e: io::Error) -> Self {
        InstallLockError::Io(e)
    }
}

impl ProcessClient {
    /// Runs the manifest's `install` from the repository root if its
    /// `installed` marker is missing, with stdout and stderr captured
    /// together; a failure carries the last lines of that output.
    ///
    /// Blocks (for minutes, for pip or npm): from async code, call it
    /// through `tokio::task::spawn_blocking`.
    pub fn ensure_installed(&self) -> Result<(), ProcessError> {
        let (Some(install), Some(marker)) = (&self.manifest.install, &self.manifest.installed)
        else {
            return Ok(());
        };
        let marker = self.repo_root.join(marker);
        let adapter = self.manifest.name.clone();
        let io_error = |source| ProcessError::InstallIo {
            adapter: adapter.clone(),
            source,
        };
        let inputs = self.install_inputs_digest().map_err(io_error)?;
        if marker_is_current(&marker, inputs.as_deref()) {
            return Ok(());
        }
        // Two runs of the harness (or two test processes) may find the
        // marker missing at once; installs are not safe to run side by
        // side (pip's venv, npm's folder), so the second waits for the
        // first and then finds its marker. The lock is the kernel's
        // (flock): it goes with the process, however that ends.
        let _lock = self.install_lock(&marker).map_err(|e| match e {
            InstallLockError::Io(source) => io_error(source),
            InstallLockError::TimedOut => ProcessError::InstallFailed {
                adapter: adapter.clone(),
                outcome: format!(
                    "waited {} for another install of this adapter to finish",
                    human_duration(self.timeouts.install)
                ),
                output_tail: String::new(),
            },
        })?;
        if marker_is_current(&marker, inputs.as_deref()) {
            return Ok(());
        }
        // One file for both streams keeps their lines interleaved as they
        // were written, and needs no reader threads to keep pipes drained.
        let log = TempFile::create(&format!("install-{adapter}"), ".log", b"").map_err(io_error)?;
        let out = std::fs::OpenOptions::new()
            .append(true)
            .open(log.path())
            .map_err(io_error)?;
        let err = out.try_clone().map_err(io_error)?;
        let mut command = std::process::Command::new(program(&self.repo_root, &install[0]));
        command
            .args(&install[1..])
            .current_dir(&self.repo_root)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        // What the install leaves running outside its group (a package
        // manager's daemon) ends with it too.
        let contained = crate::containment::Containment::new();
        contained.apply(&mut command);
        let mut child = command
            .spawn()
            .map_err(|source| ProcessError::InstallSpawn {
                adapter: adapter.clone(),
                command: install.clone(),
                dir: self.repo_root.clone(),
                source,
            })?;
        let pgid = child.id() as i32;
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if started.elapsed() >= self.timeouts.install => {
                    break Err(format!(
                        "timed out after {}",
                        human_duration(self.timeouts.install)
                    ));
                }
                Ok(None) => std::thread::sleep(INSTALL_POLL),
                Err(e) => break Err(format!("could not be waited for: {e}")),
            }
        };
        // Whatever happened, nothing the install started keeps running
        // (package managers can leave helpers behind).
        kill_group(pgid);
        contained.sweep();
        if status.is_err() {
            // Also by pid: if the install moved itself out of its group,
            // the wait would otherwise never end.
            let _ = child.kill();
            let _ = child.wait();
        }
        let failed = |outcome: String| ProcessError::InstallFailed {
            adapter: adapter.clone(),
            outcome,
            output_tail: file_tail(log.path(), INSTALL_TAIL_LINES),
        };
        match status {
            Err(outcome) => Err(failed(outcome)),
            Ok(status) if !status.success() => Err(failed(format!("exited with {status}"))),
            Ok(_) if !marker.exists() => Err(failed(format!(
                "finished but did not create its marker {}",
                marker.display()
            ))),
            Ok(_) => match inputs {
                // Written over what the install put there, in one rename:
                // a reader sees the old marker or the new one.
                Some(digest) => {
                    // What the install said in its marker stays above.
                    let mut text = String::new();
                    std::fs::File::open(&marker)
                        .and_then(|f| f.take(MAX_MARKER_BYTES).read_to_string(&mut text))
                        .map_err(io_error)?;
                    let mut kept: String = text
                        .lines()
                        .filter(|line| !line.starts_with(INPUTS_LINE))
                        .map(|line| format!("{line}\n"))
                        .collect();
                    kept.push_str(&format!("{INPUTS_LINE}{digest}\n"));
                    let fresh = marker.with_extension("inputs.tmp");
                    std::fs::write(&fresh, kept)
                        .and_then(|()| std::fs::rename(&fresh, &marker))
                        .map_err(io_error)
                }
                None => Ok(()),
            },
        }
    }

    /// The SHA-256 of the manifest's `install_inputs` (each file's path
    /// relative to the manifest's folder, its length and its bytes, in
    /// path order; a folder's files, recursively); None without inputs or
    /// without the folder to read them from.
    fn install_inputs_digest(&self) -> io::Result<Option<String>> {
        let (Some(dir), false) = (&self.manifest.dir, self.manifest.install_inputs.is_empty())
        else {
            return Ok(None);
        };
        let mut files = Vec::new();
        for input in &self.manifest.install_inputs {
            collect_files(&dir.join(input), input, 0, &mut files)?;
        }
        files.sort();
        files.dedup();
        let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
        let mut total = 0u64;
        for (name, path) in files {
            let file = std::fs::File::open(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            let mut bytes = Vec::new();
            file.take(MAX_INPUT_BYTES - total + 1)
                .read_to_end(&mut bytes)?;
            total += bytes.len() as u64;
            if total > MAX_INPUT_BYTES {
                return Err(io::Error::other(format!(
                    "install_inputs hold more than {} MiB (at {}): name the lock files and \
                     sources the install builds from, not what it produces",
                    MAX_INPUT_BYTES >> 20,
                    path.display()
                )));
            }
            digest.update(name.as_bytes());
            digest.update(&[0]);
            digest.update(&(bytes.len() as u64).to_le_bytes());
            digest.update(&bytes);
        }
        Ok(Some(xds_vocabulary::hex::hex(digest.finish().as_ref())))
    }

    /// Takes the lock beside `marker` (`<marker>.lock`), waiting at most
    /// the install timeout for another holder to let go.
    fn install_lock(&self, marker: &Path) -> Result<std::fs::File, InstallLockError> {
        let mut name = marker.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        let path = marker.with_file_name(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(std::fs::TryLockError::WouldBlock) => {
                    if started.elapsed() >= self.timeouts.install {
                        return Err(InstallLockError::TimedOut);
                    }
                    std::thread::sleep(INSTALL_POLL);
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
            }
        }
    }
}

/// Whether the marker says the install is done, for these inputs (None:
/// its existence is enough).
fn marker_is_current(marker: &Path, inputs: Option<&str>) -> bool {
    let Some(inputs) = inputs else {
        return marker.exists();
    };
    let Ok(file) = std::fs::File::open(marker) else {
        return false;
    };
    let mut text = String::new();
    if file
        .take(MAX_MARKER_BYTES)
        .read_to_string(&mut text)
        .is_err()
    {
        return false;
    }
    text.lines()
        .any(|line| line.strip_prefix(INPUTS_LINE) == Some(inputs))
}

/// How deep folders in the install inputs may nest (a symbolic link that
/// loops would otherwise nest forever).
const MAX_INPUT_DEPTH: usize = 32;
/// The most files the install inputs may hold.
const MAX_INPUT_FILES: usize = 10_000;

/// Adds `path` (named `name` in the digest) to `files`: a file itself, a
/// folder's files recursively. Symbolic links are followed as the install
/// would read them; a missing input is an error that names it.
fn collect_files(
    path: &Path,
    name: &Path,
    depth: usize,
    files: &mut Vec<(String, PathBuf)>,
) -> io::Result<()> {
    if depth > MAX_INPUT_DEPTH || files.len() >= MAX_INPUT_FILES {
        return Err(io::Error::other(format!(
            "install input {}: more than {MAX_INPUT_FILES} files or {MAX_INPUT_DEPTH} folders deep",
            path.display()
        )));
    }
    let meta = std::fs::metadata(path)
        .map_err(|e| io::Error::new(e.kind(), format!("install input {}: {e}", path.display())))?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            collect_files(
                &entry.path(),
                &name.join(entry.file_name()),
                depth + 1,
                files,
            )?;
        }
    } else if meta.is_file() {
        files.push((name.to_string_lossy().into_owned(), path.to_path_buf()));
    } else {
        return Err(io::Error::other(format!(
            "install input {} is neither a file nor a folder",
            path.display()
        )));
    }
    Ok(())
}
