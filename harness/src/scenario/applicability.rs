//! Which clients a scenario's rule binds (`applies_to:`).
//!
//! A rule of a gRFC binds gRPC's XdsClient; Envoy follows its own API
//! docs, and a Kuma zone the MADR. A run of a scenario on a client its rule
//! does not bind is not a failure of that client, nor a known failure to
//! carry in its expectations file: it is n/a, with the scenario's reason
//! (the spec sentence that says whom the rule is for). Only what a client
//! *is* decides it (its capabilities say whether it is a gRPC client or a
//! proxy), never its name: a new adapter is judged by the same rule.

use xds_client_under_test::Capabilities;

use crate::check::{Problem, Spanned, keyword};

use super::file::AppliesToSpec;

/// The clients a rule binds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clients {
    /// Every xDS client (the xDS protocol's own rules): the default.
    #[default]
    Any,
    /// gRPC clients: those that start from a gRPC bootstrap, not a proxy.
    Grpc,
    /// Proxies (Envoy): served Listeners are sockets.
    Proxy,
}

/// The file's keywords, in the order errors list them.
pub const CLIENTS: &[(&str, Clients)] = &[
    ("any", Clients::Any),
    ("grpc", Clients::Grpc),
    ("proxy", Clients::Proxy),
];

impl Clients {
    /// Whether a client with `caps` is one of these.
    pub fn include(self, caps: &Capabilities) -> bool {
        match self {
            Clients::Any => true,
            Clients::Grpc => caps.grpc_bootstrap && !caps.proxy,
            Clients::Proxy => caps.proxy,
        }
    }

    /// What these clients are called in a verdict.
    pub fn called(self) -> &'static str {
        match self {
            Clients::Any => "every xDS client",
            Clients::Grpc => "gRPC clients",
            Clients::Proxy => "proxies",
        }
    }
}

/// A scenario's `applies_to`, checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applicability {
    pub clients: Clients,
    /// Why the rule binds only those: the spec's words, quoted.
    pub because: String,
}

pub(crate) fn clients_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(CLIENTS)
}

/// What the matrix groups a run the rule does not bind under (as it groups
/// the capabilities a client lacks).
pub fn not_bound_label(clients: Clients) -> String {
    format!("a rule for {} only", clients.called())
}

impl Applicability {
    pub(crate) fn compile(spec: &Spanned<AppliesToSpec>) -> Result<Applicability, Problem> {
        let clients = keyword(&spec.value.clients, "applies_to clients", CLIENTS)?;
        let because = spec.value.because.trim();
        if clients != Clients::Any && because.is_empty() {
            return Err(Problem::at(
                spec,
                "applies_to: `because` must say why the rule binds only these clients: \
                 quote the spec sentence (e.g. \"gRFC A57 describes gRPC's XdsClient\")",
            ));
        }
        Ok(Applicability {
            clients,
            because: because.to_string(),
        })
    }

    /// Why a run on a client with `caps` is n/a, if the rule does not bind
    /// it.
    pub fn not_bound(&self, caps: &Capabilities) -> Option<String> {
        (!self.clients.include(caps)).then(|| {
            format!(
                "the rule binds {} only, and this client is not one: {}",
                self.clients.called(),
                self.because
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(grpc_bootstrap: bool, proxy: bool) -> Capabilities {
        Capabilities {
            grpc_bootstrap,
            proxy,
            ..Capabilities::default()
        }
    }

    #[test]
    fn a_grpc_rule_binds_grpc_clients_and_not_a_proxy_or_another_client() {
        let rule = Applicability {
            clients: Clients::Grpc,
            because: "gRFC A57 describes gRPC's XdsClient".into(),
        };
        assert_eq!(rule.not_bound(&caps(true, false)), None);
        let why = rule.not_bound(&caps(false, true)).unwrap();
        assert!(why.contains("gRPC clients only"), "{why}");
        assert!(why.contains("gRFC A57 describes"), "{why}");
        // A client that neither takes a gRPC bootstrap nor proxies (a
        // control plane's own xDS client) is no gRPC client either.
        assert!(rule.not_bound(&caps(false, false)).is_some());
    }

    #[test]
    fn a_proxy_rule_binds_proxies_and_any_binds_everyone() {
        let proxy = Applicability {
            clients: Clients::Proxy,
            because: "x".into(),
        };
        assert!(proxy.not_bound(&caps(true, false)).is_some());
        assert_eq!(proxy.not_bound(&caps(false, true)), None);
        let any = Applicability::default();
        for c in [caps(true, false), caps(false, true), caps(false, false)] {
            assert_eq!(any.not_bound(&c), None);
        }
    }
}
