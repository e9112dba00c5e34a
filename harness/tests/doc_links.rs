//! Every internal link of the book (docs/src/) and of README.md leads
//! somewhere: the file exists and, with a `#anchor`, the page has that
//! heading (as mdBook and GitHub make heading ids). Every page of the book
//! is in its SUMMARY.md, and no book page links outside the book (mdBook
//! copies only docs/src/). A test shows the checker catches a broken link
//! and a broken anchor.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `a/./b/../c` -> `a/c`, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The id mdBook (and GitHub) give a heading: its text without markup,
/// lower case, spaces as `-`, only letters, digits, `-` and `_` kept.
fn heading_id(text: &str) -> String {
    // [text](url) -> text
    let mut plain = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        plain.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(end)) if close < end => {
                plain.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            _ => {
                plain.push('[');
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    plain
        .trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// A page's lines outside code fences, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The heading ids of a page, deduplicated as mdBook does (`x`, `x-1`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (_, line) in prose_lines(text) {
        let trimmed = line.trim_start();
        if !trimmed.starts_with('#') {
            continue;
        }
        let text = trimmed.trim_start_matches('#');
        if !text.starts_with(' ') {
            continue;
        }
        let id = heading_id(text);
        let n = seen.entry(id.clone()).or_default();
        ids.insert(if *n == 0 {
            id.clone()
        } else {
            format!("{id}-{n}")
        });
        *n += 1;
    }
    ids
}

/// Inline code removed, so a `[x](y)` inside backquotes is no link.
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The link targets of a page, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in prose_lines(text) {
        let line = without_code(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            found.push((number, target.to_string()));
            rest = &after[end + 1..];
        }
    }
    found
}

/// Every broken link among `files` (paths relative to `base`); `book` is
/// the folder a book's pages must not link out of, with its SUMMARY.md.
fn broken_links(base: &Path, files: &[PathBuf], book: Option<&Path>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut anchors_of: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(base.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let at = format!("{}:{line}: {target}", file.display());
            let linked = if path.is_empty() {
                file.clone()
            } else {
                normalize(&file.parent().unwrap_or(Path::new("")).join(path))
            };
            if !base.join(&linked).exists() {
                problems.push(format!("{at}: no such file {}", linked.display()));
                continue;
            }
            if let Some(book) = book
                && file.starts_with(book)
                && !linked.starts_with(book)
            {
                problems.push(format!(
                    "{at}: links outside the book ({}), which mdBook does not copy",
                    book.display()
                ));
            }
            let Some(anchor) = anchor else { continue };
            if linked.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let ids = anchors_of.entry(linked.clone()).or_insert_with(|| {
                anchors(&std::fs::read_to_string(base.join(&linked)).unwrap_or_default())
            });
            if !ids.contains(anchor) {
                problems.push(format!(
                    "{at}: {} has no heading #{anchor}",
                    linked.display()
                ));
            }
        }
    }
    if let Some(book) = book {
        let summary = book.join("SUMMARY.md");
        let listed: BTreeSet<PathBuf> =
            links(&std::fs::read_to_string(base.join(&summary)).unwrap_or_default())
                .into_iter()
                .map(|(_, t)| normalize(&book.join(t)))
                .collect();
        for file in files {
            if file.starts_with(book) && *file != summary && !listed.contains(file) {
                problems.push(format!(
                    "{}: not in {} (mdBook would not render it)",
                    file.display(),
                    summary.display()
                ));
            }
        }
    }
    problems
}

/// The Markdown files under `dir` (relative to `base`), sorted.
fn markdown_under(base: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in
            std::fs::read_dir(base.join(&d)).unwrap_or_else(|e| panic!("{}: {e}", d.display()))
        {
            let name = entry.expect("entry").file_name();
            let path = d.join(name);
            if base.join(&path).is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_internal_link_of_the_book_and_the_readme_holds() {
    let base = root();
    let book = Path::new("docs/src");
    let mut files = markdown_under(&base, book);
    assert!(files.len() > 30, "too few pages: {files:?}");
    files.push(PathBuf::from("README.md"));
    let problems = broken_links(&base, &files, Some(book));
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_catches_a_broken_link_and_a_broken_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    std::fs::create_dir_all(base.join("src/guide")).unwrap();
    std::fs::write(
        base.join("src/SUMMARY.md"),
        "# Summary\n\n- [A](a.md)\n- [B](guide/b.md)\n",
    )
    .unwrap();
    std::fs::write(
        base.join("src/a.md"),
        "# A page\n\n## Exit codes\n\nSee [B](guide/b.md#the-end), [codes](#exit-codes),\n\
         [gone](guide/gone.md), [wrong](guide/b.md#nowhere), `[code](not/a/link.md)`,\n\
         and [out](../outside.md).\n\n```\n[fenced](not/a/link.md)\n```\n",
    )
    .unwrap();
    std::fs::write(
        base.join("src/guide/b.md"),
        "# B\n\n## The end\n\n[back](../a.md#a-page)\n",
    )
    .unwrap();
    std::fs::write(base.join("src/stray.md"), "# Not in the summary\n").unwrap();
    std::fs::write(base.join("outside.md"), "# Outside\n").unwrap();
    let book = Path::new("src");
    let files = markdown_under(base, book);
    let problems = broken_links(base, &files, Some(book)).join("\n");
    assert!(
        problems.contains("src/a.md:6: guide/gone.md: no such file"),
        "{problems}"
    );
    assert!(
        problems.contains("guide/b.md#nowhere: src/guide/b.md has no heading #nowhere"),
        "{problems}"
    );
    assert!(
        problems.contains("../outside.md: links outside the book"),
        "{problems}"
    );
    assert!(
        problems.contains("src/stray.md: not in src/SUMMARY.md"),
        "{problems}"
    );
    assert!(!problems.contains("not/a/link.md"), "{problems}");
    assert!(
        !problems.contains("#the-end")
            && !problems.contains("#exit-codes")
            && !problems.contains("#a-page"),
        "{problems}"
    );
    assert_eq!(problems.lines().count(), 4, "{problems}");
    // Headings made the way mdBook makes ids.
    assert_eq!(heading_id(" `send_response`"), "send_response");
    assert_eq!(
        heading_id(" A71, A47 and A36 [scenarios](x.md)"),
        "a71-a47-and-a36-scenarios"
    );
    let ids = anchors("# Same\n## Same\n```\n# not a heading\n```\n");
    assert_eq!(
        ids,
        BTreeSet::from(["same".to_string(), "same-1".to_string()])
    );
}
