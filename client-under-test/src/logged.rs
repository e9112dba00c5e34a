//! A driven program that logs to a file: started in a process group of its
//! own, its stdout and stderr appended to a temporary log (kept for a crash
//! report), contained so that it dies with the harness, and its exit status
//! published once it has exited. What the Envoy and Kuma drivers start; the
//! adapter-protocol driver reads its child's stdout instead.

use std::process::Stdio;

use tokio::process::Command;
use tokio::sync::watch;

use crate::ClientError;
use crate::child::TempFile;
use crate::containment::Containment;

/// A started program.
pub(crate) struct Logged {
    pub pid: u32,
    /// Its exit status text, once it has exited (set by a task that waits
    /// for it: dropping `Logged` kills nothing, its owner kills the group).
    pub exited: watch::Receiver<Option<String>>,
    /// Its stdout and stderr.
    pub log: TempFile,
    /// What it started outside its group ends with it (drop it after the
    /// group is killed: it sweeps what is left).
    pub contained: Containment,
}

/// Starts `command` (`what` names it in errors), logging to a new
/// temporary file named after `log_stem`.
pub(crate) fn spawn(
    mut command: Command,
    what: &str,
    log_stem: &str,
) -> Result<Logged, ClientError> {
    let io = |doing: &str, e: std::io::Error| ClientError::Failed(format!("{doing}: {e}"));
    let log =
        TempFile::create(log_stem, ".txt", b"").map_err(|e| io("cannot create the log file", e))?;
    let out = std::fs::OpenOptions::new()
        .append(true)
        .open(log.path())
        .map_err(|e| io("log file", e))?;
    let err = out.try_clone().map_err(|e| io("log file", e))?;
    command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .kill_on_drop(true);
    // It dies with the harness, even a SIGKILLed one.
    let contained = Containment::new();
    crate::guardian::guard(&mut command, &contained);
    let mut child = command
        .spawn()
        .map_err(|e| ClientError::Failed(format!("cannot start {what}: {e}")))?;
    let pid = child
        .id()
        .ok_or_else(|| ClientError::Failed(format!("{what} exited at once")))?;
    let (exit_tx, exited) = watch::channel(None);
    // Detached: it ends when the program does, which its owner makes sure
    // of (and kill_on_drop, if the runtime goes first).
    tokio::spawn(async move {
        let status = match child.wait().await {
            Ok(status) => status.to_string(),
            Err(e) => format!("could not be waited for: {e}"),
        };
        let _ = exit_tx.send(Some(status));
    });
    Ok(Logged {
        pid,
        exited,
        log,
        contained,
    })
}
