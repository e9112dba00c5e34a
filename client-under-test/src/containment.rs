//! Everything a client's adapter starts ends with its run, whether it
//! stays in the adapter's process group or not.
//!
//! The adapter runs in a process group of its own, and the harness kills
//! the group. A child that calls `setsid` (as daemonising runtimes do),
//! or double-forks into a new session, leaves that group, and its parent
//! may be gone by then: the group kill misses it, and it outlives the run.
//! The adapter is the client's code, so the harness cannot ask it not to.
//! Two nets catch such processes:
//!
//! - a **cgroup** of the run's own, where a writable cgroup v2 hierarchy
//!   is mounted (as root on most Linux machines): the adapter joins it
//!   before `exec`, everything it starts stays in it whatever its group or
//!   session, and `cgroup.kill` ends them all at once;
//! - everywhere, an **environment mark**: the adapter starts with
//!   `XDS_CONFORMANCE_RUN=<token>` (a token of this harness process and
//!   this run), which its descendants inherit; at the end of the run every
//!   process whose environment holds the mark is killed. (A descendant
//!   that clears its environment and is outside a cgroup escapes this
//!   net; none of the runtimes the harness drives does.)

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that marks a run's processes.
pub const RUN_MARK: &str = "XDS_CONFORMANCE_RUN";

/// How long a sweep waits for a cgroup to empty before removing it.
const EMPTY_WAIT: Duration = Duration::from_secs(2);

/// A run's processes: how they are marked, and how they are ended.
pub(crate) struct Containment {
    token: String,
    cgroup: Option<Cgroup>,
}

/// A cgroup v2 folder of one run.
struct Cgroup {
    dir: PathBuf,
    /// `<dir>/cgroup.procs`, ready for the child's `pre_exec`.
    procs: CString,
    /// `<dir>/cgroup.kill`, ready for the guardian.
    kill: CString,
}

impl Containment {
    /// A new run's marks; in a cgroup of its own where one can be made.
    pub(crate) fn new() -> Containment {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let token = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let cgroup = Cgroup::create(&token);
        Containment { token, cgroup }
    }

    /// The same, without a cgroup: the environment mark alone (what a
    /// machine without a writable cgroup hierarchy gets; for tests).
    #[cfg(test)]
    fn without_cgroup() -> Containment {
        let mut containment = Containment::new();
        if let Some(cgroup) = containment.cgroup.take() {
            let _ = std::fs::remove_dir(&cgroup.dir);
        }
        containment
    }

    /// Whether the run has a cgroup (else the environment mark alone).
    #[cfg(test)]
    fn has_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }

    /// The path the guardian writes to kill the cgroup when the harness
    /// dies (see `guardian`).
    pub(crate) fn kill_path(&self) -> Option<CString> {
        self.cgroup.as_ref().map(|c| c.kill.clone())
    }

    /// Marks `command`'s process and everything it starts as this run's:
    /// the environment mark, and (before `exec`) the cgroup.
    pub(crate) fn apply(&self, command: &mut std::process::Command) {
        command.env(RUN_MARK, &self.token);
        if let Some(cgroup) = &self.cgroup {
            let procs = cgroup.procs.clone();
            // SAFETY: the closure runs between fork and exec and calls only
            // open, write and close, which are async-signal-safe; the path
            // was allocated before the fork.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(command, move || {
                    join(&procs);
                    Ok(())
                });
            }
        }
    }

    /// Kills every process of the run that is still alive: the cgroup's,
    /// and every process bearing the environment mark (found again until
    /// none is left, so one forking as it dies is caught too). Returns
    /// how many distinct processes were found by the mark: a killed one
    /// may still be found on the next pass, before the kernel has taken
    /// its memory, and is not counted twice.
    pub(crate) fn sweep(&self) -> usize {
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
        let mut found = std::collections::BTreeSet::new();
        for _ in 0..5 {
            let marked = marked_processes(&self.token);
            if marked.is_empty() {
                break;
            }
            for pid in &marked {
                // SAFETY: kill only sends a signal.
                unsafe {
                    libc::kill(*pid, libc::SIGKILL);
                }
            }
            found.extend(marked);
            std::thread::sleep(Duration::from_millis(5));
        }
        found.len()
    }
}

impl Drop for Containment {
    fn drop(&mut self) {
        self.sweep();
        if let Some(cgroup) = &self.cgroup {
            cgroup.remove();
        }
    }
}

impl Cgroup {
    /// `<cgroup2 mount><own cgroup>/xds-conformance.<token>`, if this
    /// process can make it.
    fn create(token: &str) -> Option<Cgroup> {
        let mount = cgroup2_mount()?;
        let own = own_cgroup()?;
        let dir = mount
            .join(own.trim_start_matches('/'))
            .join(format!("xds-conformance.{token}"));
        std::fs::create_dir(&dir).ok()?;
        let file = |name: &str| CString::new(dir.join(name).as_os_str().as_encoded_bytes()).ok();
        let (Some(procs), Some(kill)) = (file("cgroup.procs"), file("cgroup.kill")) else {
            let _ = std::fs::remove_dir(&dir);
            return None;
        };
        Some(Cgroup { dir, procs, kill })
    }

    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// `cgroup.kill` (Linux 5.14), or each process by pid.
    fn kill_all(&self) {
        if std::fs::write(self.dir.join("cgroup.kill"), b"1").is_err() {
            for pid in self.pids() {
                // SAFETY: kill only sends a signal.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Removes the folder once its processes are gone (killed ones take a
    /// moment to be reaped).
    fn remove(&self) {
        let started = Instant::now();
        while !self.pids().is_empty() && started.elapsed() < EMPTY_WAIT {
            self.kill_all();
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is
/// `procs`. Between fork and exec: async-signal-safe calls only, and a
/// failure leaves the process where it was (the environment mark holds).
fn join(procs: &CString) {
    // SAFETY: open/write/close on a path and a buffer we own.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            let zero = b"0";
            libc::write(fd, zero.as_ptr().cast(), zero.len());
            libc::close(fd);
        }
    }
}

/// Where a writable-looking cgroup v2 hierarchy is mounted.
fn cgroup2_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mounts.lines().find_map(|line| {
        // `... mount-point options - fstype source super-options`
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let fields: Vec<&str> = left.split_whitespace().collect();
        let (point, options) = (fields.get(4)?, fields.get(5)?);
        options
            .split(',')
            .any(|o| o == "rw")
            .then(|| PathBuf::from(point))
    })
}

/// This process's cgroup v2 path (`0::/path` in `/proc/self/cgroup`).
fn own_cgroup() -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
}

/// The pids whose environment holds `RUN_MARK=token`.
fn marked_processes(token: &str) -> Vec<i32> {
    let wanted = format!("{RUN_MARK}={token}");
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| environ_holds(&Path::new("/proc").join(pid.to_string()), &wanted))
        .collect()
}

/// Whether `<proc>/environ` has the entry `wanted` (read to at most 1 MiB:
/// an environment is far smaller).
fn environ_holds(proc: &Path, wanted: &str) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(proc.join("environ")) else {
        return false;
    };
    let mut bytes = Vec::new();
    if file.take(1 << 20).read_to_end(&mut bytes).is_err() {
        return false;
    }
    bytes
        .split(|b| *b == 0)
        .any(|entry| entry == wanted.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Live processes whose command line is `marker` (its words).
    fn alive(marker: &str) -> Vec<i32> {
        let wanted: Vec<u8> = marker.replace(' ', "\0").into_bytes();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let state =
                    std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // A zombie is dead: only its parent's wait is left.
                !state
                    .rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('Z'))
                    && cmdline.strip_suffix(b"\0").unwrap_or(&cmdline) == wanted.as_slice()
            })
            .collect()
    }

    /// A shell that starts `sleep <seconds>` in a new session (setsid)
    /// and one through a double fork, then exits: both escape its group.
    fn escape(containment: &Containment, seconds: &str) {
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(format!(
            "setsid sleep {seconds} </dev/null >/dev/null 2>&1 & \
             (sh -c 'sleep {seconds}1 </dev/null >/dev/null 2>&1 &' &) ; exit 0"
        ));
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        containment.apply(&mut command);
        let status = command.status().expect("sh runs");
        assert!(status.success());
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let started = Instant::now();
        while !done() {
            assert!(started.elapsed() < Duration::from_secs(5), "{what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn processes_that_left_the_group_are_found_by_their_mark() {
        let containment = Containment::without_cgroup();
        escape(&containment, "86397");
        // The shells that started them carry the mark too, until they
        // exit: the sweep is asked to find the two sleeps alone.
        wait_until("both sleeps start and their shells end", || {
            let mut sleeps = alive("sleep 86397");
            sleeps.extend(alive("sleep 863971"));
            let mut marked = marked_processes(&containment.token);
            sleeps.sort_unstable();
            marked.sort_unstable();
            sleeps.len() == 2 && marked == sleeps
        });
        assert_eq!(containment.sweep(), 2);
        wait_until("both sleeps end", || {
            alive("sleep 86397").is_empty() && alive("sleep 863971").is_empty()
        });
    }

    #[test]
    fn processes_that_left_the_group_end_with_the_runs_cgroup() {
        let containment = Containment::new();
        if !containment.has_cgroup() {
            eprintln!("no writable cgroup v2 hierarchy here: the mark alone is tested");
            return;
        }
        escape(&containment, "86396");
        wait_until("both sleeps start", || {
            alive("sleep 86396").len() + alive("sleep 863961").len() == 2
        });
        let dir = containment.cgroup.as_ref().unwrap().dir.clone();
        drop(containment);
        wait_until("both sleeps end", || {
            alive("sleep 86396").is_empty() && alive("sleep 863961").is_empty()
        });
        assert!(!dir.exists(), "the run's cgroup is removed");
    }
}
