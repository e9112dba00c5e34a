//! The xDS bootstrap (gRFC A27, with A47 authorities and A71 server lists):
//! which servers to talk to, as whom, and how to name listener resources.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3 as core;
use serde_json::{Map, Value};
use xds_vocabulary::AdsProtocol;

/// The server feature that makes deletions of cached resources be ignored (gRFC A53).
pub const IGNORE_RESOURCE_DELETION: &str = "ignore_resource_deletion";
/// gRFC A88: on a data error, drop the cached resource (default: keep it).
pub const FAIL_ON_DATA_ERRORS: &str = "fail_on_data_errors";
/// gRFC A88 (C-core's spelling): the does-not-exist timer is 30 s and
/// reports a transient error.
pub const RESOURCE_TIMER_IS_TRANSIENT_ERROR: &str = "resource_timer_is_transient_error";

#[derive(Clone, Debug, PartialEq)]
pub struct Bootstrap {
    /// Top-level servers, highest priority first.
    pub xds_servers: Vec<XdsServerConfig>,
    pub node: Option<NodeConfig>,
    pub authorities: BTreeMap<String, AuthorityConfig>,
    /// `client_default_listener_resource_name_template`, default `%s`.
    pub client_default_listener_resource_name_template: String,
    /// `server_listener_resource_name_template` (gRFC A36): the Listener
    /// an xDS-enabled server on `%s` (its `ip:port`) watches. Without it
    /// no xDS-enabled server can start.
    pub server_listener_resource_name_template: Option<String>,
    /// The instance names of `certificate_providers` (gRFC A29): the only
    /// ones a Cluster's or Listener's TLS context may name.
    pub certificate_providers: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct XdsServerConfig {
    pub server_uri: String,
    /// The first `channel_creds` entry of a type we support.
    pub channel_creds: ChannelCreds,
    pub server_features: Vec<String>,
    /// The ADS variant to speak to it: `"api_type": "DELTA_GRPC"` for
    /// incremental xDS, `"GRPC"` (the default) for state of the world.
    /// gRPC has no standard key; this one is Envoy's `ApiConfigSource`
    /// enum, so the same choice maps onto an Envoy bootstrap unchanged.
    pub protocol: AdsProtocol,
}

/// Channel credentials: how the channel to an xDS server is secured.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChannelCreds {
    /// `{"type": "insecure"}`: plaintext.
    Insecure,
    /// `{"type": "tls", "config": {...}}` (gRFC A65).
    Tls(TlsCreds),
}

/// gRFC A65's `tls` channel credentials. The files are read on every
/// connection attempt, so a rotated certificate is used from the next
/// connection on (what `refresh_interval` is for in C-core's file watcher).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TlsCreds {
    /// Roots the server's certificate must chain to; `None`: the system's
    /// roots, which the reference client does not have (a connection
    /// attempt then fails; see `transport::tls`).
    pub ca_certificate_file: Option<PathBuf>,
    /// `certificate_file` and `private_key_file`: the identity presented
    /// for mTLS; `None`: TLS with server authentication only.
    pub identity: Option<(PathBuf, PathBuf)>,
    /// `refresh_interval` (default 10 minutes); validated, not needed.
    pub refresh_interval: Duration,
}

/// A65's default `refresh_interval`.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(600);

#[derive(Clone, Debug, PartialEq, Default)]
pub struct AuthorityConfig {
    /// Default `xdstp://<authority>/envoy.config.listener.v3.Listener/%s`.
    pub client_listener_resource_name_template: Option<String>,
    /// Empty means: use the top-level servers.
    pub xds_servers: Vec<XdsServerConfig>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct NodeConfig {
    pub id: String,
    pub cluster: String,
    pub locality: Option<(String, String, String)>,
    pub metadata: Option<Map<String, Value>>,
}

impl XdsServerConfig {
    pub fn has_feature(&self, feature: &str) -> bool {
        self.server_features.iter().any(|f| f == feature)
    }

    pub fn ignore_resource_deletion(&self) -> bool {
        self.has_feature(IGNORE_RESOURCE_DELETION)
    }

    pub fn fail_on_data_errors(&self) -> bool {
        self.has_feature(FAIL_ON_DATA_ERRORS)
    }

    pub fn resource_timer_is_transient_error(&self) -> bool {
        self.has_feature(RESOURCE_TIMER_IS_TRANSIENT_ERROR)
    }
}

/// Every problem found in a bootstrap document, gRPC style:
/// `errors validating bootstrap: [field:xds_servers[0].server_uri error:...]`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct BootstrapError {
    pub errors: Vec<(String, String)>,
}

impl fmt::Display for BootstrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("errors validating bootstrap: [")?;
        for (i, (field, message)) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            if field.is_empty() {
                write!(f, "{message}")?;
            } else {
                write!(f, "field:{field} error:{message}")?;
            }
        }
        f.write_str("]")
    }
}

impl Bootstrap {
    /// Parses a bootstrap JSON document.
    pub fn from_json(text: &str) -> Result<Bootstrap, BootstrapError> {
        let value: Value = serde_json::from_str(text).map_err(|e| BootstrapError {
            errors: vec![(String::new(), format!("JSON parse error: {e}"))],
        })?;
        let mut errors = Vec::new();
        let bootstrap = parse(&value, &mut errors);
        if errors.is_empty() {
            Ok(bootstrap)
        } else {
            Err(BootstrapError { errors })
        }
    }

    /// The bootstrap with only the first server of each list (the
    /// top-level `xds_servers` and each authority's): what a client reads
    /// with gRFC A71's fallback turned off ("only one xDS server will be
    /// read from the bootstrap file", see [`crate::environment`]).
    pub fn first_server_only(mut self) -> Bootstrap {
        self.xds_servers.truncate(1);
        for authority in self.authorities.values_mut() {
            authority.xds_servers.truncate(1);
        }
        self
    }

    /// The servers of `authority` (empty = old-style names), in priority order.
    pub fn servers_for_authority(&self, authority: Option<&str>) -> &[XdsServerConfig] {
        match authority.and_then(|a| self.authorities.get(a)) {
            Some(a) if !a.xds_servers.is_empty() => &a.xds_servers,
            _ => &self.xds_servers,
        }
    }

    /// The node, as sent in the first DiscoveryRequest of a stream.
    pub fn node_proto(&self, user_agent_name: &str, user_agent_version: &str) -> core::Node {
        let mut node = core::Node {
            user_agent_name: user_agent_name.to_string(),
            user_agent_version_type: Some(core::node::UserAgentVersionType::UserAgentVersion(
                user_agent_version.to_string(),
            )),
            // What gRPC clients claim (C-core's PopulateNode, grpc-java's
            // CLIENT_FEATURE_*): no overprovisioning factor in EDS, and
            // Resource-wrapped entries in SotW responses.
            client_features: vec![
                "envoy.lb.does_not_support_overprovisioning".to_string(),
                "xds.config.resource-in-sotw".to_string(),
            ],
            ..Default::default()
        };
        if let Some(n) = &self.node {
            node.id = n.id.clone();
            node.cluster = n.cluster.clone();
            node.locality = n
                .locality
                .as_ref()
                .map(|(region, zone, sub_zone)| core::Locality {
                    region: region.clone(),
                    zone: zone.clone(),
                    sub_zone: sub_zone.clone(),
                });
            node.metadata = n.metadata.as_ref().map(json_to_struct);
        }
        node
    }

    pub fn node_id(&self) -> &str {
        self.node.as_ref().map(|n| n.id.as_str()).unwrap_or("")
    }
}

type Errors = Vec<(String, String)>;

fn parse(value: &Value, errors: &mut Errors) -> Bootstrap {
    let mut bootstrap = Bootstrap {
        xds_servers: Vec::new(),
        node: None,
        authorities: BTreeMap::new(),
        client_default_listener_resource_name_template: "%s".to_string(),
        server_listener_resource_name_template: None,
        certificate_providers: BTreeSet::new(),
    };
    let Some(obj) = value.as_object() else {
        errors.push((String::new(), "is not a JSON object".to_string()));
        return bootstrap;
    };
    match obj.get("xds_servers") {
        Some(v) => bootstrap.xds_servers = parse_servers(v, "xds_servers", errors),
        None => errors.push(("xds_servers".into(), "field not present".into())),
    }
    if bootstrap.xds_servers.is_empty() && obj.get("xds_servers").is_some_and(Value::is_array) {
        errors.push(("xds_servers".into(), "must be non-empty".into()));
    }
    if let Some(v) = obj.get("node") {
        bootstrap.node = parse_node(v, errors);
    }
    if let Some(v) = obj.get("client_default_listener_resource_name_template") {
        match v.as_str() {
            Some(s) => bootstrap.client_default_listener_resource_name_template = s.to_string(),
            None => errors.push((
                "client_default_listener_resource_name_template".into(),
                "is not a string".into(),
            )),
        }
    }
    if let Some(v) = obj.get("server_listener_resource_name_template") {
        match v.as_str() {
            Some(s) => bootstrap.server_listener_resource_name_template = Some(s.to_string()),
            None => errors.push((
                "server_listener_resource_name_template".into(),
                "is not a string".into(),
            )),
        }
    }
    if let Some(v) = obj.get("certificate_providers") {
        // Only the names matter here: validating each plugin's config is
        // the job of whoever would make the certificates.
        match v.as_object() {
            Some(map) => bootstrap.certificate_providers = map.keys().cloned().collect(),
            None => errors.push(("certificate_providers".into(), "is not an object".into())),
        }
    }
    if let Some(v) = obj.get("authorities") {
        match v.as_object() {
            Some(map) => {
                for (name, a) in map {
                    let field = format!("authorities[\"{name}\"]");
                    let Some(a) = a.as_object() else {
                        errors.push((field, "is not an object".into()));
                        continue;
                    };
                    let mut authority = AuthorityConfig::default();
                    if let Some(t) = a.get("client_listener_resource_name_template") {
                        match t.as_str() {
                            Some(s) if s.starts_with("xdstp://") || s.is_empty() => {
                                authority.client_listener_resource_name_template =
                                    Some(s.to_string())
                            }
                            Some(_) => errors.push((
                                format!("{field}.client_listener_resource_name_template"),
                                "must start with \"xdstp://\"".into(),
                            )),
                            None => errors.push((
                                format!("{field}.client_listener_resource_name_template"),
                                "is not a string".into(),
                            )),
                        }
                    }
                    if let Some(s) = a.get("xds_servers") {
                        authority.xds_servers =
                            parse_servers(s, &format!("{field}.xds_servers"), errors);
                    }
                    bootstrap.authorities.insert(name.clone(), authority);
                }
            }
            None => errors.push(("authorities".into(), "is not an object".into())),
        }
    }
    bootstrap
}

fn parse_servers(value: &Value, field: &str, errors: &mut Errors) -> Vec<XdsServerConfig> {
    let Some(list) = value.as_array() else {
        errors.push((field.to_string(), "is not an array".into()));
        return Vec::new();
    };
    let mut servers = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let field = format!("{field}[{i}]");
        let Some(s) = s.as_object() else {
            errors.push((field, "is not an object".into()));
            continue;
        };
        let server_uri = match s.get("server_uri").map(Value::as_str) {
            Some(Some(uri)) if !uri.is_empty() => uri.to_string(),
            Some(Some(_)) => {
                errors.push((format!("{field}.server_uri"), "must be non-empty".into()));
                String::new()
            }
            Some(None) => {
                errors.push((format!("{field}.server_uri"), "is not a string".into()));
                String::new()
            }
            None => {
                errors.push((format!("{field}.server_uri"), "field not present".into()));
                String::new()
            }
        };
        let channel_creds = parse_channel_creds(s.get("channel_creds"), &field, errors);
        let mut server_features = Vec::new();
        match s.get("server_features") {
            None => {}
            Some(Value::Array(features)) => {
                for (j, f) in features.iter().enumerate() {
                    match f.as_str() {
                        Some(f) => server_features.push(f.to_string()),
                        None => errors.push((
                            format!("{field}.server_features[{j}]"),
                            "is not a string".into(),
                        )),
                    }
                }
            }
            Some(_) => errors.push((format!("{field}.server_features"), "is not an array".into())),
        }
        let protocol = match s.get("api_type") {
            None => AdsProtocol::Sotw,
            Some(api_type) => match api_type.as_str().and_then(AdsProtocol::from_api_type) {
                Some(protocol) => protocol,
                None => {
                    errors.push((
                        format!("{field}.api_type"),
                        "must be \"GRPC\" or \"DELTA_GRPC\"".into(),
                    ));
                    AdsProtocol::Sotw
                }
            },
        };
        servers.push(XdsServerConfig {
            server_uri,
            channel_creds,
            server_features,
            protocol,
        });
    }
    servers
}

/// `channel_creds`, as C-core reads it: the first entry of a supported
/// type is used, and every supported entry's `config` is validated.
/// Entries of other types are skipped (gRFC A27). `None` only with errors.
fn parse_channel_creds(value: Option<&Value>, field: &str, errors: &mut Errors) -> ChannelCreds {
    let field = format!("{field}.channel_creds");
    let creds = match value {
        None => {
            errors.push((field, "field not present".into()));
            return ChannelCreds::Insecure;
        }
        Some(Value::Array(creds)) => creds,
        Some(_) => {
            errors.push((field, "is not an array".into()));
            return ChannelCreds::Insecure;
        }
    };
    let mut chosen = None;
    for (j, c) in creds.iter().enumerate() {
        let entry = format!("{field}[{j}]");
        let Some(t) = c.get("type").and_then(Value::as_str) else {
            errors.push((format!("{entry}.type"), "field not present".into()));
            continue;
        };
        let config = match c.get("config") {
            None => None,
            Some(Value::Object(config)) => Some(config),
            Some(_) => {
                errors.push((format!("{entry}.config"), "is not an object".into()));
                continue;
            }
        };
        let parsed = match t {
            "insecure" => ChannelCreds::Insecure,
            "tls" => {
                ChannelCreds::Tls(parse_tls_config(config, &format!("{entry}.config"), errors))
            }
            _ => continue,
        };
        chosen.get_or_insert(parsed);
    }
    chosen.unwrap_or_else(|| {
        errors.push((field, "no known creds type found".into()));
        ChannelCreds::Insecure
    })
}

/// A65's `tls` config. Every field is optional; the certificate and the
/// key go together.
fn parse_tls_config(
    config: Option<&Map<String, Value>>,
    field: &str,
    errors: &mut Errors,
) -> TlsCreds {
    let empty = Map::new();
    let config = config.unwrap_or(&empty);
    let path = |key: &str, errors: &mut Errors| match config.get(key) {
        None => None,
        Some(Value::String(s)) => Some(PathBuf::from(s)),
        Some(_) => {
            errors.push((format!("{field}.{key}"), "is not a string".into()));
            None
        }
    };
    let ca_certificate_file = path("ca_certificate_file", errors);
    let certificate_file = path("certificate_file", errors);
    let private_key_file = path("private_key_file", errors);
    if config.contains_key("certificate_file") != config.contains_key("private_key_file") {
        errors.push((
            field.to_string(),
            "fields \"certificate_file\" and \"private_key_file\" must be both set or both unset"
                .into(),
        ));
    }
    let refresh_interval = match config.get("refresh_interval") {
        None => DEFAULT_REFRESH_INTERVAL,
        Some(Value::String(s)) => json_duration(s).unwrap_or_else(|| {
            errors.push((
                format!("{field}.refresh_interval"),
                "is not a JSON duration (e.g. \"600s\")".into(),
            ));
            DEFAULT_REFRESH_INTERVAL
        }),
        Some(_) => {
            errors.push((
                format!("{field}.refresh_interval"),
                "is not a string".into(),
            ));
            DEFAULT_REFRESH_INTERVAL
        }
    };
    TlsCreds {
        ca_certificate_file,
        identity: certificate_file.zip(private_key_file),
        refresh_interval,
    }
}

/// A `google.protobuf.Duration` in proto3 JSON: seconds with up to nine
/// fractional digits and an `s` suffix (`"600s"`, `"1.5s"`).
fn json_duration(text: &str) -> Option<Duration> {
    let number = text.strip_suffix('s')?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || fraction.len() > 9 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds: u64 = whole.parse().ok()?;
    let nanos: u32 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<9}").parse().ok()?
    };
    Some(Duration::new(seconds, nanos))
}

fn parse_node(value: &Value, errors: &mut Errors) -> Option<NodeConfig> {
    let Some(obj) = value.as_object() else {
        errors.push(("node".into(), "is not an object".into()));
        return None;
    };
    let mut node = NodeConfig::default();
    let string_field = |key: &str, errors: &mut Errors| -> String {
        match obj.get(key) {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                errors.push((format!("node.{key}"), "is not a string".into()));
                String::new()
            }
        }
    };
    node.id = string_field("id", errors);
    node.cluster = string_field("cluster", errors);
    if let Some(l) = obj.get("locality") {
        match l.as_object() {
            Some(l) => {
                let get = |k: &str| l.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                node.locality = Some((get("region"), get("zone"), get("sub_zone")));
            }
            None => errors.push(("node.locality".into(), "is not an object".into())),
        }
    }
    if let Some(m) = obj.get("metadata") {
        match m.as_object() {
            Some(m) => node.metadata = Some(m.clone()),
            None => errors.push(("node.metadata".into(), "is not an object".into())),
        }
    }
    Some(node)
}

fn json_to_struct(map: &Map<String, Value>) -> envoy_types::pb::google::protobuf::Struct {
    envoy_types::pb::google::protobuf::Struct {
        fields: map
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect(),
    }
}

fn json_to_value(v: &Value) -> envoy_types::pb::google::protobuf::Value {
    use envoy_types::pb::google::protobuf::{ListValue, NullValue, value::Kind};
    let kind = match v {
        Value::Null => Kind::NullValue(NullValue::NullValue as i32),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(a) => Kind::ListValue(ListValue {
            values: a.iter().map(json_to_value).collect(),
        }),
        Value::Object(o) => Kind::StructValue(json_to_struct(o)),
    };
    envoy_types::pb::google::protobuf::Value { kind: Some(kind) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{"xds_servers":[{"server_uri":"127.0.0.1:5000","channel_creds":[{"type":"insecure"}],"server_features":["xds_v3"]}],"node":{"id":"n1","cluster":"c","locality":{"region":"r1","zone":"z1"}}}"#;

    #[test]
    fn parses_minimal_grpc_bootstrap() {
        let b = Bootstrap::from_json(MINIMAL).unwrap();
        assert_eq!(b.xds_servers.len(), 1);
        assert_eq!(b.xds_servers[0].server_uri, "127.0.0.1:5000");
        assert_eq!(b.xds_servers[0].channel_creds, ChannelCreds::Insecure);
        assert_eq!(b.node_id(), "n1");
        assert_eq!(b.client_default_listener_resource_name_template, "%s");
        assert_eq!(b.server_listener_resource_name_template, None);
        let node = b.node_proto("ua", "1");
        assert_eq!(node.locality.unwrap().zone, "z1");
        assert_eq!(
            node.client_features,
            vec![
                "envoy.lb.does_not_support_overprovisioning",
                "xds.config.resource-in-sotw"
            ]
        );
    }

    #[test]
    fn first_server_only_keeps_one_server_per_list() {
        let two = r#"[{"server_uri":"a:1","channel_creds":[{"type":"insecure"}]},{"server_uri":"b:1","channel_creds":[{"type":"insecure"}]}]"#;
        let json = format!(
            r#"{{"xds_servers":{two},"authorities":{{"x":{{"xds_servers":{two}}},"y":{{}}}},"node":{{"id":"n1"}}}}"#
        );
        let b = Bootstrap::from_json(&json).unwrap();
        assert_eq!(b.servers_for_authority(Some("x")).len(), 2);
        let one = b.first_server_only();
        let uris = |servers: &[XdsServerConfig]| {
            servers
                .iter()
                .map(|s| s.server_uri.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(uris(&one.xds_servers), ["a:1"]);
        assert_eq!(uris(one.servers_for_authority(Some("x"))), ["a:1"]);
        assert_eq!(uris(one.servers_for_authority(Some("y"))), ["a:1"]);
    }

    #[test]
    fn certificate_provider_instances_are_named() {
        assert!(
            Bootstrap::from_json(MINIMAL)
                .unwrap()
                .certificate_providers
                .is_empty()
        );
        let with = MINIMAL.replace(
            r#""node""#,
            r#""certificate_providers":{"roots":{"plugin_name":"file_watcher"},"id":{}},"node""#,
        );
        let names: Vec<String> = Bootstrap::from_json(&with)
            .unwrap()
            .certificate_providers
            .into_iter()
            .collect();
        assert_eq!(names, ["id", "roots"]);
        let bad = MINIMAL.replace(r#""node""#, r#""certificate_providers":[],"node""#);
        assert_eq!(
            Bootstrap::from_json(&bad).unwrap_err().errors,
            vec![("certificate_providers".into(), "is not an object".into())]
        );
    }

    #[test]
    fn api_type_chooses_the_protocol() {
        let b = Bootstrap::from_json(MINIMAL).unwrap();
        assert_eq!(b.xds_servers[0].protocol, AdsProtocol::Sotw);
        let delta = MINIMAL.replace(
            r#""server_features""#,
            r#""api_type":"DELTA_GRPC","server_features""#,
        );
        let b = Bootstrap::from_json(&delta).unwrap();
        assert_eq!(b.xds_servers[0].protocol, AdsProtocol::Delta);
        let bad = MINIMAL.replace(
            r#""server_features""#,
            r#""api_type":"REST","server_features""#,
        );
        let err = Bootstrap::from_json(&bad).unwrap_err().to_string();
        assert!(
            err.contains("field:xds_servers[0].api_type error:must be"),
            "{err}"
        );
    }

    #[test]
    fn tls_creds_in_a65_form() {
        let tls = MINIMAL.replace(
            r#"[{"type":"insecure"}]"#,
            r#"[{"type":"google_default"},{"type":"tls","config":{"ca_certificate_file":"/c/ca.pem","certificate_file":"/c/client.pem","private_key_file":"/c/client.key","refresh_interval":"1.5s"}},{"type":"insecure"}]"#,
        );
        let b = Bootstrap::from_json(&tls).unwrap();
        // The first supported type wins; google_default is skipped (A27).
        assert_eq!(
            b.xds_servers[0].channel_creds,
            ChannelCreds::Tls(TlsCreds {
                ca_certificate_file: Some("/c/ca.pem".into()),
                identity: Some(("/c/client.pem".into(), "/c/client.key".into())),
                refresh_interval: Duration::from_millis(1500),
            })
        );
        // No config at all: TLS with the system's roots and no identity.
        let bare = MINIMAL.replace(r#"[{"type":"insecure"}]"#, r#"[{"type":"tls"}]"#);
        assert_eq!(
            Bootstrap::from_json(&bare).unwrap().xds_servers[0].channel_creds,
            ChannelCreds::Tls(TlsCreds {
                ca_certificate_file: None,
                identity: None,
                refresh_interval: DEFAULT_REFRESH_INTERVAL,
            })
        );
    }

    #[test]
    fn tls_config_errors_name_their_field() {
        let bad = MINIMAL.replace(
            r#"[{"type":"insecure"}]"#,
            r#"[{"type":"insecure"},{"type":"tls","config":{"certificate_file":"/c/client.pem","ca_certificate_file":7,"refresh_interval":"10m"}},{"type":"tls","config":[]}]"#,
        );
        let err = Bootstrap::from_json(&bad).unwrap_err().to_string();
        // Every supported entry is validated, not just the one used.
        for expected in [
            r#"field:xds_servers[0].channel_creds[1].config error:fields "certificate_file" and "private_key_file" must be both set or both unset"#,
            "field:xds_servers[0].channel_creds[1].config.ca_certificate_file error:is not a string",
            "field:xds_servers[0].channel_creds[1].config.refresh_interval error:is not a JSON duration",
            "field:xds_servers[0].channel_creds[2].config error:is not an object",
        ] {
            assert!(err.contains(expected), "{expected}\nnot in\n{err}");
        }
    }

    #[test]
    fn json_durations() {
        assert_eq!(json_duration("600s"), Some(Duration::from_secs(600)));
        assert_eq!(json_duration("0.25s"), Some(Duration::from_millis(250)));
        assert_eq!(json_duration("1.000000001s"), Some(Duration::new(1, 1)));
        for bad in ["10", "10m", "s", ".5s", "1.0000000001s", "-1s", "1e3s"] {
            assert_eq!(json_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn collects_every_error() {
        let err = Bootstrap::from_json(
            r#"{"xds_servers":[{"channel_creds":[{"type":"google_default"}]},{"server_uri":"a","channel_creds":[{"type":"insecure"}],"server_features":[1]}],"node":[]}"#,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("field:xds_servers[0].server_uri error:field not present"),
            "{text}"
        );
        assert!(
            text.contains("field:xds_servers[0].channel_creds error:no known creds type found"),
            "{text}"
        );
        assert!(
            text.contains("field:xds_servers[1].server_features[0] error:is not a string"),
            "{text}"
        );
        assert!(text.contains("field:node error:is not an object"), "{text}");
        let err = Bootstrap::from_json(
            r#"{"xds_servers":[{"server_uri":"a","channel_creds":[{"type":"insecure"}]}],"server_listener_resource_name_template":7}"#,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("field:server_listener_resource_name_template error:is not a string"),
            "{err}"
        );
    }

    #[test]
    fn rejects_non_json_and_missing_servers() {
        assert!(
            Bootstrap::from_json("{")
                .unwrap_err()
                .to_string()
                .contains("JSON parse error")
        );
        let err = Bootstrap::from_json("{}").unwrap_err();
        assert_eq!(
            err.errors,
            vec![("xds_servers".to_string(), "field not present".to_string())]
        );
        let err = Bootstrap::from_json(r#"{"xds_servers":[]}"#).unwrap_err();
        assert!(err.to_string().contains("must be non-empty"));
    }

    #[test]
    fn authorities_fall_back_to_top_level_servers() {
        let b = Bootstrap::from_json(
            r#"{"xds_servers":[{"server_uri":"top","channel_creds":[{"type":"insecure"}]}],
                "authorities":{"a.example":{},"b.example":{"xds_servers":[{"server_uri":"b","channel_creds":[{"type":"insecure"}]}],
                "client_listener_resource_name_template":"xdstp://b.example/envoy.config.listener.v3.Listener/%s"}}}"#,
        )
        .unwrap();
        assert_eq!(
            b.servers_for_authority(Some("a.example"))[0].server_uri,
            "top"
        );
        assert_eq!(
            b.servers_for_authority(Some("b.example"))[0].server_uri,
            "b"
        );
        assert_eq!(b.servers_for_authority(None)[0].server_uri, "top");
        let err = Bootstrap::from_json(
            r#"{"xds_servers":[{"server_uri":"top","channel_creds":[{"type":"insecure"}]}],
                "authorities":{"a":{"client_listener_resource_name_template":"foo/%s"}}}"#,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("must start with \\\"xdstp://\\\"")
                || err.to_string().contains("must start with \"xdstp://\"")
        );
    }
}
