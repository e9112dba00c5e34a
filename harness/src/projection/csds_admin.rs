//! `csds` checks observed through a proxy's admin API, on a client that
//! has one but no CSDS (Envoy: `/config_dump` and `/stats`, reported as
//! [`AdminObservation`]s on the timeline).
//!
//! CSDS says, per resource, whether the last update of it was accepted
//! (ACKED, with its version) or rejected (NACKED). Envoy's config dump
//! shows what it accepted (a Listener, route configuration or Cluster
//! with its version; endpoints without one) and, for Listeners only, a
//! rejection (`error_state`). Other rejections leave no trace in the dump;
//! they move a counter: `cluster_manager.cds.update_rejected` for any
//! Cluster, `http.<prefix>.rds.<route>.update_rejected` for a route
//! configuration, `cluster.<cluster>.update_rejected` for endpoints. So a
//! rejection is the resource's only while the responses of its type have
//! named only it: with two Clusters served, a moved CDS counter could be
//! either's, and a check that needs to know is not applicable (the run
//! says why), never guessed.
//!
//! DOES_NOT_EXIST projects for Listeners and Clusters that the dump
//! showed and then no longer does: the server deleted them (SotW by
//! omission, delta by `removed_resources`; nothing else takes a Listener
//! or Cluster out of Envoy's dump), as a gRPC client then says they do not
//! exist. One Envoy never had is unknown: it says nothing of what it never
//! received (a gRPC client's does-not-exist timer), so such a check makes
//! the run not applicable. Endpoints and route configurations leave the
//! dump when nothing uses them any more, which is not a deletion.
//!
//! REQUESTED and ABSENT do not project (the dump lists nothing it has not
//! received, so the two look alike); endpoints carry no version.

use std::collections::{BTreeMap, BTreeSet};

use xds_client_under_test::{AdminObservation, AdminResourceState, ObservedEvent};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::ResourceType;

use crate::addresses::Normalizer;
use crate::matcher::csds::CsdsMatcher;
use crate::scenario::Scenario;
use crate::timeline::{CsdsStatus, EventKind, TimelineEvent, type_name};

use super::csds_counts::csds_matchers;

/// A `csds` check as the admin API can answer it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminCheck {
    pub resource_type: ResourceType,
    pub name: String,
    /// ACKED, NACKED or (Listeners and Clusters) DOES_NOT_EXIST.
    pub status: CsdsStatus,
    /// ACKED at this version (never for endpoints, which have none).
    pub version: Option<String>,
}

/// How a `csds` check projects onto the admin API, or why it does not.
pub fn project(matcher: &CsdsMatcher) -> Result<AdminCheck, &'static str> {
    const WHY: &str = "a check of more than a type, a name, ACKED or NACKED and an \
                       accepted version (its config dump shows nothing more)";
    let Some((resource_type, name, status, version)) = matcher.identity_only() else {
        return Err(WHY);
    };
    match status {
        CsdsStatus::Acked | CsdsStatus::Nacked => {}
        CsdsStatus::Requested | CsdsStatus::Absent => {
            return Err(
                "a check of REQUESTED or ABSENT (the config dump lists nothing it has \
                        not received, so the two look alike)",
            );
        }
        CsdsStatus::DoesNotExist
            if matches!(
                resource_type,
                ResourceType::Listener | ResourceType::Cluster
            ) => {}
        CsdsStatus::DoesNotExist => {
            return Err(
                "a check of DOES_NOT_EXIST of endpoints or a route configuration (the dump \
                 drops them when nothing uses them, deleted or not)",
            );
        }
        CsdsStatus::ReceivedError | CsdsStatus::Timeout => {
            return Err("a check of RECEIVED_ERROR or TIMEOUT (Envoy has no such state)");
        }
    }
    if version.is_some()
        && (status != CsdsStatus::Acked || resource_type == ResourceType::ClusterLoadAssignment)
    {
        return Err(WHY);
    }
    Ok(AdminCheck {
        resource_type,
        name: name.to_string(),
        status,
        version: version.map(str::to_string),
    })
}

/// Why the scenario's `csds` checks cannot be read off the admin API, if
/// it can tell before the run (every alternative of an `any_of` too).
pub fn plan(scenario: &Scenario) -> Result<(), String> {
    for matcher in csds_matchers(scenario) {
        project(matcher).map_err(str::to_string)?;
    }
    Ok(())
}

/// What the last update of a resource did, as the admin API tells.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Accepted {
        version: Option<String>,
    },
    Rejected,
    /// Shown, then gone from the dump: deleted.
    Deleted,
    /// A rejection that may have been this resource's or another's.
    Unknown(String),
}

/// The admin API's observations, read as CSDS would show them.
#[derive(Debug, Default)]
pub struct AdminView {
    /// The dump's resources as last observed.
    dumped: BTreeMap<(ResourceType, String), (AdminResourceState, Option<String>, String)>,
    outcomes: BTreeMap<(ResourceType, String), Outcome>,
    /// Every name the servers' responses carried, by type.
    responded: BTreeMap<ResourceType, BTreeSet<String>>,
    stats: BTreeMap<String, u64>,
}

/// The type whose rejections a counter counts, if it is one. Listeners
/// are told by name (`error_state`), so their counter is not needed.
fn rejections_of(stat: &str) -> Option<ResourceType> {
    if !stat.ends_with(".update_rejected") {
        return None;
    }
    if stat == "cluster_manager.cds.update_rejected" {
        Some(ResourceType::Cluster)
    } else if stat.starts_with("http.") && stat.contains(".rds.") {
        Some(ResourceType::RouteConfiguration)
    } else if stat.starts_with("cluster.") {
        Some(ResourceType::ClusterLoadAssignment)
    } else {
        None
    }
}

impl AdminView {
    /// Takes in one timeline event (in timeline order).
    pub fn observe(&mut self, event: &TimelineEvent, normalizer: &Normalizer) {
        match &event.kind {
            EventKind::Server(server) => {
                if let ServerEvent::ResponseSent { response, .. } = server.as_ref()
                    && let Some(t) = ResourceType::from_type_url(&response.type_url)
                {
                    let names = self.responded.entry(t).or_default();
                    for name in &response.resource_names {
                        names.insert(normalizer.translate(name).into_owned());
                    }
                }
            }
            EventKind::Client(ObservedEvent::Admin(observation)) => match observation {
                AdminObservation::Resource {
                    resource_type,
                    name,
                    version,
                    state,
                    detail,
                } => self.resource(
                    *resource_type,
                    normalizer.translate(name).into_owned(),
                    version.clone(),
                    *state,
                    detail.clone(),
                ),
                AdminObservation::Stat { name, value } => self.stat(name, *value),
            },
            _ => {}
        }
    }

    fn resource(
        &mut self,
        resource_type: ResourceType,
        name: String,
        version: Option<String>,
        state: AdminResourceState,
        detail: String,
    ) {
        let key = (resource_type, name);
        match state {
            AdminResourceState::Rejected => {
                self.outcomes.insert(key.clone(), Outcome::Rejected);
            }
            AdminResourceState::Active | AdminResourceState::Warming => {
                // A new version, new endpoints (they have no version), or
                // a Listener's rejection cleared: an update was accepted.
                let before = self.dumped.get(&key);
                let accepted = before.is_none_or(|(s, v, d)| {
                    *s == AdminResourceState::Rejected
                        || *v != version
                        || (resource_type == ResourceType::ClusterLoadAssignment && *d != detail)
                });
                if accepted {
                    self.outcomes.insert(
                        key.clone(),
                        Outcome::Accepted {
                            version: version.clone(),
                        },
                    );
                }
            }
            // A Listener drains when it is deleted (an update keeps its
            // new version active beside the draining one, and the dump
            // shows that as active).
            AdminResourceState::Draining | AdminResourceState::Removed => {
                self.outcomes.insert(key.clone(), Outcome::Deleted);
            }
        }
        if state == AdminResourceState::Removed {
            self.dumped.remove(&key);
        } else {
            self.dumped.insert(key, (state, version, detail));
        }
    }

    fn stat(&mut self, name: &str, value: u64) {
        let before = self.stats.insert(name.to_string(), value).unwrap_or(0);
        let Some(resource_type) = rejections_of(name) else {
            return;
        };
        if value <= before {
            return;
        }
        let names: Vec<String> = self
            .responded
            .get(&resource_type)
            .map(|n| n.iter().cloned().collect())
            .unwrap_or_default();
        let outcome = match names.as_slice() {
            [_] => Outcome::Rejected,
            _ => Outcome::Unknown(format!(
                "{name} moved while the responses named {} {} resources ({}): the admin API \
                 does not say whose update it rejected",
                names.len(),
                resource_type,
                names.join(", ")
            )),
        };
        for name in names {
            self.outcomes.insert((resource_type, name), outcome.clone());
        }
    }

    /// Whether the admin API shows what `check` describes; `Err` with why
    /// it cannot tell.
    pub fn read(&self, check: &AdminCheck) -> Result<bool, String> {
        let key = (check.resource_type, check.name.clone());
        Ok(match (self.outcomes.get(&key), check.status) {
            (Some(Outcome::Unknown(why)), _) => return Err(why.clone()),
            (Some(Outcome::Accepted { version }), CsdsStatus::Acked) => {
                check.version.is_none() || check.version == *version
            }
            (Some(Outcome::Rejected), CsdsStatus::Nacked) => true,
            (Some(Outcome::Deleted), CsdsStatus::DoesNotExist) => true,
            (None, CsdsStatus::DoesNotExist) if !self.dumped.contains_key(&key) => {
                return Err(format!(
                    "{} {} was never in the config dump: Envoy does not say whether a \
                     resource it never received exists",
                    type_name(check.resource_type.type_url()),
                    check.name
                ));
            }
            _ => false,
        })
    }

    /// What the admin API showed, one resource a line, for failure
    /// messages.
    pub fn describe(&self) -> String {
        if self.outcomes.is_empty() {
            return "  (admin API: no resource accepted or rejected)\n".to_string();
        }
        let mut out = String::new();
        for ((t, name), outcome) in &self.outcomes {
            let shown = match outcome {
                Outcome::Accepted { version } => format!("accepted, version={version:?}"),
                Outcome::Rejected => "rejected".to_string(),
                Outcome::Deleted => "deleted (gone from the dump)".to_string(),
                Outcome::Unknown(why) => format!("unknown: {why}"),
            };
            out.push_str(&format!(
                "  admin {} {name}: {shown}\n",
                type_name(t.type_url())
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use xds_fake_server::event::RecordedResponse;

    fn at(kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: crate::timeline::Source::Harness,
            kind,
        }
    }

    fn response(t: ResourceType, names: &[&str]) -> TimelineEvent {
        at(EventKind::Server(Box::new(ServerEvent::ResponseSent {
            stream: 1,
            response: RecordedResponse {
                type_url: t.type_url().to_string(),
                version_info: "1".into(),
                nonce: "1".into(),
                resource_names: names.iter().map(|n| n.to_string()).collect(),
                encoded_len: 0,
                delta: None,
                resource_errors: Vec::new(),
                bodies: Vec::new(),
            },
        })))
    }

    fn dumped(
        t: ResourceType,
        name: &str,
        version: &str,
        state: AdminResourceState,
    ) -> TimelineEvent {
        at(EventKind::Client(ObservedEvent::Admin(
            AdminObservation::Resource {
                resource_type: t,
                name: name.into(),
                version: Some(version.into()),
                state,
                detail: String::new(),
            },
        )))
    }

    fn stat(name: &str, value: u64) -> TimelineEvent {
        at(EventKind::Client(ObservedEvent::Admin(
            AdminObservation::Stat {
                name: name.into(),
                value,
            },
        )))
    }

    fn check(t: ResourceType, status: CsdsStatus, version: Option<&str>) -> AdminCheck {
        AdminCheck {
            resource_type: t,
            name: "c1".into(),
            status,
            version: version.map(str::to_string),
        }
    }

    #[test]
    fn accepted_versions_and_a_lone_resource_rejections_read_exactly() {
        let n = Normalizer::default();
        let mut view = AdminView::default();
        let cds = ResourceType::Cluster;
        view.observe(&response(cds, &["c1"]), &n);
        view.observe(&dumped(cds, "c1", "1", AdminResourceState::Active), &n);
        assert_eq!(
            view.read(&check(cds, CsdsStatus::Acked, Some("1"))),
            Ok(true)
        );
        assert_eq!(
            view.read(&check(cds, CsdsStatus::Acked, Some("2"))),
            Ok(false)
        );
        assert_eq!(view.read(&check(cds, CsdsStatus::Nacked, None)), Ok(false));
        // The next update rejected: the dump keeps version 1, the counter moves.
        view.observe(&stat("cluster_manager.cds.update_rejected", 1), &n);
        assert_eq!(view.read(&check(cds, CsdsStatus::Nacked, None)), Ok(true));
        assert_eq!(view.read(&check(cds, CsdsStatus::Acked, None)), Ok(false));
        view.observe(&dumped(cds, "c1", "3", AdminResourceState::Active), &n);
        assert_eq!(
            view.read(&check(cds, CsdsStatus::Acked, Some("3"))),
            Ok(true)
        );
    }

    #[test]
    fn a_rejection_of_one_of_several_is_not_told() {
        let n = Normalizer::default();
        let mut view = AdminView::default();
        let rds = ResourceType::RouteConfiguration;
        view.observe(&response(rds, &["c1", "r2"]), &n);
        view.observe(&stat("http.svc.rds.c1.update_rejected", 1), &n);
        let why = view
            .read(&check(rds, CsdsStatus::Nacked, None))
            .unwrap_err();
        assert!(why.contains("2 RDS resources (c1, r2)"), "{why}");
    }

    #[test]
    fn a_listener_rejection_is_told_by_name() {
        let n = Normalizer::default();
        let mut view = AdminView::default();
        let lds = ResourceType::Listener;
        view.observe(&response(lds, &["c1", "other"]), &n);
        view.observe(&dumped(lds, "c1", "1", AdminResourceState::Rejected), &n);
        assert_eq!(view.read(&check(lds, CsdsStatus::Nacked, None)), Ok(true));
        view.observe(&dumped(lds, "c1", "1", AdminResourceState::Active), &n);
        assert_eq!(
            view.read(&check(lds, CsdsStatus::Acked, Some("1"))),
            Ok(true)
        );
    }

    #[test]
    fn gone_from_the_dump_is_deleted_and_never_dumped_is_unknown() {
        let n = Normalizer::default();
        let mut view = AdminView::default();
        let cds = ResourceType::Cluster;
        let gone = check(cds, CsdsStatus::DoesNotExist, None);
        let why = view.read(&gone).unwrap_err();
        assert!(why.contains("never in the config dump"), "{why}");
        view.observe(&dumped(cds, "c1", "1", AdminResourceState::Active), &n);
        assert_eq!(view.read(&gone), Ok(false));
        view.observe(&dumped(cds, "c1", "", AdminResourceState::Removed), &n);
        assert_eq!(view.read(&gone), Ok(true));
        assert_eq!(view.read(&check(cds, CsdsStatus::Acked, None)), Ok(false));
        // Back again: accepted, no longer deleted.
        view.observe(&dumped(cds, "c1", "3", AdminResourceState::Active), &n);
        assert_eq!(view.read(&gone), Ok(false));
        // A Listener drains when it is deleted.
        let lds = ResourceType::Listener;
        view.observe(&dumped(lds, "c1", "1", AdminResourceState::Active), &n);
        view.observe(&dumped(lds, "c1", "1", AdminResourceState::Draining), &n);
        assert_eq!(
            view.read(&check(lds, CsdsStatus::DoesNotExist, None)),
            Ok(true)
        );
    }

    #[test]
    fn acked_nacked_and_a_deleted_listener_or_cluster_project() {
        let m = |status| CsdsMatcher {
            resource_type: Some(ResourceType::Cluster),
            name: Some("c1".into()),
            status: Some(status),
            ..CsdsMatcher::default()
        };
        assert!(project(&m(CsdsStatus::Acked)).is_ok());
        assert!(project(&m(CsdsStatus::Nacked)).is_ok());
        assert!(project(&m(CsdsStatus::DoesNotExist)).is_ok());
        for status in [
            CsdsStatus::Requested,
            CsdsStatus::Absent,
            CsdsStatus::Timeout,
        ] {
            assert!(project(&m(status)).is_err(), "{status:?}");
        }
        let eds_gone = CsdsMatcher {
            resource_type: Some(ResourceType::ClusterLoadAssignment),
            ..m(CsdsStatus::DoesNotExist)
        };
        assert!(project(&eds_gone).is_err());
        let eds_version = CsdsMatcher {
            resource_type: Some(ResourceType::ClusterLoadAssignment),
            version: Some("1".into()),
            ..m(CsdsStatus::Acked)
        };
        assert!(project(&eds_version).is_err());
    }
}
