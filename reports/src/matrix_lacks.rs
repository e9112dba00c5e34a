//! The matrix page's n/a grouped by missing capability: what each client
//! would need to run more of the suite. A cell that lacks several things
//! counts under each; the cells that lack one thing alone are what that
//! one capability would make applicable, the number an adapter's author
//! wants first. The page's script recounts both as the filters change.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::escape::xml;
use crate::matrix::{CellStatus, Matrix};

/// One missing capability and the n/a cells that lack it.
pub(crate) struct Lack {
    pub what: String,
    /// Cells per client.
    pub per_client: Vec<usize>,
    /// Cells that lack nothing else.
    pub alone: usize,
}

/// The capabilities n/a cells lack, most cells first (ties by name), and
/// each one's index in that list by name.
pub(crate) fn lacks(m: &Matrix) -> (Vec<Lack>, HashMap<String, usize>) {
    let mut by_name: HashMap<&str, Lack> = HashMap::new();
    for row in &m.rows {
        for (c, x) in row.cells.iter().enumerate().take(m.clients.len()) {
            if x.status != CellStatus::NotApplicable {
                continue;
            }
            for what in &x.missing {
                let lack = by_name.entry(what).or_insert_with(|| Lack {
                    what: what.clone(),
                    per_client: vec![0; m.clients.len()],
                    alone: 0,
                });
                lack.per_client[c] += 1;
                lack.alone += usize::from(x.missing.len() == 1);
            }
        }
    }
    let mut list: Vec<Lack> = by_name.into_values().collect();
    list.sort_by(|a, b| {
        let total = |l: &Lack| l.per_client.iter().sum::<usize>();
        total(b).cmp(&total(a)).then_with(|| a.what.cmp(&b.what))
    });
    let index = list
        .iter()
        .enumerate()
        .map(|(i, l)| (l.what.clone(), i))
        .collect();
    (list, index)
}

/// ` data-lack="0 3"`: the indices of what an n/a cell lacks, for the
/// script's counts; nothing for any other cell.
pub(crate) fn cell_attribute(missing: &[String], index: &HashMap<String, usize>) -> String {
    let indices: Vec<String> = missing
        .iter()
        .filter_map(|what| index.get(what))
        .map(usize::to_string)
        .collect();
    if indices.is_empty() {
        String::new()
    } else {
        format!(" data-lack=\"{}\"", indices.join(" "))
    }
}

/// The list under the table.
pub(crate) fn lacks_list(out: &mut String, m: &Matrix, lacks: &[Lack]) {
    out.push_str(
        "<h2 id=\"lacks\">n/a by missing capability</h2>\n<p class=\"sub\">A cell that lacks \
         several counts under each; <i>alone</i>: the cells that lack only this, which it \
         would make applicable.</p>\n<ol class=\"notes lacks\">\n",
    );
    for (k, lack) in lacks.iter().enumerate() {
        let total: usize = lack.per_client.iter().sum();
        let by: Vec<String> = m
            .clients
            .iter()
            .zip(&lack.per_client)
            .filter(|(_, n)| **n > 0)
            .map(|(client, n)| format!("{} {n}", xml(&client.name)))
            .collect();
        let _ = writeln!(
            out,
            "<li id=\"lack{k}\" class=\"s-na\" data-lack=\"{k}\" data-count=\"{total}\" \
             data-alone=\"{}\"><span class=\"badge\">n/a</span> <span class=\"text\">lacks {}</span>\
             <span class=\"count\">× {total}</span><span class=\"alone\">{} alone</span>\
             <span class=\"by\">{}</span></li>",
            lack.alone,
            xml(&lack.what),
            lack.alone,
            by.join(" · ")
        );
    }
    out.push_str("</ol>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix_sample::sample_matrix;

    #[test]
    fn each_capability_counts_its_cells_and_those_it_alone_would_open() {
        let mut m = sample_matrix();
        let template = m.rows[0].cells[0].clone();
        let na = |missing: &[&str]| {
            let mut x = template.clone();
            x.status = CellStatus::NotApplicable;
            x.missing = missing.iter().map(|s| s.to_string()).collect();
            x
        };
        let cells = [na(&["CSDS"]), na(&["CSDS", "a resource watch API"])];
        m.rows[0].cells = cells.to_vec();
        m.rows[1].cells = vec![na(&["a resource watch API"]), na(&["CSDS"])];
        m.rows.truncate(2);
        let (list, index) = lacks(&m);
        let shown: Vec<_> = list
            .iter()
            .map(|l| (l.what.as_str(), l.per_client.clone(), l.alone))
            .collect();
        assert_eq!(
            shown,
            [
                ("CSDS", vec![1, 2], 2),
                ("a resource watch API", vec![1, 1], 1),
            ]
        );
        assert_eq!(
            cell_attribute(&m.rows[0].cells[1].missing, &index),
            " data-lack=\"0 1\""
        );
        assert_eq!(cell_attribute(&[], &index), "");
        let mut out = String::new();
        lacks_list(&mut out, &m, &list);
        assert!(out.contains(
            "<span class=\"text\">lacks CSDS</span><span class=\"count\">× 3</span>\
             <span class=\"alone\">2 alone</span><span class=\"by\">reference 1 · grpc-js 2</span>"
        ));
        crate::matrix_sample::well_formed(&format!("<div>{out}</div>")).unwrap();
    }
}
