//! Client processes die with the harness, however it dies.
//!
//! Every client process gets its own process group, and the harness kills
//! the group when the run ends. That needs a living harness. When the
//! harness is SIGKILLed (or crashes), nothing would: a parent-death signal
//! (`PR_SET_PDEATHSIG`) reaches only the direct child, and only when the
//! *thread* that spawned it exits, which a runtime's worker may do at any
//! time. So each client process starts with a guardian: a process forked
//! off just before the client's `exec`, in the client's group, that does
//! nothing but wait on the read end of a pipe whose only write end the
//! harness holds. The kernel closes that end when the harness dies, the
//! guardian's read returns, and it SIGKILLs the group (the client and
//! everything it started), then exits. While the harness lives, the
//! guardian is part of the group it kills at the end of the run.

use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;

use crate::containment::Containment;

/// The harness's end and the guardians' end of the lifeline pipe, both
/// close-on-exec (so no client program inherits either; the guardians are
/// forks that never exec, and keep what they need).
fn lifeline() -> Option<(RawFd, RawFd)> {
    static PIPE: OnceLock<Option<(RawFd, RawFd)>> = OnceLock::new();
    *PIPE.get_or_init(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two fds into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            eprintln!(
                "warning: no lifeline pipe ({}); client processes will outlive a killed harness",
                io::Error::last_os_error()
            );
            return None;
        }
        // The write end is never closed: it lives as long as the process.
        Some((fds[0], fds[1]))
    })
}

/// Makes `command` a contained client process: marked as its run's (see
/// `containment`: what it starts outside its group ends with the run too)
/// and started with a guardian (see the module), which on the harness's
/// death kills the group and the run's cgroup. The command must put the
/// child in its own process group (`process_group(0)`), so the group the
/// guardian kills is the client's alone.
pub(crate) fn guard(command: &mut tokio::process::Command, containment: &Containment) {
    containment.apply(command.as_std_mut());
    let Some((read_end, _)) = lifeline() else {
        return;
    };
    let kill_path = containment.kill_path();
    // SAFETY: the closure runs in the child between fork and exec, and
    // calls only async-signal-safe functions (getpid, getpgrp, fork, read,
    // close, kill, open, write, _exit, syscall); it allocates nothing and
    // takes no lock (the path was allocated before the fork).
    unsafe {
        command.pre_exec(move || {
            start_guardian(read_end, kill_path.as_deref());
            Ok(())
        });
    }
}

/// Forks the guardian (in the child, before exec). If the fork fails the
/// client runs unguarded: the harness still kills its group while alive.
///
/// # Safety
/// Only between fork and exec of a child that leads its own group.
unsafe fn start_guardian(read_end: RawFd, cgroup_kill: Option<&std::ffi::CStr>) {
    // SAFETY (whole body): async-signal-safe calls on our own fds and
    // process group, in a single-threaded forked child.
    unsafe {
        let group = libc::getpid();
        // Never kill a group that is not the client's own (the harness's,
        // say, if the command was not given its own group).
        if libc::getpgrp() != group {
            return;
        }
        if libc::fork() != 0 {
            // The client (or a failed fork): go on to exec.
            return;
        }
        // The guardian. Keep only the lifeline's read end: an inherited
        // stdout pipe would keep the harness from seeing the client's
        // stdout close, an inherited write end of the lifeline would keep
        // the guardian itself from ever seeing EOF.
        close_all_but(read_end);
        let mut byte = 0u8;
        loop {
            let n = libc::read(read_end, (&raw mut byte).cast(), 1);
            if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
                break;
            }
        }
        libc::kill(-group, libc::SIGKILL);
        // And whatever left the group, in the run's cgroup (the guardian
        // is in it too: this is its last act).
        if let Some(path) = cgroup_kill {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
            if fd >= 0 {
                libc::write(fd, b"1".as_ptr().cast(), 1);
            }
        }
        libc::_exit(0);
    }
}

/// Closes every fd but `keep`.
///
/// # Safety
/// As [`start_guardian`].
unsafe fn close_all_but(keep: RawFd) {
    // SAFETY: close_range and close only close our own fds.
    unsafe {
        let keep = keep as libc::c_uint;
        let ranges_closed = (keep == 0
            || libc::syscall(libc::SYS_close_range, 0, keep - 1, 0) == 0)
            && libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0) == 0;
        if !ranges_closed {
            // Kernels before 5.9: one by one, as far as fds usually go.
            for fd in 0..4096 {
                if fd != keep as libc::c_int {
                    libc::close(fd);
                }
            }
        }
    }
}
