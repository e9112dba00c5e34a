//! `node-on-first-request`: a stream's first request carries the node, and
//! a later request on it that carries one carries the same node.
//! xds_protocol.rst: "Only the first request on a stream is guaranteed to
//! carry the node identifier. The subsequent discovery requests on the same
//! stream may carry an empty node identifier. [...] The node identifier
//! should always be identical if present more than once on the stream."
//! So a client may send the node once per stream (C-core, grpc-go) or on
//! every request (grpc-java, grpc-rust's xds-client). A new stream starts
//! over: its first request carries the node again.

use std::collections::HashMap;

use envoy_types::pb::envoy::config::core::v3::Node;
use xds_fake_server::event::ServerEvent;

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "node-on-first-request",
    rule: "the node is in a stream's first request, and a later request that carries one carries the same",
    held_to: held::by_all,
    check,
};

fn check(_scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    // (server, stream) -> the node of its first request.
    let mut first: HashMap<(&str, u64), &Option<Node>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        let (EventKind::Server(server_event), Some(server)) = (&event.kind, event.source.server())
        else {
            continue;
        };
        let ServerEvent::RequestReceived { stream, request } = &**server_event else {
            continue;
        };
        let message = match first.get(&(server, *stream)) {
            None => {
                first.insert((server, *stream), &request.node);
                if request.node.is_some() {
                    continue;
                }
                "the stream's first request has no node"
            }
            Some(node) => match &request.node {
                Some(later) if Some(later) != node.as_ref() => {
                    "a later request carries another node than the stream's first"
                }
                _ => continue,
            },
        };
        return Some(Violation {
            event: index,
            message: format!("{server} stream {stream}: {message}"),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariant::test_events::request;
    use crate::invariant::test_events::test_scenario;

    const LDS: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    #[test]
    fn the_node_first_and_the_same_after_passes_another_or_none_first_is_caught() {
        // Once per stream (C-core, grpc-go), or on every request (grpc-java).
        let once = vec![
            request(1, LDS, &["l1"], "", "", true),
            request(1, CDS, &["c1"], "", "", false),
            request(2, LDS, &["l1"], "", "", true),
        ];
        assert_eq!(check(&test_scenario(), &once), None);
        let always = vec![
            request(1, LDS, &["l1"], "", "", true),
            request(1, CDS, &["c1"], "", "", true),
        ];
        assert_eq!(check(&test_scenario(), &always), None);
        // A later node that is not the first's.
        let mut changed = always.clone();
        let EventKind::Server(event) = &mut changed[1].kind else {
            unreachable!()
        };
        let ServerEvent::RequestReceived { request: later, .. } = &mut **event else {
            unreachable!()
        };
        later.node = Some(Node {
            id: "another".into(),
            ..Node::default()
        });
        let v = check(&test_scenario(), &changed).expect("another node");
        assert_eq!(v.event, 1);
        assert!(v.message.contains("another node"), "{v:?}");
        let never = vec![request(1, LDS, &["l1"], "", "", false)];
        assert!(
            check(&test_scenario(), &never)
                .expect("no node")
                .message
                .contains("no node")
        );
    }
}
