//! What the fuzz target `adapter_line_codec` (`fuzz/`) and the corpus
//! replay test run: one stdout line of an adapter through the harness's
//! line codec ([`parse_line`]), as the first line (the hello) and as a
//! later one, with the codec's properties checked. Not an API.

use crate::process::{AdapterLine, LineError, event_line, parse_line};

/// What one input reached, so a replay can tell a corpus that reaches
/// every kind of line from one that is all noise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lines {
    pub hellos: usize,
    pub replies: usize,
    pub events: usize,
    pub errors: usize,
}

/// Decodes each line of `data` (split at `\n`, as the harness reads
/// stdout) both as a first and as a later line; panics when a property
/// fails.
pub fn adapter_lines(data: &[u8]) -> Lines {
    let mut lines = Lines::default();
    for line in data.split(|&b| b == b'\n') {
        adapter_line(line, &mut lines);
    }
    lines
}

fn adapter_line(line: &[u8], lines: &mut Lines) {
    for expecting_hello in [true, false] {
        match parse_line(line, expecting_hello) {
            Ok(AdapterLine::Hello(_)) => {
                assert!(expecting_hello, "a hello after the first line");
                lines.hellos += 1;
            }
            Ok(AdapterLine::Reply { ok, error, .. }) => {
                assert!(!expecting_hello, "a reply as the first line");
                assert!(ok || !error.is_empty(), "a failed reply without a reason");
                lines.replies += 1;
            }
            Ok(AdapterLine::Event(event)) => {
                assert!(!expecting_hello, "an event as the first line");
                // The adapter's half of the codec writes the event back as
                // a line that reads as the same event.
                let line = event_line(&event).expect("every decoded event has a line");
                let again = parse_line(line.to_string().as_bytes(), false);
                assert!(
                    matches!(&again, Ok(AdapterLine::Event(e)) if *e == event),
                    "{event:?} -> {line} -> {again:?}"
                );
                lines.events += 1;
            }
            Err(error) => {
                check_error(&error);
                lines.errors += 1;
            }
        }
    }
}

/// A broken line gives a reason, with an excerpt of the line that is
/// bounded and printable whatever the adapter printed.
fn check_error(error: &LineError) {
    assert!(!error.to_string().is_empty());
    let excerpt = match error {
        LineError::NotJson { line, .. }
        | LineError::NeitherReplyNorEvent { line }
        | LineError::BeforeHello { line }
        | LineError::MalformedHello { line, .. }
        | LineError::IdNotInteger { line }
        | LineError::NoOk { line }
        | LineError::MalformedEvent { line, .. }
        | LineError::BadEvent { line, .. } => line,
        LineError::WrongProtocol { .. } => return,
    };
    assert!(excerpt.chars().count() <= 203, "an unbounded excerpt");
    assert!(
        !excerpt.chars().any(char::is_control),
        "an excerpt with control characters: {excerpt:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_line() {
        let hello = br#"{"event":"hello","protocol":1,"capabilities":{}}"#;
        assert_eq!(
            adapter_lines(hello),
            Lines {
                hellos: 1,
                errors: 1,
                ..Default::default()
            }
        );
        let event =
            br#"{"event":"watcher","type":"CDS","name":"c","kind":"resource_error","code":"UNAVAILABLE","message":"m"}"#;
        assert_eq!(
            adapter_lines(event),
            Lines {
                events: 1,
                errors: 1,
                ..Default::default()
            }
        );
        assert_eq!(
            adapter_lines(br#"{"id":1,"ok":false}"#),
            Lines {
                replies: 1,
                errors: 1,
                ..Default::default()
            }
        );
    }
}
