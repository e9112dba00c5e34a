//! Links from a report to files beside it: a scenario file's path, as the
//! harness read it, made relative to the directory the report is written
//! to, so the link works from `file://` and when the tree is moved as a
//! whole.

use std::path::{Component, Path, PathBuf};

use crate::escape::url_path;

/// `path` with `.` dropped and `..` applied to what precedes it. A
/// relative path keeps the `..` it cannot apply (`../a/../b` is `../b`).
fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(c),
            },
            c => out.push(c),
        }
    }
    out.iter().collect()
}

/// The path from directory `from` to `to`, both normalized and either
/// both absolute or both relative to the same directory. `None` when it
/// cannot be known: `from` climbs out of its base (`../x`: the name of
/// what it leaves is unknown), or one is absolute and the other not.
fn relative(from: &Path, to: &Path) -> Option<PathBuf> {
    if from.is_absolute() != to.is_absolute() {
        return None;
    }
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    if from[common..].contains(&Component::ParentDir) {
        return None;
    }
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to[common..] {
        out.push(c);
    }
    Some(out)
}

/// The href of scenario file `source` from a page in `report_dir`:
/// relative paths are taken as relative to `cwd` (the working directory
/// the harness read them from); without a way to relate the two, the path
/// as given. Percent-encoded for an `href`.
pub fn source_href(source: &str, report_dir: &Path, cwd: Option<&Path>) -> String {
    let resolve = |p: &Path| {
        if p.is_absolute() {
            Some(normalize(p))
        } else {
            cwd.map(|cwd| normalize(&cwd.join(p)))
        }
    };
    let source_path = Path::new(source);
    let rel = match (resolve(source_path), resolve(report_dir)) {
        (Some(to), Some(from)) => relative(&from, &to),
        // Both relative to the same unknown directory still relate.
        _ => relative(&normalize(report_dir), &normalize(source_path)),
    };
    match rel {
        Some(rel) => url_path(&rel.to_string_lossy()),
        None => url_path(source),
    }
}

/// Where a copy of scenario file `source` goes inside a report folder:
/// `scenarios/` and its path under its last `scenarios` folder (as the
/// harness names scenarios: `scenarios/a46/x.yaml` -> `scenarios/a46/x.yaml`,
/// `/repo/conformance/scenarios/y.yaml` -> `scenarios/y.yaml`), else its
/// file name. Only plain names: nothing climbs out of the folder.
pub fn scenario_copy_path(source: &str) -> PathBuf {
    let names: Vec<&std::ffi::OsStr> = Path::new(source)
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let under = match names.iter().rposition(|n| *n == "scenarios") {
        Some(i) if i + 1 < names.len() => &names[i + 1..],
        _ => &names[names.len().saturating_sub(1)..],
    };
    let mut path = PathBuf::from("scenarios");
    path.extend(under);
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_copy_lands_inside_the_report_folder() {
        for (source, copy) in [
            ("scenarios/a46/x.yaml", "scenarios/a46/x.yaml"),
            ("/repo/conformance/scenarios/y.yaml", "scenarios/y.yaml"),
            ("../../elsewhere/z.yaml", "scenarios/z.yaml"),
            (
                "scenarios/../../scenarios/a/../w.yaml",
                "scenarios/a/w.yaml",
            ),
        ] {
            assert_eq!(scenario_copy_path(source), PathBuf::from(copy), "{source}");
        }
    }

    #[test]
    fn absolute_sources_are_linked_from_the_report_directory() {
        let cwd = Some(Path::new("/elsewhere"));
        let dir = Path::new("/repo/reports-out/matrix");
        assert_eq!(
            source_href("/repo/scenarios/a46/x.yaml", dir, cwd),
            "../../scenarios/a46/x.yaml"
        );
        assert_eq!(
            source_href("/repo/reports-out/matrix/s.yaml", dir, cwd),
            "s.yaml"
        );
        assert_eq!(
            source_href("/other/a b.yaml", dir, cwd),
            "../../../other/a%20b.yaml"
        );
        // `.` and `..` in either path.
        assert_eq!(
            source_href(
                "/repo/./harness/../scenarios/x.yaml",
                Path::new("/repo/reports-out/./matrix/../matrix"),
                cwd
            ),
            "../../scenarios/x.yaml"
        );
    }

    #[test]
    fn relative_sources_are_resolved_against_the_working_directory() {
        let cwd = Some(Path::new("/repo"));
        assert_eq!(
            source_href("scenarios/a27/y.yaml", Path::new("reports-out/matrix"), cwd),
            "../../scenarios/a27/y.yaml"
        );
        assert_eq!(
            source_href("scenarios/a27/y.yaml", Path::new("/tmp/out"), cwd),
            "../../repo/scenarios/a27/y.yaml"
        );
        assert_eq!(
            source_href("../up/z.yaml", Path::new("/repo/out"), cwd),
            "../../up/z.yaml"
        );
    }

    #[test]
    fn without_a_working_directory() {
        // Both relative: still related.
        assert_eq!(
            source_href("scenarios/x.yaml", Path::new("reports-out/matrix"), None),
            "../../scenarios/x.yaml"
        );
        // One absolute, or a directory climbing out of the unknown one:
        // the path as given.
        assert_eq!(
            source_href("scenarios/x.yaml", Path::new("/abs/out"), None),
            "scenarios/x.yaml"
        );
        assert_eq!(
            source_href("scenarios/x.yaml", Path::new("../out"), None),
            "scenarios/x.yaml"
        );
        assert_eq!(
            source_href("/abs/x:y.yaml", Path::new("out"), None),
            "/abs/x%3Ay.yaml"
        );
    }
}
