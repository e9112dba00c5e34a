//! Installing an adapter's client: one step for every package manager
//! (pip, npm, go, maven): its own command, run once while the manifest's
//! marker is missing, under a lock beside the marker, within a timeout,
//! with the tail of its output when it fails.

use super::*;

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
        if marker.exists() {
            return Ok(());
        }
        let adapter = self.manifest.name.clone();
        let io_error = |source| ProcessError::InstallIo {
            adapter: adapter.clone(),
            source,
        };
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
        if marker.exists() {
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
            Ok(_) => Ok(()),
        }
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
