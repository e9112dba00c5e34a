//! SIGINT and SIGTERM: a run that is interrupted still reports.
//!
//! The first signal cancels [`token`]: every run in progress stops its
//! script, shuts its client down (killing the client's process group) and
//! its servers, and comes back as `interrupted` with the timeline so far;
//! scenarios not yet started come back as `interrupted` too; the command
//! writes its reports and exits with 128 + the signal's number. A second
//! signal exits at once, removing the clients' temporary files first
//! (whatever the client processes are doing, they die with the harness:
//! see the process guardian in `xds_client_under_test`); reports are
//! written timelines first, so one cut short never links what is missing.
//!
//! Without [`install`] (tests, the library used elsewhere) signals keep
//! their default action and the token is only cancelled by hand.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use tokio_util::sync::CancellationToken;

static TOKEN: OnceLock<CancellationToken> = OnceLock::new();
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Cancelled when the process is asked to stop.
pub fn token() -> &'static CancellationToken {
    TOKEN.get_or_init(CancellationToken::new)
}

/// The signal that interrupted the process, if one did.
pub fn signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    }
}

/// The exit code of a process stopped by `signal`: the shell's 128 + n.
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(1)
}

/// Handles SIGINT and SIGTERM from now on (on a thread of its own, so it
/// works whichever runtime, if any, the caller is in).
pub fn install() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Registered here, before returning, so a signal right after `install`
    // is already ours.
    let (mut interrupt, mut terminate) = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        ))
    })?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            runtime.block_on(async {
                let mut first = true;
                loop {
                    let number = tokio::select! {
                        _ = interrupt.recv() => libc::SIGINT,
                        _ = terminate.recv() => libc::SIGTERM,
                    };
                    if !first {
                        eprintln!("interrupted again: exiting now");
                        // No destructor runs past `exit`: the clients'
                        // temporary files go here (their processes die
                        // with the harness through their guardians).
                        xds_client_under_test::remove_temp_files();
                        std::process::exit(i32::from(exit_code(number)));
                    }
                    first = false;
                    SIGNAL.store(number, Ordering::SeqCst);
                    eprintln!(
                        "interrupted: stopping the clients, writing the reports of what ran \
                         (again to exit at once)"
                    );
                    token().cancel();
                }
            })
        })?;
    Ok(())
}
