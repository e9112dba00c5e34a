//! Endpoint addresses for runs over real TCP.
//!
//! Scenarios name endpoints by canonical addresses: a backend's
//! [`backend_address`](crate::check::backend_address), or any other
//! `ip:port`. Real clients really connect to what EDS says, so before a
//! ClusterLoadAssignment is served over TCP its addresses are rewritten:
//! backends to where they actually listen, every other address to a
//! distinct closed loopback address (127.1.x.y, same port), so no traffic
//! leaves the machine and each endpoint stays distinct (duplicate
//! addresses are invalid EDS). Timelines are rewritten back, so they read
//! the same in every mode.
//!
//! xDS-enabled servers (gRFC A36) in a client under test listen for real
//! too: a scenario's `serve` address keeps its IP and gets a free port,
//! and the server Listeners naming it (in their resource name, which the
//! bootstrap's template builds from the address, and in their address)
//! are rewritten the same way.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};

use envoy_types::pb::envoy::config::core::v3::{
    SocketAddress, address, socket_address::PortSpecifier,
};
use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::config::endpoint::v3::lb_endpoint::HostIdentifier;
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::service::discovery::v3::Resource;
use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};
use xds_fake_server::ServedResource;

/// Rewrites endpoint addresses one way and timeline text the other way.
#[derive(Clone, Debug, Default)]
pub struct AddressMap {
    /// canonical `ip:port` -> real `ip:port`, for backends.
    backends: BTreeMap<String, String>,
    /// canonical IP -> loopback IP, for everything else.
    others: BTreeMap<String, String>,
    /// canonical -> real listening address of an xDS-enabled server, for
    /// server Listeners' addresses.
    listening: BTreeMap<SocketAddr, SocketAddr>,
    /// The same as text, for what embeds it (resource names, `serve`).
    to_real: Normalizer,
    /// real text -> canonical text, applied to rendered timelines.
    reverse: Vec<(String, String)>,
    /// The real texts in `reverse`, to add each once without a scan.
    reals: HashSet<String>,
}

impl AddressMap {
    /// No rewriting (in-memory runs use canonical addresses directly).
    pub fn identity() -> Self {
        Self::default()
    }

    pub fn add_backend(&mut self, canonical: &str, real: SocketAddr) {
        self.backends
            .insert(canonical.to_string(), real.to_string());
        self.reals.insert(real.to_string());
        self.reverse.push((real.to_string(), canonical.to_string()));
    }

    /// Rendered timelines name a server by its in-memory URI.
    pub fn add_server(&mut self, canonical_uri: &str, real: SocketAddr) {
        self.reals.insert(real.to_string());
        self.reverse
            .push((real.to_string(), canonical_uri.to_string()));
    }

    /// An xDS-enabled server of the client under test listens on `real`
    /// for the scenario's `canonical` address.
    pub fn add_listening(&mut self, canonical: &str, real: SocketAddr) {
        if let Ok(parsed) = canonical.parse::<SocketAddr>() {
            self.listening.insert(parsed, real);
        }
        self.to_real
            .lookup
            .insert(canonical.to_string(), real.to_string());
        self.reals.insert(real.to_string());
        self.reverse.push((real.to_string(), canonical.to_string()));
    }

    /// Where the client under test really listens for `canonical`.
    pub fn listening_address<'a>(&self, canonical: &'a str) -> Cow<'a, str> {
        self.to_real.translate(canonical)
    }

    /// A resource name as served: listening addresses in it (a server
    /// Listener's name holds one) made real, whole addresses only.
    pub fn resource_name<'a>(&self, name: &'a str) -> Cow<'a, str> {
        self.to_real.translate(name)
    }

    pub fn is_identity(&self) -> bool {
        self.backends.is_empty() && self.reverse.is_empty()
    }

    /// The resources with every EDS endpoint address rewritten.
    pub fn rewrite(&mut self, resources: &[ServedResource]) -> Vec<ServedResource> {
        if self.is_identity() {
            return resources.to_vec();
        }
        resources.iter().map(|r| self.rewrite_one(r)).collect()
    }

    fn rewrite_one(&mut self, resource: &ServedResource) -> ServedResource {
        let mut out = resource.clone();
        out.name = self.resource_name(&resource.name).into_owned();
        out.entry = self.rewrite_any(&resource.entry);
        out
    }

    fn rewrite_any(&mut self, any: &Any) -> Any {
        if any.type_url == Resource::type_url()
            && let Ok(mut wrapper) = Resource::decode(any.value.as_slice())
            && let Some(inner) = wrapper.resource.take()
        {
            wrapper.resource = Some(self.rewrite_any(&inner));
            wrapper.name = self.resource_name(&wrapper.name).into_owned();
            return Any {
                type_url: any.type_url.clone(),
                value: wrapper.encode_to_vec(),
            };
        }
        if any.type_url == Listener::type_url() {
            return self.rewrite_listener(any);
        }
        if any.type_url != ClusterLoadAssignment::type_url() {
            return any.clone();
        }
        // Undecodable entries are served as they are: that is their point.
        let Ok(mut cla) = ClusterLoadAssignment::decode(any.value.as_slice()) else {
            return any.clone();
        };
        for locality in &mut cla.endpoints {
            for lb in &mut locality.lb_endpoints {
                let Some(HostIdentifier::Endpoint(endpoint)) = &mut lb.host_identifier else {
                    continue;
                };
                let addresses = endpoint.address.iter_mut().chain(
                    endpoint
                        .additional_addresses
                        .iter_mut()
                        .filter_map(|a| a.address.as_mut()),
                );
                for address in addresses {
                    if let Some(address::Address::SocketAddress(sa)) = &mut address.address {
                        self.rewrite_socket_address(sa);
                    }
                }
            }
        }
        Any {
            type_url: any.type_url.clone(),
            value: cla.encode_to_vec(),
        }
    }

    /// A server Listener's name and address, where they name a listening
    /// address; anything else passes as it is.
    fn rewrite_listener(&self, any: &Any) -> Any {
        if self.listening.is_empty() {
            return any.clone();
        }
        let Ok(mut listener) = Listener::decode(any.value.as_slice()) else {
            return any.clone();
        };
        listener.name = self.resource_name(&listener.name).into_owned();
        if let Some(address::Address::SocketAddress(sa)) =
            listener.address.as_mut().and_then(|a| a.address.as_mut())
            && let Some(PortSpecifier::PortValue(port)) = sa.port_specifier
            && let Ok(ip) = sa.address.parse::<IpAddr>()
            && let Ok(port) = u16::try_from(port)
            && let Some(real) = self.listening.get(&SocketAddr::new(ip, port))
        {
            sa.address = real.ip().to_string();
            sa.port_specifier = Some(PortSpecifier::PortValue(u32::from(real.port())));
        }
        Any {
            type_url: any.type_url.clone(),
            value: listener.encode_to_vec(),
        }
    }

    fn rewrite_socket_address(&mut self, sa: &mut SocketAddress) {
        let Some(PortSpecifier::PortValue(port)) = sa.port_specifier else {
            return;
        };
        let Ok(ip) = sa.address.parse::<IpAddr>() else {
            return;
        };
        let canonical = SocketAddr::new(ip, port as u16).to_string();
        if let Some(real) = self
            .backends
            .get(&canonical)
            .and_then(|r| r.parse::<SocketAddr>().ok())
        {
            sa.address = real.ip().to_string();
            sa.port_specifier = Some(PortSpecifier::PortValue(u32::from(real.port())));
            return;
        }
        let next = self.others.len() + 1;
        let loopback = self
            .others
            .entry(sa.address.clone())
            .or_insert_with(|| format!("127.1.{}.{}", next / 250, next % 250 + 1))
            .clone();
        let real = format!("{loopback}:{port}");
        if self.reals.insert(real.clone()) {
            self.reverse.push((real, canonical));
        }
        sa.address = loopback;
    }

    /// Timeline text with real addresses turned back into canonical ones.
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer().normalize(text)
    }

    /// A [`Normalizer`] for many texts (it indexes the addresses once).
    pub fn normalizer(&self) -> Normalizer {
        let mut lookup = HashMap::with_capacity(self.reverse.len());
        for (real, canonical) in &self.reverse {
            // The first mapping of an address wins.
            lookup
                .entry(real.clone())
                .or_insert_with(|| canonical.clone());
        }
        Normalizer { lookup }
    }
}

/// Replaces whole `ip:port` tokens by a lookup, in one pass over a text
/// however many addresses there are (a benchmark maps 10,000): real
/// addresses back into canonical ones for timelines, and listening
/// addresses forward into real ones for served names.
#[derive(Clone, Debug, Default)]
pub struct Normalizer {
    /// `ip:port` -> its replacement.
    lookup: HashMap<String, String>,
}

impl Normalizer {
    /// True when it changes nothing (in-memory runs).
    pub fn is_identity(&self) -> bool {
        self.lookup.is_empty()
    }

    /// [`Normalizer::normalize`], borrowing when nothing changes.
    pub fn translate<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.lookup.is_empty() {
            return Cow::Borrowed(text);
        }
        let normalized = self.normalize(text);
        if normalized == text {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(normalized)
        }
    }

    /// Every whole `digits-and-dots:port` or `[ipv6]:port` token that is a
    /// real address is replaced; a token is never matched in part
    /// (`127.0.0.1:400` is not found in `127.0.0.1:4000`).
    pub fn normalize(&self, text: &str) -> String {
        if self.lookup.is_empty() {
            return text.to_string();
        }
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut i = 0;
        while i < bytes.len() {
            let starts_token = (bytes[i].is_ascii_digit()
                && (i == 0 || !(bytes[i - 1].is_ascii_digit() || bytes[i - 1] == b'.')))
                || bytes[i] == b'[';
            if starts_token
                && let Some(end) = address_end(bytes, i)
                && let Some(canonical) = self.lookup.get(&text[i..end])
            {
                out.push_str(&text[copied..i]);
                out.push_str(canonical);
                copied = end;
                i = end;
                continue;
            }
            i += 1;
        }
        out.push_str(&text[copied..]);
        out
    }
}

/// The end of a `[0-9.]+:[0-9]+` or `\[[0-9a-fA-F:.]*\]:[0-9]+` token
/// starting at `start` (ASCII, so the ends are char boundaries).
fn address_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    if bytes[start] == b'[' {
        i += 1;
        while i < bytes.len()
            && (bytes[i].is_ascii_hexdigit() || bytes[i] == b':' || bytes[i] == b'.')
        {
            i += 1;
        }
        if bytes.get(i) != Some(&b']') {
            return None;
        }
        i += 1;
    } else {
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
    }
    if bytes.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    let port = i;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    (i > port).then_some(i)
}

/// Where a real client can listen for a scenario's `ip:port`: the same IP
/// when it can be bound here (the wildcard or loopback), else 127.0.0.1,
/// on a port free now. The wildcard IPv6 address falls back to 0.0.0.0
/// on machines without IPv6.
pub fn free_listening_address(canonical: &str) -> std::io::Result<SocketAddr> {
    let wanted: SocketAddr = canonical
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{e}")))?;
    let ip = wanted.ip();
    let mut candidates = Vec::new();
    if ip.is_unspecified() || ip.is_loopback() {
        candidates.push(ip);
    }
    if ip.is_ipv6() && ip.is_unspecified() {
        candidates.push(std::net::Ipv4Addr::UNSPECIFIED.into());
    }
    candidates.push(std::net::Ipv4Addr::LOCALHOST.into());
    let mut last = None;
    for ip in candidates {
        // Bound and let go: the client binds it next (a port another
        // process takes meanwhile makes the run fail, never pass). Ports
        // come from below the kernel's ephemeral range, which outgoing
        // connections draw from: with many clients connecting at once, a
        // port bound to 0 and let go was taken by a connection before the
        // client could listen on it (seen in CI: C-core aborts on it).
        // A port in use is no error here: the next one is tried, and the
        // kernel picks one after them.
        for _ in 0..LISTEN_PORT_TRIES {
            if let Ok(listener) =
                std::net::TcpListener::bind(SocketAddr::new(ip, next_listen_port()))
            {
                return listener.local_addr();
            }
        }
        match std::net::TcpListener::bind(SocketAddr::new(ip, 0)) {
            Ok(listener) => return listener.local_addr(),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no address to bind")))
}

/// Ports handed to clients to listen on: below Linux's default ephemeral
/// range (32768-60999), above the well-known and registered ones most
/// services use.
const LISTEN_PORTS: std::ops::Range<u32> = 20_000..32_768;

/// How many of them to try before falling back to a kernel-chosen port.
const LISTEN_PORT_TRIES: usize = 64;

/// The next port of [`LISTEN_PORTS`], round robin from a start that
/// differs between processes, so one run never hands out a port twice
/// while it has others left and two harnesses rarely meet.
fn next_listen_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let span = LISTEN_PORTS.end - LISTEN_PORTS.start;
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id() % span,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    let offset = NEXT.fetch_add(1, Ordering::Relaxed) % span;
    u16::try_from(LISTEN_PORTS.start + offset).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_addresses_keep_a_bindable_ip_and_get_a_free_port() {
        let wildcard = free_listening_address("0.0.0.0:8443").unwrap();
        assert!(wildcard.ip().is_unspecified() && wildcard.is_ipv4());
        assert_ne!(wildcard.port(), 0);
        // [::] where the machine has IPv6, else 0.0.0.0: a wildcard still.
        assert!(
            free_listening_address("[::]:50051")
                .unwrap()
                .ip()
                .is_unspecified()
        );
        // An address of another machine cannot be bound: loopback instead.
        let other = free_listening_address("10.0.0.1:80").unwrap();
        assert_eq!(other.ip(), std::net::Ipv4Addr::LOCALHOST);
        assert!(free_listening_address("not an address").is_err());
    }

    #[test]
    fn listening_ports_avoid_the_ephemeral_range_and_do_not_repeat() {
        let ports: Vec<u16> = (0..50)
            .map(|_| free_listening_address("127.0.0.1:80").unwrap().port())
            .collect();
        for port in &ports {
            assert!((20_000..32_768).contains(port), "{port}");
        }
        let distinct: std::collections::BTreeSet<_> = ports.iter().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
    }
    use envoy_types::pb::envoy::config::core::v3::Address;
    use envoy_types::pb::envoy::config::endpoint::v3::{Endpoint, LbEndpoint, LocalityLbEndpoints};

    fn cla(addresses: &[(&str, u32)]) -> ServedResource {
        let lb_endpoints = addresses
            .iter()
            .map(|(ip, port)| LbEndpoint {
                host_identifier: Some(HostIdentifier::Endpoint(Endpoint {
                    address: Some(Address {
                        address: Some(address::Address::SocketAddress(SocketAddress {
                            address: ip.to_string(),
                            port_specifier: Some(PortSpecifier::PortValue(*port)),
                            ..Default::default()
                        })),
                    }),
                    ..Default::default()
                })),
                ..Default::default()
            })
            .collect();
        let msg = ClusterLoadAssignment {
            cluster_name: "e1".into(),
            endpoints: vec![LocalityLbEndpoints {
                lb_endpoints,
                ..Default::default()
            }],
            ..Default::default()
        };
        ServedResource::from_message("e1", &msg)
    }

    fn addresses(r: &ServedResource) -> Vec<String> {
        let any = if r.entry.type_url == Resource::type_url() {
            Resource::decode(r.entry.value.as_slice())
                .unwrap()
                .resource
                .unwrap()
        } else {
            r.entry.clone()
        };
        let cla = ClusterLoadAssignment::decode(any.value.as_slice()).unwrap();
        cla.endpoints[0]
            .lb_endpoints
            .iter()
            .map(|lb| match &lb.host_identifier {
                Some(HostIdentifier::Endpoint(e)) => match &e.address.as_ref().unwrap().address {
                    Some(address::Address::SocketAddress(sa)) => match sa.port_specifier {
                        Some(PortSpecifier::PortValue(p)) => format!("{}:{p}", sa.address),
                        _ => unreachable!(),
                    },
                    _ => unreachable!(),
                },
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn backends_go_to_their_ports_and_others_to_distinct_loopbacks() {
        let mut map = AddressMap::identity();
        map.add_backend("198.18.0.1:8080", "127.0.0.1:40001".parse().unwrap());
        let served = cla(&[
            ("198.18.0.1", 8080),
            ("10.0.0.1", 80),
            ("10.0.0.2", 80),
            ("10.0.0.1", 81),
        ]);
        let rewritten = map.rewrite(std::slice::from_ref(&served));
        assert_eq!(
            addresses(&rewritten[0]),
            [
                "127.0.0.1:40001",
                "127.1.0.2:80",
                "127.1.0.3:80",
                "127.1.0.2:81"
            ]
        );
        // Wrapped entries are rewritten inside the wrapper.
        let wrapped = map.rewrite(&[served.wrapped(None)]);
        assert_eq!(addresses(&wrapped[0])[0], "127.0.0.1:40001");
        // And timelines read as if nothing had been rewritten.
        assert_eq!(
            map.normalize("ipv4:127.1.0.2:80 refused; 127.0.0.1:40001 served; 127.1.0.2:81"),
            "ipv4:10.0.0.1:80 refused; 198.18.0.1:8080 served; 10.0.0.1:81"
        );
        // Only whole addresses: not a prefix of a longer port or address.
        assert_eq!(
            map.normalize("127.1.0.2:800 1127.1.0.2:80 [127.1.0.2:80] 127.1.0.2:80"),
            "127.1.0.2:800 1127.1.0.2:80 [10.0.0.1:80] 10.0.0.1:80"
        );
    }

    #[test]
    fn identity_changes_nothing_and_other_types_pass_through() {
        let mut map = AddressMap::identity();
        let served = cla(&[("10.0.0.1", 80)]);
        assert_eq!(
            map.rewrite(std::slice::from_ref(&served)),
            vec![served.clone()]
        );
        let mut map = AddressMap::identity();
        map.add_server("primary:443", "127.0.0.1:5000".parse().unwrap());
        let garbage = ServedResource::raw(
            ClusterLoadAssignment::type_url(),
            "bad",
            Any {
                type_url: ClusterLoadAssignment::type_url(),
                value: vec![0xff, 0xff],
            },
        );
        assert_eq!(map.rewrite(std::slice::from_ref(&garbage)), vec![garbage]);
        assert_eq!(map.normalize("server 127.0.0.1:5000"), "server primary:443");
    }
}

#[cfg(test)]
mod listening_tests {
    use super::*;
    use envoy_types::pb::envoy::config::core::v3::Address;

    fn server_listener(name: &str, ip: &str, port: u32) -> ServedResource {
        let listener = Listener {
            name: name.into(),
            address: Some(Address {
                address: Some(address::Address::SocketAddress(SocketAddress {
                    address: ip.into(),
                    port_specifier: Some(PortSpecifier::PortValue(port)),
                    ..Default::default()
                })),
            }),
            ..Default::default()
        };
        ServedResource::from_message(name, &listener)
    }

    fn decoded(r: &ServedResource) -> Listener {
        let any = if r.entry.type_url == Resource::type_url() {
            let wrapper = Resource::decode(r.entry.value.as_slice()).unwrap();
            assert_eq!(wrapper.name, r.name, "the wrapper is named as the entry");
            wrapper.resource.unwrap()
        } else {
            r.entry.clone()
        };
        Listener::decode(any.value.as_slice()).unwrap()
    }

    fn socket_address(l: &Listener) -> String {
        match l.address.as_ref().and_then(|a| a.address.as_ref()) {
            Some(address::Address::SocketAddress(sa)) => match sa.port_specifier {
                Some(PortSpecifier::PortValue(p)) => format!("{}:{p}", sa.address),
                _ => unreachable!(),
            },
            _ => unreachable!(),
        }
    }

    #[test]
    fn server_listeners_follow_their_listening_address_and_timelines_read_back() {
        let mut map = AddressMap::identity();
        map.add_listening("0.0.0.0:8443", "0.0.0.0:41234".parse().unwrap());
        map.add_listening("[::]:50051", "[::]:41235".parse().unwrap());
        assert_eq!(map.listening_address("0.0.0.0:8443"), "0.0.0.0:41234");
        assert_eq!(map.listening_address("10.0.0.1:80"), "10.0.0.1:80");

        let name = "grpc/server?xds.resource.listening_address=0.0.0.0:8443";
        let served = [
            server_listener(name, "0.0.0.0", 8443),
            // A Listener whose address is not the one its name says is
            // served as wrong as it was written (only the name moves).
            server_listener(name, "0.0.0.0", 9999),
            server_listener(
                "grpc/server?xds.resource.listening_address=[::]:50051",
                "::",
                50051,
            )
            .wrapped(None),
        ];
        let rewritten = map.rewrite(&served);
        let real_name = "grpc/server?xds.resource.listening_address=0.0.0.0:41234";
        assert_eq!(rewritten[0].name, real_name);
        assert_eq!(decoded(&rewritten[0]).name, real_name);
        assert_eq!(socket_address(&decoded(&rewritten[0])), "0.0.0.0:41234");
        assert_eq!(socket_address(&decoded(&rewritten[1])), "0.0.0.0:9999");
        let v6 = decoded(&rewritten[2]);
        assert_eq!(
            v6.name,
            "grpc/server?xds.resource.listening_address=[::]:41235"
        );
        assert_eq!(socket_address(&v6), ":::41235");
        // Names in steps (remove_resources) move the same way.
        assert_eq!(map.resource_name(name), real_name);
        assert_eq!(map.resource_name("other"), "other");
        // Whole addresses only: a longer port is another address.
        assert_eq!(map.resource_name("a=0.0.0.0:84430"), "a=0.0.0.0:84430");

        // What the client reports reads as the scenario wrote it.
        assert_eq!(
            map.normalize(&format!(
                "LDS [{real_name}] serving on 0.0.0.0:41234; [::]:41235 down"
            )),
            format!("LDS [{name}] serving on 0.0.0.0:8443; [::]:50051 down")
        );
        // Brackets that are not an address are left alone.
        assert_eq!(
            map.normalize("[x] [::1] [::]:412350"),
            "[x] [::1] [::]:412350"
        );
    }

    #[test]
    fn no_listening_address_leaves_listeners_alone() {
        let mut map = AddressMap::identity();
        map.add_backend("198.18.0.1:8080", "127.0.0.1:40001".parse().unwrap());
        let served = server_listener("grpc/server?x=0.0.0.0:8443", "0.0.0.0", 8443);
        assert_eq!(map.rewrite(std::slice::from_ref(&served)), vec![served]);
    }
}
