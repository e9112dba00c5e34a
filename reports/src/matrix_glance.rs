//! The matrix at a glance, as Autobahn's grid: one row per spec group,
//! one column per client, each cell the counts of its verdicts, coloured,
//! each count a link to the table filtered to exactly those cells (the
//! filter script reads the URL hash: `#spec=A46&off=grpcio,...&hide=...`).

use std::fmt::Write as _;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

use crate::escape::xml;
use crate::matrix::Matrix;
use crate::matrix_html::{class, group_key, key};
use crate::matrix_md::{STATUSES, cell};

/// As the script's `encodeURIComponent` would write it.
fn component(text: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'!')
        .remove(b'~')
        .remove(b'*')
        .remove(b'\'')
        .remove(b'(')
        .remove(b')');
    utf8_percent_encode(text, KEEP).to_string()
}

/// The spec x client table of verdict counts (rows in the page's order).
pub(crate) fn glance(out: &mut String, m: &Matrix, order: &[usize]) {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for &r in order {
        let g = group_key(&m.rows[r]);
        match groups.last_mut() {
            Some((last, rows)) if *last == g => rows.push(r),
            _ => groups.push((g, vec![r])),
        }
    }
    out.push_str(
        "<h2>At a glance</h2>\n<table class=\"glance\" id=\"glance\">\n<thead><tr><th>spec</th>",
    );
    for client in &m.clients {
        let _ = write!(out, "<th>{}</th>", xml(&client.name));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (group, rows) in &groups {
        let _ = write!(
            out,
            "<tr><th><a href=\"#spec={}\">{}</a> <span class=\"n\">{}</span></th>",
            xml(&component(group)),
            xml(group),
            rows.len()
        );
        for (c, client) in m.clients.iter().enumerate() {
            out.push_str("<td>");
            for status in &STATUSES {
                let n = rows
                    .iter()
                    .filter(|&&r| cell(&m.rows[r].cells, c).is_some_and(|x| &x.status == status))
                    .count();
                if n == 0 {
                    continue;
                }
                let hide: Vec<&str> = STATUSES
                    .iter()
                    .filter(|s| *s != status)
                    .map(key)
                    .chain(["missing"])
                    .collect();
                let off: Vec<String> = m
                    .clients
                    .iter()
                    .enumerate()
                    .filter(|&(other, _)| other != c)
                    .map(|(_, o)| component(&o.name))
                    .collect();
                let href = format!(
                    "#hide={}&off={}&spec={}",
                    hide.join(","),
                    off.join(","),
                    component(group)
                );
                let _ = write!(
                    out,
                    "<a class=\"{}\" href=\"{}\" title=\"{n} {} of {} in {}\" data-status=\"{}\" \
                     data-client=\"{}\" data-spec=\"{}\"><span class=\"badge\">{n}</span></a>",
                    class(status),
                    xml(&href),
                    xml(status.label()),
                    xml(&client.name),
                    xml(group),
                    key(status),
                    xml(&client.name),
                    xml(group)
                );
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix_sample::sample_matrix;

    #[test]
    fn each_count_links_the_view_of_exactly_its_cells() {
        let m = sample_matrix();
        let html = crate::matrix_html(&m);
        assert!(
            html.contains("<table class=\"glance\" id=\"glance\">"),
            "{html}"
        );
        // Every count is a link whose hash hides the other verdicts and
        // clients and picks its spec group.
        let links = html.matches("data-status=").count();
        assert!(links > 0);
        assert!(
            html.contains("#hide=flaky,divergent,known,na,fail,error,missing&amp;off="),
            "{html}"
        );
    }

    #[test]
    fn hash_parts_are_encoded_as_the_script_decodes_them() {
        assert_eq!(component("grpc-js"), "grpc-js");
        assert_eq!(component("my client/2"), "my%20client%2F2");
        assert_eq!(component("(untagged)"), "(untagged)");
    }
}
