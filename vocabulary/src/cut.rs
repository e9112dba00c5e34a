//! Cutting text to a size, with a marker saying how much was cut. Whatever
//! a client, the wire or a scenario file hands the harness ends up in
//! reports: a log line, a failure message, a source snippet. Each is cut
//! here, the same way, so no report grows with its input and a reader
//! always sees that something is missing and how much.
//!
//! And made safe to print: a client's message may carry an escape
//! sequence or a carriage return, which on a terminal would rewrite what
//! is shown (a FAIL line drawn over as a pass).

use std::borrow::Cow;

/// `text` if it is at most `max` bytes; otherwise its first bytes (cut at
/// a character boundary) and ` [... N more bytes]`. The marker comes on
/// top of `max`: the budget is for the text, the marker is short.
pub fn cut(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let end = floor_char_boundary(text, max);
    Cow::Owned(format!(
        "{} [... {} more bytes]",
        &text[..end],
        text.len() - end
    ))
}

/// Like [`cut`], but keeps the end of the text (where a log's tail or a
/// timeline's last events, the ones that explain a failure, are).
pub fn cut_keeping_end(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    Cow::Owned(format!("[... {start} bytes before] {}", &text[start..]))
}

/// The largest index `<= at` that is a character boundary.
pub fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut end = at.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// `text` with every control character but newline and tab shown as an
/// escape (`\u{1b}`), so printing it cannot move the cursor, erase or
/// recolour a terminal. Borrowed when there is none.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert!(matches!(cut("abc", 3), Cow::Borrowed("abc")));
        assert!(matches!(cut_keeping_end("abc", 3), Cow::Borrowed("abc")));
    }

    #[test]
    fn long_text_says_how_much_was_cut() {
        assert_eq!(cut("abcdef", 2), "ab [... 4 more bytes]");
        assert_eq!(cut_keeping_end("abcdef", 2), "[... 4 bytes before] ef");
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        // "é" is two bytes: a cut inside it moves before it (or after, for
        // the end-keeping cut), never through it.
        assert_eq!(cut("aé", 2), "a [... 2 more bytes]");
        assert_eq!(cut_keeping_end("éa", 2), "[... 2 bytes before] a");
    }

    #[test]
    fn printable_text_cannot_rewrite_a_terminal() {
        assert!(matches!(printable("plain\nlines\tok"), Cow::Borrowed(_)));
        assert_eq!(
            printable("FAIL\r\u{1b}[2Kpass \u{9b}x"),
            "FAIL\\u{d}\\u{1b}[2Kpass \\u{9b}x"
        );
    }
}
