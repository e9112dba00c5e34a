//! The specifications scenarios are tagged with (`spec: [A46, A27]`): the
//! gRFCs in grpc/proposal and Envoy's incremental xDS, with where to read
//! them and the order the matrix groups its rows in. One table, so a new
//! gRFC is one line here.

/// A spec tag the reports know.
pub struct Spec {
    /// The tag as scenarios write it, e.g. `A46`.
    pub tag: &'static str,
    /// Its title, e.g. `xDS NACK Semantics Improvement`.
    pub title: &'static str,
    pub doc: Doc,
}

/// Where a spec is written.
pub enum Doc {
    /// A gRFC: its file in grpc/proposal's master branch.
    Grfc(&'static str),
    Url(&'static str),
}

const GRFC: &str = "https://github.com/grpc/proposal/blob/master/";

impl Spec {
    pub fn url(&self) -> String {
        match self.doc {
            Doc::Grfc(file) => format!("{GRFC}{file}"),
            Doc::Url(url) => url.to_string(),
        }
    }
}

/// Known specs, in the order the matrix shows their groups. The gRFC file
/// names are those in grpc/proposal's master branch.
pub const SPECS: &[Spec] = &[
    Spec {
        tag: "A27",
        title: "xDS-Based Global Load Balancing",
        doc: Doc::Grfc("A27-xds-global-load-balancing.md"),
    },
    Spec {
        tag: "A36",
        title: "xDS-Enabled Servers",
        doc: Doc::Grfc("A36-xds-for-servers.md"),
    },
    Spec {
        tag: "A46",
        title: "xDS NACK Semantics Improvement",
        doc: Doc::Grfc("A46-xds-nack-semantics-improvement.md"),
    },
    Spec {
        tag: "A47",
        title: "xDS Federation",
        doc: Doc::Grfc("A47-xds-federation.md"),
    },
    Spec {
        tag: "A53",
        title: "Option for Ignoring xDS Resource Deletion",
        doc: Doc::Grfc("A53-xds-ignore-resource-deletion.md"),
    },
    Spec {
        tag: "A57",
        title: "XdsClient Failure Mode Behavior",
        doc: Doc::Grfc("A57-xds-client-failure-mode-behavior.md"),
    },
    Spec {
        tag: "A65",
        title: "mTLS Credentials in xDS Bootstrap File",
        doc: Doc::Grfc("A65-xds-mtls-creds-in-bootstrap.md"),
    },
    Spec {
        tag: "A71",
        title: "xDS Fallback",
        doc: Doc::Grfc("A71-xds-fallback.md"),
    },
    Spec {
        tag: "A88",
        title: "xDS Data Error Handling",
        doc: Doc::Grfc("A88-xds-data-error-handling.md"),
    },
    Spec {
        tag: "delta",
        title: "Incremental (delta) xDS",
        doc: Doc::Url(
            "https://www.envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol#incremental-xds",
        ),
    },
];

/// The spec a tag names, if known (tags compare case-insensitively:
/// `a46` is A46).
pub fn spec(tag: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.tag.eq_ignore_ascii_case(tag))
}

/// Where to read a tag's spec, if known.
pub fn spec_url(tag: &str) -> Option<String> {
    spec(tag).map(Spec::url)
}

/// The group a scenario belongs to: its first spec tag (`None`: untagged,
/// e.g. a file that did not load).
pub fn group_of(spec: &[String]) -> Option<&str> {
    spec.first()
        .map(String::as_str)
        .filter(|t| !t.trim().is_empty())
}

/// Sort key of a group: known specs in [`SPECS`] order, then other tags
/// by name, then untagged rows.
pub fn group_rank(group: Option<&str>) -> (usize, String) {
    match group {
        Some(tag) => match SPECS.iter().position(|s| s.tag.eq_ignore_ascii_case(tag)) {
            Some(i) => (i, String::new()),
            None => (SPECS.len(), tag.to_string()),
        },
        None => (SPECS.len() + 1, String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grfc_urls_point_at_their_proposal() {
        for s in SPECS {
            let url = s.url();
            match s.doc {
                Doc::Grfc(file) => {
                    assert!(url.ends_with(&format!("/blob/master/{file}")), "{url}");
                    assert!(file.starts_with(&format!("{}-", s.tag)), "{file}");
                    assert!(file.ends_with(".md") && !file.contains('/'), "{file}");
                }
                Doc::Url(_) => assert_eq!(
                    url,
                    "https://www.envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol#incremental-xds"
                ),
            }
        }
        assert_eq!(
            spec_url("A27").as_deref(),
            Some("https://github.com/grpc/proposal/blob/master/A27-xds-global-load-balancing.md")
        );
        assert_eq!(spec_url("a46"), spec_url("A46"));
        assert_eq!(spec_url("A999"), None);
    }

    #[test]
    fn groups_follow_the_table_then_names_then_untagged() {
        let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(group_of(&tags(&["delta", "A46"])), Some("delta"));
        assert_eq!(group_of(&[]), None);
        let mut groups = vec![
            None,
            Some("zz"),
            Some("delta"),
            Some("A88"),
            Some("envoy"),
            Some("A27"),
            Some("A46"),
        ];
        groups.sort_by_key(|g| group_rank(*g));
        assert_eq!(
            groups,
            [
                Some("A27"),
                Some("A46"),
                Some("A88"),
                Some("delta"),
                Some("envoy"),
                Some("zz"),
                None
            ]
        );
    }
}
