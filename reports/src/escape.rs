//! Text escaping shared by the matrix renderers: XML/HTML text and
//! attributes, Markdown inline text, URL paths, and label shortening.

/// Escapes text for XML and HTML, in element content and in quoted
/// attribute values alike. Characters XML 1.0 forbids (control characters
/// other than tab, newline and carriage return; U+FFFE, U+FFFF) become
/// U+FFFD, so the output is always well-formed.
pub(crate) fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push('\u{fffd}')
            }
            c => out.push(c),
        }
    }
    out
}

/// Escapes one line of text for Markdown (table cells, list items): every
/// character with a meaning in CommonMark/GFM inline syntax or tables is
/// backslash-escaped; line breaks become spaces.
pub(crate) fn md_inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '&' | '~' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A fenced Markdown code block holding `text` as it is: the fence is
/// longer than any run of backticks in the text (CommonMark ends a fence
/// only at one at least as long), so a message cannot close it and go on
/// as Markdown; control characters other than newline and tab become
/// U+FFFD, as in [`md_inline`].
pub(crate) fn md_code_block(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    let body: String = text
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect();
    format!("{fence}\n{body}\n{fence}")
}

/// A relative URL for a file path: keeps `A-Z a-z 0-9 / . - _ ~`,
/// percent-encodes everything else (so a `:` cannot start a scheme and a
/// `#` or `?` cannot cut the path).
pub(crate) fn url_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.replace('\\', "/").bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'-' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The first non-empty line of `s`, cut to at most `max` characters,
/// preferably between words (an ellipsis marks a cut, or further lines).
pub(crate) fn short(s: &str, max: usize) -> String {
    let mut lines = s.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let more = lines.next().is_some();
    let count = first.chars().count();
    if count > max {
        let keep: String = first.chars().take(max.saturating_sub(1)).collect();
        // Cut at a word boundary when one is near the end.
        let keep = match keep.rfind(' ') {
            Some(i) if keep[i..].chars().count() <= 16 && i > 0 => &keep[..i],
            _ => keep.as_str(),
        };
        format!("{}…", keep.trim_end())
    } else if more {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_drops_invalid_characters() {
        assert_eq!(
            xml("a<b>&\"c\"'\u{1}\u{7}\n"),
            "a&lt;b&gt;&amp;&quot;c&quot;&#39;\u{fffd}\u{fffd}\n"
        );
    }

    #[test]
    fn markdown_escapes_tables_and_html() {
        assert_eq!(md_inline("a|b <x> *y*\nz"), "a\\|b \\<x\\> \\*y\\* z");
    }

    #[test]
    fn url_paths_are_percent_encoded() {
        assert_eq!(
            url_path("timelines/a b#c:d.txt"),
            "timelines/a%20b%23c%3Ad.txt"
        );
        assert_eq!(url_path("é"), "%C3%A9");
    }

    #[test]
    fn short_cuts_by_characters_not_bytes() {
        assert_eq!(short("ééééé", 3), "éé…");
        assert_eq!(short("one two three", 10), "one two…");
        assert_eq!(short("\n  one\ntwo", 10), "one …");
        assert_eq!(short("", 5), "");
    }
}
