//! What each step does: one arm per step kind. Actions are recorded on the
//! timeline and start a new stretch for expectations; `wait` and the
//! expectations let time pass (see `wait` and `expect`).

use std::collections::BTreeMap;
use std::time::Duration;

use envoy_types::pb::envoy::service::status::v3::ClientStatusRequest;
use envoy_types::pb::envoy::r#type::matcher::v3::string_matcher::MatchPattern;
use envoy_types::pb::envoy::r#type::matcher::v3::{NodeMatcher, StringMatcher};
use tokio::time::Instant;
use xds_client_under_test::{ClientError, RpcRequest};
use xds_fake_server::fault::{AcceptConnections, CloseStreams, RefuseConnections};
use xds_fake_server::{
    FakeAdsServer, ScriptedDeltaResource, ScriptedDeltaResponse, ScriptedResourceError,
    ScriptedResponse, ServedResource,
};
use xds_vocabulary::code_name;

use super::Player;
use crate::check::duration::format_duration;
use crate::proxy::{ProxyListeners, served_to};
use crate::scenario::{RpcUntil, Step, StepDef, UNTIL_BUDGET};
use crate::timeline::{CsdsReply, EventKind, Source};

/// The pause between the RPCs of an `rpc ... until` step (virtual time on
/// in-process runs); how long it keeps trying is the scenario's
/// [`UNTIL_BUDGET`].
const UNTIL_PAUSE: Duration = Duration::from_millis(10);

/// Why a step failed.
pub(super) struct Failure {
    pub(super) message: String,
    /// What it points at on the timeline, if anything.
    pub(super) mark: Option<super::explain::Mark>,
}

impl Failure {
    pub(super) fn new(message: String) -> Self {
        Failure {
            message,
            mark: None,
        }
    }
}

pub(super) enum StepError {
    Failed(Failure),
    Client(ClientError),
}

impl From<ClientError> for StepError {
    fn from(e: ClientError) -> Self {
        StepError::Client(e)
    }
}

impl Player {
    fn server(&self, name: &str) -> Result<&FakeAdsServer, StepError> {
        self.servers
            .get(name)
            .ok_or_else(|| StepError::Failed(Failure::new(format!("no server named {name}"))))
    }

    /// Resources with their endpoint addresses where they really are (see
    /// `addresses`); the way back is kept up to date for matching.
    fn rewrite(&mut self, resources: &[ServedResource]) -> Result<Vec<ServedResource>, StepError> {
        let rewritten = self.addresses.rewrite(resources);
        if !self.addresses.is_identity() {
            self.normalizer = self.addresses.normalizer();
        }
        served_to(self.proxy.as_mut(), rewritten).map_err(|m| StepError::Failed(Failure::new(m)))
    }

    fn record_step(&mut self, text: String) {
        self.timeline.record(Source::Step, EventKind::Step(text));
        self.action_mark = self.timeline.len();
        self.consumed.clear();
    }

    pub(super) async fn play_step(&mut self, def: &StepDef) -> Result<(), StepError> {
        match &def.step {
            Step::Watch {
                resource_type,
                name,
            } => {
                self.record_step(format!("watch {resource_type} {name}"));
                self.client.watch(*resource_type, name).await?;
            }
            Step::CancelWatch {
                resource_type,
                name,
            } => {
                self.record_step(format!("cancel watch {resource_type} {name}"));
                self.client.cancel_watch(*resource_type, name).await?;
            }
            Step::HoldReads {
                resource_type,
                name,
                hold,
            } => {
                let verb = if *hold { "hold" } else { "release" };
                self.record_step(format!("{verb} reads of watcher {resource_type} {name}"));
                self.client.hold_reads(*resource_type, name, *hold).await?;
            }
            Step::WatchInCallback {
                resource_type,
                name,
                of,
            } => {
                self.record_step(format!(
                    "watch {resource_type} {name} from the next callback of {} {}",
                    of.0, of.1
                ));
                self.client
                    .watch_in_callback(*resource_type, name, (of.0, of.1.as_str()))
                    .await?;
            }
            Step::Dial { target } => {
                if self.proxy.is_some() {
                    // A proxy subscribes from its start, not on a dial: the
                    // dial causes nothing, so expectations after it still
                    // look back to the last real action (or the start).
                    self.timeline
                        .record(Source::Step, EventKind::Step(format!("dial {target}")));
                } else {
                    self.record_step(format!("dial {target}"));
                }
                self.client.dial(target).await?;
            }
            Step::CsdsRequest { node_ids } => {
                self.record_step(format!(
                    "csds request with node_matchers [{}]",
                    node_ids.join(",")
                ));
                let request = ClientStatusRequest {
                    node_matchers: node_ids
                        .iter()
                        .map(|id| NodeMatcher {
                            node_id: Some(StringMatcher {
                                match_pattern: Some(MatchPattern::Exact(id.clone())),
                                ..Default::default()
                            }),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                let reply = match self.client.csds_request(request).await? {
                    Ok(response) => CsdsReply {
                        node_matchers: node_ids.len(),
                        code: tonic::Code::Ok,
                        message: String::new(),
                        configs: response.config.len(),
                    },
                    Err(status) => CsdsReply {
                        node_matchers: node_ids.len(),
                        code: status.code,
                        message: status.message,
                        configs: 0,
                    },
                };
                self.timeline
                    .record(Source::Csds, EventKind::CsdsReply(reply));
            }
            Step::Serve { address } => {
                self.record_step(format!("serve {address}"));
                let real = self.addresses.listening_address(address).into_owned();
                self.client.serve(&real).await?;
            }
            Step::Rpc {
                target,
                method,
                timeout,
                wait_for_ready,
                count,
                until,
                background,
            } => {
                let times = match until {
                    Some(RpcUntil {
                        code,
                        backend: Some(backend),
                    }) => format!(" until {} from {backend}", code_name(*code)),
                    Some(RpcUntil { code, .. }) => format!(" until {}", code_name(*code)),
                    None if *count > 1 => format!(" x{count}"),
                    None => String::new(),
                };
                let times = if *background {
                    format!("{times} in the background")
                } else {
                    times
                };
                self.record_step(format!("rpc {target}{times}"));
                let mut request = RpcRequest {
                    target: target.clone(),
                    method: method.clone(),
                    timeout: *timeout,
                    wait_for_ready: *wait_for_ready,
                    authority: None,
                };
                // A proxy is reached at the listener serving the target.
                if let Some(proxy) = &mut self.proxy {
                    let listener = ProxyListeners::listener_of(target).to_string();
                    let address = proxy.address(&listener).map_err(|e| {
                        StepError::Failed(Failure::new(format!(
                            "cannot find a port for listener {listener}: {e}"
                        )))
                    })?;
                    request.target = address.to_string();
                    request.authority = Some(listener);
                }
                if let Some(until) = until {
                    let give_up = Instant::now() + UNTIL_BUDGET;
                    loop {
                        let outcome = self.client.rpc(&request).await?;
                        let settling = !until.met_by(outcome.code, outcome.backend.as_deref())
                            && Instant::now() < give_up;
                        self.timeline.record(
                            Source::Client,
                            EventKind::Rpc {
                                target: target.clone(),
                                outcome,
                                settling,
                            },
                        );
                        if !settling {
                            break;
                        }
                        tokio::time::sleep(UNTIL_PAUSE).await;
                    }
                } else if *background {
                    for _ in 0..*count {
                        let pending = self.client.start_rpc(&request).await?;
                        let timeline = self.timeline.clone();
                        let target = target.clone();
                        self.background.0.push(tokio::spawn(async move {
                            let event = match pending.await {
                                Ok(outcome) => EventKind::Rpc {
                                    target,
                                    outcome,
                                    settling: false,
                                },
                                Err(e) => EventKind::Note(format!(
                                    "background rpc {target} failed: {}",
                                    e.to_string().lines().next().unwrap_or_default()
                                )),
                            };
                            timeline.record(Source::Client, event);
                        }));
                    }
                } else {
                    for _ in 0..*count {
                        let outcome = self.client.rpc(&request).await?;
                        self.timeline.record(
                            Source::Client,
                            EventKind::Rpc {
                                target: target.clone(),
                                outcome,
                                settling: false,
                            },
                        );
                    }
                }
            }
            Step::SetResources {
                server,
                resources,
                version,
            } => {
                let names: Vec<String> = resources.iter().map(|r| r.name.clone()).collect();
                self.record_step(format!("{server}: set resources [{}]", names.join(",")));
                let resources = self.rewrite(resources)?;
                self.server(server)?
                    .set_resources(resources, version.clone());
            }
            Step::RemoveResources {
                server,
                resource_type,
                names,
                version,
            } => {
                self.record_step(format!(
                    "{server}: remove {resource_type} [{}]",
                    names.join(",")
                ));
                let names: Vec<String> = names
                    .iter()
                    .map(|n| self.addresses.resource_name(n).into_owned())
                    .collect();
                self.server(server)?.remove_resources(
                    resource_type.type_url(),
                    &names,
                    version.clone(),
                );
            }
            Step::SendDeltaResponse {
                server,
                resource_type,
                system_version,
                nonce,
                resources,
                versions,
                ttl,
                no_body,
                removed,
                resource_errors,
            } => {
                self.record_step(format!("{server}: send {resource_type} delta response"));
                let resources = self.rewrite(resources)?;
                // Names as the server knows them (over TCP a server
                // Listener's name embeds its real listening address).
                let name = |n: &String| self.addresses.resource_name(n).into_owned();
                let versions: BTreeMap<String, String> =
                    versions.iter().map(|(k, v)| (name(k), v.clone())).collect();
                let ttl: BTreeMap<String, Duration> =
                    ttl.iter().map(|(k, v)| (name(k), *v)).collect();
                let mut entries: Vec<ScriptedDeltaResource> = resources
                    .into_iter()
                    .map(ScriptedDeltaResource::from_served)
                    .collect();
                entries.extend(no_body.iter().map(|n| ScriptedDeltaResource {
                    name: name(n),
                    version: None,
                    entry: None,
                    ttl: None,
                }));
                for entry in &mut entries {
                    entry.version = versions.get(&entry.name).cloned();
                    entry.ttl = ttl.get(&entry.name).copied();
                }
                let sent = self
                    .server(server)?
                    .send_delta_response(ScriptedDeltaResponse {
                        type_url: resource_type.type_url().to_string(),
                        system_version_info: system_version.clone(),
                        nonce: nonce.clone(),
                        resources: entries,
                        removed: removed.iter().map(name).collect(),
                        resource_errors: resource_errors
                            .iter()
                            .map(|e| ScriptedResourceError {
                                name: e.name.as_ref().map(name),
                                ..e.clone()
                            })
                            .collect(),
                    });
                if sent == 0 {
                    let message = format!(
                        "{}: send_delta_response: {server} has no open delta ADS stream; \
                         expect the client's request before sending",
                        def.location
                    );
                    return Err(StepError::Failed(Failure::new(message)));
                }
            }
            Step::SendResponse {
                server,
                resource_type,
                version,
                nonce,
                resources,
                resource_errors,
            } => {
                self.record_step(format!("{server}: send {resource_type} response"));
                let resources = self.rewrite(resources)?;
                let sent = self.server(server)?.send_response(ScriptedResponse {
                    type_url: resource_type.type_url().to_string(),
                    version_info: version.clone(),
                    nonce: nonce.clone(),
                    resources,
                    resource_errors: resource_errors
                        .iter()
                        .map(|e| ScriptedResourceError {
                            name: e
                                .name
                                .as_deref()
                                .map(|n| self.addresses.resource_name(n).into_owned()),
                            ..e.clone()
                        })
                        .collect(),
                });
                if sent == 0 {
                    // Actions do not wait; a response needs a stream to go on.
                    let message = format!(
                        "{}: send_response: {server} has no open ADS stream; \
                         expect the client's request before sending",
                        def.location
                    );
                    return Err(StepError::Failed(Failure::new(message)));
                }
            }
            Step::CloseStream {
                server,
                code,
                message,
            } => {
                self.record_step(format!("{server}: close streams"));
                self.server(server)?.apply(CloseStreams {
                    code: *code,
                    message: message.clone(),
                });
            }
            Step::RefuseConnections { server } => {
                self.record_step(format!("{server}: refuse connections"));
                self.server(server)?.apply(RefuseConnections);
            }
            Step::AcceptConnections { server } => {
                self.record_step(format!("{server}: accept connections"));
                self.server(server)?.apply(AcceptConnections);
            }
            Step::Fault { server, fault } => {
                self.record_step(format!("{server}: {fault}"));
                self.server(server)?.apply(fault.clone());
            }
            Step::Wait(duration) => {
                // On the timeline, but not an action: expectations still
                // look back to the last action.
                self.timeline.record(
                    Source::Step,
                    EventKind::Step(format!("wait {}", format_duration(*duration))),
                );
                let deadline = Instant::now() + *duration;
                self.run_until(deadline).await;
                self.timeline.record(Source::Step, EventKind::Barrier);
            }
            Step::Expect { matcher, window } => {
                self.expect(def, matcher, *window).await?;
                self.timeline.record(Source::Step, EventKind::Barrier);
            }
            Step::ExpectNone { matcher, duration } => {
                self.expect_none(def, matcher, *duration).await?;
                self.timeline.record(Source::Step, EventKind::Barrier);
            }
        }
        Ok(())
    }
}
