//! A started adapter: its process group, the tasks that read its stdout
//! and stderr, and the state they share with the client.

use super::*;

/// The reply to a command sent, once it comes.
pub(super) type PendingReply = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Map<String, Value>, ClientError>> + Send>,
>;

/// A started adapter. Dropping it kills its process group.
pub(super) struct Running {
    /// Also the process group id (`process_group(0)`).
    pub(super) pid: u32,
    pub(super) shared: Arc<Shared>,
    pub(super) stdin: ChildStdin,
    /// The exit status, once the leader has exited.
    pub(super) exit: watch::Receiver<Option<String>>,
    /// True once stderr is closed (everything written has been read).
    pub(super) stderr_eof: watch::Receiver<bool>,
    pub(super) readers: [JoinHandle<()>; 2],
    pub(super) next_id: u64,
    pub(super) hello: AdapterHello,
    pub(super) csds: Option<ClientStatusDiscoveryServiceClient<Channel>>,
    pub(super) _bootstrap: TempFile,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Synchronous, so it works without a runtime (and in panics).
        self.shared.kill();
        for reader in &self.readers {
            reader.abort();
        }
    }
}

impl Running {
    /// A `Crashed` error with the stderr tail, once stderr has drained.
    pub(super) async fn crashed(&self, reason: String) -> ClientError {
        let mut eof = self.stderr_eof.clone();
        let _ = tokio::time::timeout(STDERR_DRAIN, eof.wait_for(|closed| *closed)).await;
        ClientError::Crashed {
            reason,
            stderr_tail: self.shared.stderr_tail(),
        }
    }

    /// `Crashed` if the process is broken (e.g. it died during a CSDS
    /// fetch), else `Failed(message)`.
    pub(super) async fn failed_or_crashed(&self, message: String) -> ClientError {
        match self.shared.broken_reason() {
            Some(reason) => self.crashed(reason).await,
            None => ClientError::Failed(message),
        }
    }

    /// Sends one command and waits for its reply; returns the reply's
    /// fields when it is `ok`.
    pub(super) async fn command(
        &mut self,
        op: &str,
        fields: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Map<String, Value>, ClientError> {
        self.start_command(op, fields, timeout).await?.await
    }

    /// Sends one command and returns at once: the future is its reply
    /// (other commands may be sent meanwhile; replies carry their ids).
    pub(super) async fn start_command(
        &mut self,
        op: &str,
        mut fields: Map<String, Value>,
        timeout: Duration,
    ) -> Result<PendingReply, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let (reply_tx, reply_rx) = oneshot::channel();
        let already_broken = {
            let mut state = self.shared.lock();
            if state.broken.is_none() {
                state.pending.insert(id, reply_tx);
            }
            state.broken.clone()
        };
        if let Some(reason) = already_broken {
            return Err(self.crashed(reason).await);
        }
        fields.insert("id".into(), json!(id));
        fields.insert("op".into(), json!(op));
        let mut line = Value::Object(fields).to_string().into_bytes();
        line.push(b'\n');

        // The write counts against the timeout too: a child that stops
        // reading stdin would otherwise block us on a full pipe.
        let deadline = tokio::time::Instant::now() + timeout;
        let stdin = &mut self.stdin;
        let written = tokio::time::timeout_at(deadline, async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        })
        .await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                // Most likely the process is gone (EPIPE): prefer the
                // reason that names its exit status.
                let mut exit = self.exit.clone();
                let _ = tokio::time::timeout(EXIT_AFTER_EOF, exit.wait_for(Option::is_some)).await;
                let reason = self
                    .shared
                    .mark_broken(format!("cannot send {op} to the adapter's stdin: {e}"));
                return Err(self.crashed(reason).await);
            }
            Err(_) => {
                let reason = self.shared.mark_broken(format!(
                    "no reply to {op} within {}",
                    human_duration(timeout)
                ));
                return Err(self.crashed(reason).await);
            }
        }
        let shared = self.shared.clone();
        let stderr_eof = self.stderr_eof.clone();
        let op = op.to_string();
        Ok(Box::pin(async move {
            let crashed = |reason: String| async {
                let mut eof = stderr_eof.clone();
                let _ = tokio::time::timeout(STDERR_DRAIN, eof.wait_for(|closed| *closed)).await;
                ClientError::Crashed {
                    reason,
                    stderr_tail: shared.stderr_tail(),
                }
            };
            match tokio::time::timeout_at(deadline, reply_rx).await {
                Ok(Ok(reply)) => reply.into_result(),
                // The pending reply was dropped: the client broke meanwhile.
                Ok(Err(_)) => {
                    let reason = shared
                        .broken_reason()
                        .unwrap_or_else(|| "the adapter stopped".into());
                    Err(crashed(format!("{reason} (while waiting for the reply to {op})")).await)
                }
                Err(_) => {
                    let reason = shared.mark_broken(format!(
                        "no reply to {op} within {}",
                        human_duration(timeout)
                    ));
                    Err(crashed(reason).await)
                }
            }
        }))
    }
}

#[derive(Default)]
pub(super) struct SharedState {
    /// Commands waiting for their reply, by id.
    pub(super) pending: HashMap<u64, oneshot::Sender<Reply>>,
    /// Why the client is unusable; set once, first cause wins.
    pub(super) broken: Option<String>,
    /// `shutdown` was sent (or we are killing it on purpose): an exit now
    /// is expected, not a crash.
    pub(super) shutting_down: bool,
    pub(super) hello_seen: bool,
    pub(super) stderr_tail: VecDeque<String>,
}

/// State shared by the client and its reader tasks.
pub(super) struct Shared {
    pub(super) adapter: String,
    /// What the adapter started outside its group: swept with the group.
    pub(super) contained: crate::containment::Containment,
    /// The adapter's pid, which is also its process group id.
    pub(super) pid: i32,
    /// The leader has been waited for: its pid may be reused now.
    pub(super) reaped: AtomicBool,
    pub(super) sink: EventSink,
    pub(super) state: Mutex<SharedState>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, SharedState> {
        // The critical sections cannot leave the state half-updated, so a
        // poisoned lock (a panic elsewhere while holding it) is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn broken_reason(&self) -> Option<String> {
        self.lock().broken.clone()
    }

    /// Records why the client is unusable (the first reason wins, and is
    /// returned), fails every pending command, kills the process group and
    /// puts the reason on the timeline.
    pub(super) fn mark_broken(&self, reason: String) -> String {
        {
            let mut state = self.lock();
            if let Some(first) = &state.broken {
                return first.clone();
            }
            state.broken = Some(reason.clone());
            // Dropping the senders wakes the waiting commands.
            state.pending.clear();
        }
        // A client that broke the protocol or stopped answering cannot be
        // trusted with anything further; the harness gets the reason from
        // the next command, and the fake servers stop hearing from it.
        self.kill();
        (self.sink)(ObservedEvent::Client(ClientEvent::Log {
            level: LogLevel::Error,
            message: format!("adapter {}: {reason}", self.adapter),
        }));
        reason
    }

    /// Kills the process group, and the leader by pid while it has not
    /// been reaped (in case it moved itself to another group).
    pub(super) fn kill(&self) {
        kill_group(self.pid);
        self.contained.sweep();
        if !self.reaped.load(Ordering::Acquire) && self.pid > 1 {
            // SAFETY: kill only sends a signal.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
        }
    }

    pub(super) fn stderr_tail(&self) -> String {
        let state = self.lock();
        let lines: Vec<&str> = state.stderr_tail.iter().map(String::as_str).collect();
        lines.join("\n")
    }

    pub(super) fn log(&self, level: LogLevel, message: String) {
        (self.sink)(ObservedEvent::Client(ClientEvent::Log { level, message }));
    }
}

pub(super) struct Reply {
    pub(super) ok: bool,
    pub(super) error: String,
    pub(super) fields: Map<String, Value>,
}

impl Reply {
    pub(super) fn into_result(self) -> Result<Map<String, Value>, ClientError> {
        if self.ok {
            return Ok(self.fields);
        }
        match self.error.strip_prefix("unsupported") {
            Some(what) => Err(ClientError::Unsupported(
                what.trim_start_matches(':').trim().to_string(),
            )),
            None => Err(ClientError::Failed(self.error)),
        }
    }
}

/// Waits for the leader to exit; an exit nobody asked for breaks the
/// client.
pub(super) async fn watch_exit(
    mut child: Child,
    shared: Arc<Shared>,
    exit: watch::Sender<Option<String>>,
) {
    let status = match child.wait().await {
        Ok(status) => status.to_string(),
        Err(e) => format!("could not be waited for: {e}"),
    };
    shared.reaped.store(true, Ordering::Release);
    let (expected, hello_seen) = {
        let state = shared.lock();
        (state.shutting_down, state.hello_seen)
    };
    if !expected {
        shared.mark_broken(if hello_seen {
            format!("client process exited unexpectedly ({status})")
        } else {
            format!("client process exited before hello ({status})")
        });
    }
    // Published after mark_broken, so whoever wakes on it finds the reason
    // that names the exit status.
    exit.send_replace(Some(status));
}

/// Keeps the last lines of stderr. Reading it all the time also keeps the
/// child from blocking on a full pipe when it logs a lot (debug tracing).
pub(super) async fn read_stderr(
    stderr: ChildStderr,
    shared: Arc<Shared>,
    eof: watch::Sender<bool>,
) {
    let mut reader = BufReader::new(stderr);
    while let Ok(Some((bytes, truncated))) = read_line_capped(&mut reader, MAX_STDERR_LINE).await {
        let mut line = String::from_utf8_lossy(&bytes).into_owned();
        if line.ends_with('\r') {
            line.pop();
        }
        if truncated {
            line.push_str(" [...]");
        }
        let mut state = shared.lock();
        if state.stderr_tail.len() == STDERR_TAIL_LINES {
            state.stderr_tail.pop_front();
        }
        state.stderr_tail.push_back(line);
    }
    eof.send_replace(true);
}

/// Reads the protocol from stdout: the hello, then replies and events.
pub(super) async fn read_stdout(
    stdout: ChildStdout,
    shared: Arc<Shared>,
    hello: oneshot::Sender<AdapterHello>,
    mut exit: watch::Receiver<Option<String>>,
) {
    let mut reader = BufReader::new(stdout);
    let mut hello = Some(hello);
    loop {
        match read_line_capped(&mut reader, MAX_STDOUT_LINE).await {
            Ok(Some((_, true))) => {
                shared.mark_broken(format!(
                    "printed a line longer than {MAX_STDOUT_LINE} bytes on stdout"
                ));
                return;
            }
            Ok(Some((line, false))) => {
                if let Err(reason) = handle_line(&shared, &mut hello, &line) {
                    shared.mark_broken(reason);
                    return;
                }
            }
            Ok(None) => {
                // stdout closes when the process exits: give the exit
                // watcher a moment to report the status, which says more.
                let _ = tokio::time::timeout(EXIT_AFTER_EOF, exit.wait_for(Option::is_some)).await;
                if !shared.lock().shutting_down {
                    shared.mark_broken("the adapter closed its stdout".into());
                }
                return;
            }
            Err(e) => {
                shared.mark_broken(format!("reading the adapter's stdout failed: {e}"));
                return;
            }
        }
    }
}

/// Handles one stdout line; `Err` is a protocol violation, with the reason.
pub(super) fn handle_line(
    shared: &Shared,
    hello: &mut Option<oneshot::Sender<AdapterHello>>,
    line: &[u8],
) -> Result<(), String> {
    match parse_line(line, hello.is_some()).map_err(|e| e.to_string())? {
        AdapterLine::Hello(said) => {
            shared.lock().hello_seen = true;
            // If `start` gave up waiting meanwhile, the process is being
            // killed anyway.
            if let Some(hello_tx) = hello.take() {
                let _ = hello_tx.send(said);
            }
        }
        AdapterLine::Reply {
            id,
            ok,
            error,
            fields,
        } => {
            let waiting = shared.lock().pending.remove(&id).ok_or_else(|| {
                format!(
                    "replied to command {id}, which is not waiting for a reply: {}",
                    excerpt(line)
                )
            })?;
            let _ = waiting.send(Reply { ok, error, fields });
        }
        AdapterLine::Event(observed) => (shared.sink)(observed),
    }
    Ok(())
}

/// Reads one `\n`-terminated line (without the `\n`), keeping at most
/// `max` bytes of it; the flag says whether bytes were dropped. `None` at
/// end of input. Unlike `read_line`, a child printing without newlines
/// cannot make this take unbounded memory.
pub(super) async fn read_line_capped<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut truncated = false;
    let mut read_any = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(read_any.then_some((line, truncated)));
        }
        read_any = true;
        let (chunk, consumed, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(newline) => (&buf[..newline], newline + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = max.saturating_sub(line.len());
        if chunk.len() > room {
            truncated = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        reader.consume(consumed);
        if complete {
            return Ok(Some((line, truncated)));
        }
    }
}
