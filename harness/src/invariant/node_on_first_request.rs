//! `node-on-first-request`: a stream's first request carries the node,
//! and no later request on it does (gRFC A27: the client sends the node
//! once per stream; the server keeps it for the stream). A new stream
//! starts over: its first request carries the node again.

use std::collections::HashSet;

use xds_fake_server::event::ServerEvent;

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "node-on-first-request",
    rule: "the node is in a stream's first request, and in no later one",
    held_to: held::by_all,
    check,
};

fn check(_scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    // (server, stream) that had a request.
    let mut started: HashSet<(&str, u64)> = HashSet::new();
    for (index, event) in events.iter().enumerate() {
        let (EventKind::Server(server_event), Some(server)) = (&event.kind, event.source.server())
        else {
            continue;
        };
        let ServerEvent::RequestReceived { stream, request } = &**server_event else {
            continue;
        };
        let first = started.insert((server, *stream));
        let message = match (first, request.node.is_some()) {
            (true, false) => "the stream's first request has no node",
            (false, true) => "a request after the stream's first carries the node again",
            _ => continue,
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
    fn the_node_once_per_stream_passes_and_twice_or_never_is_caught() {
        let good = vec![
            request(1, LDS, &["l1"], "", "", true),
            request(1, CDS, &["c1"], "", "", false),
            request(2, LDS, &["l1"], "", "", true),
        ];
        assert_eq!(check(&test_scenario(), &good), None);
        let twice = vec![
            request(1, LDS, &["l1"], "", "", true),
            request(1, CDS, &["c1"], "", "", true),
        ];
        let v = check(&test_scenario(), &twice).expect("the node twice");
        assert_eq!(v.event, 1);
        assert!(v.message.contains("carries the node again"), "{v:?}");
        let never = vec![request(1, LDS, &["l1"], "", "", false)];
        assert!(
            check(&test_scenario(), &never)
                .expect("no node")
                .message
                .contains("no node")
        );
    }
}
