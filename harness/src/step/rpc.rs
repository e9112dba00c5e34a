//! `rpc`: unary RPCs on the channel to a target; each result goes on the
//! timeline.

use std::time::Duration;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use xds_client_under_test::{Capabilities, RpcRequest};
use xds_vocabulary::code_name;

use super::{Compile, Generate, Kind, Palette, Play, Script, ScriptClock, Stage, StepError};
use crate::check::{Location, Problem, Reachable, Spanned, check_count, code, duration, opt};
use crate::timeline::{EventKind, Source};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RpcSpec {
    /// `xds:///svc`.
    pub target: Spanned<String>,
    /// How many RPCs, one after the other (default 1).
    pub count: Option<u32>,
    /// Deadline of each RPC (default 1s).
    pub timeout: Option<Spanned<String>>,
    /// Wait while the channel is failing instead of failing fast.
    pub wait_for_ready: Option<bool>,
    /// Full method path (default the backends' `/xds_conformance.Backend/Who`).
    pub method: Option<String>,
    /// Repeat the RPC (10 ms apart, for at most 2 s) until one ends with
    /// this status code: a real client applies a config some time after
    /// it ACKs it, so the first RPC after an ACK may still see the old
    /// one. RPCs before the matching one are marked `(settling)`.
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub until: Option<Spanned<String>>,
    /// Like `until`, but until an RPC succeeds on this backend: waits for
    /// traffic to move (a new route, weight or endpoint) rather than
    /// hoping the client was quick.
    pub until_backend: Option<Spanned<String>>,
    /// Start the RPCs and go on at once: each result goes on the timeline
    /// when it comes, so a later step can release a waiting RPC (e.g. a
    /// `wait_for_ready` one sent while the channel fails). Not with
    /// `until`.
    pub background: Option<bool>,
}

/// How long an `rpc ... until` step keeps trying before it takes the
/// next answer as final (virtual time on in-process runs).
pub const UNTIL_BUDGET: Duration = Duration::from_secs(2);

/// The pause between the RPCs of an `rpc ... until` step; how long it
/// keeps trying is [`UNTIL_BUDGET`].
const UNTIL_PAUSE: Duration = Duration::from_millis(10);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rpc {
    pub target: String,
    pub method: String,
    pub timeout: Duration,
    pub wait_for_ready: bool,
    pub count: u32,
    /// Repeat until an RPC ends like this (see `RpcSpec::until`).
    pub until: Option<RpcUntil>,
    /// Started, not awaited (see `RpcSpec::background`).
    pub background: bool,
}

/// What ends an `rpc ... until` step: an RPC with this code, served (for
/// `until_backend`) by this backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcUntil {
    pub code: tonic::Code,
    pub backend: Option<String>,
}

impl RpcUntil {
    /// Whether an RPC's outcome ends the step.
    pub fn met_by(&self, code: tonic::Code, backend: Option<&str>) -> bool {
        code == self.code
            && self
                .backend
                .as_deref()
                .is_none_or(|want| backend == Some(want))
    }
}

impl Compile for RpcSpec {
    type Step = Rpc;

    fn compile(&self, script: &mut Script<'_>) -> Result<Rpc, Problem> {
        let target = super::dial::xds_target(&self.target, "rpc")?;
        let count = self.count.unwrap_or(1);
        check_count(count, "rpc: count").map_err(|e| script.problem(e))?;
        if count == 0 {
            return Err(script.problem("rpc: count must be at least 1"));
        }
        let until_given = self.until.as_ref().or(self.until_backend.as_ref());
        if let Some(until) = until_given
            && count > 1
        {
            return Err(Problem::at(
                until,
                "rpc: `until` and `count` exclude each other",
            ));
        }
        let background = self.background.unwrap_or(false);
        if let Some(until) = until_given
            && background
        {
            return Err(Problem::at(
                until,
                "rpc: `until` and `background` exclude each other (an `until` step waits)",
            ));
        }
        let until = match (&self.until, &self.until_backend) {
            (until, Some(backend)) => {
                let backend = script.checker().known_backend(backend)?;
                let code = opt(until.as_ref(), code)?.unwrap_or(tonic::Code::Ok);
                if code != tonic::Code::Ok {
                    return Err(script.problem(
                        "rpc: `until_backend` waits for an RPC that succeeds there; `until` can only be OK with it",
                    ));
                }
                Some(RpcUntil {
                    code,
                    backend: Some(backend),
                })
            }
            (Some(c), None) => Some(RpcUntil {
                code: code(c)?,
                backend: None,
            }),
            (None, None) => None,
        };
        Ok(Rpc {
            target,
            method: self
                .method
                .clone()
                .unwrap_or_else(|| xds_client_under_test::BACKEND_METHOD.to_string()),
            timeout: opt(self.timeout.as_ref(), |t| duration(t, "timeout"))?
                .unwrap_or(Duration::from_secs(1)),
            wait_for_ready: self.wait_for_ready.unwrap_or(false),
            count,
            until,
            background,
        })
    }
}

impl Kind for Rpc {
    fn describe(&self) -> String {
        let times = match &self.until {
            Some(RpcUntil {
                code,
                backend: Some(backend),
            }) => format!(" until {} from {backend}", code_name(*code)),
            Some(RpcUntil { code, .. }) => format!(" until {}", code_name(*code)),
            None if self.count > 1 => format!(" x{}", self.count),
            None => String::new(),
        };
        let background = if self.background {
            " in the background"
        } else {
            ""
        };
        format!("rpc {}{times}{background}", self.target)
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        if !caps.rpc {
            Some("RPCs")
        } else if self.background && !caps.background_rpc {
            Some("RPCs in the background")
        } else {
            None
        }
    }

    fn advance(&self, clock: &mut ScriptClock) -> Result<(), String> {
        clock.most += match self.until {
            // The script goes on at once.
            _ if self.background => Duration::ZERO,
            // `until` retries for a fixed budget, then one more.
            Some(_) => UNTIL_BUDGET + self.timeout,
            None => self.timeout.saturating_mul(self.count),
        };
        Ok(())
    }

    fn reach(&self, reach: &mut Reachable) -> Result<(), String> {
        reach.called(&self.target);
        Ok(())
    }
}

impl Play for Rpc {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        let mut request = RpcRequest {
            target: self.target.clone(),
            method: self.method.clone(),
            timeout: self.timeout,
            wait_for_ready: self.wait_for_ready,
            authority: None,
        };
        // A proxy is reached at the listener serving the target.
        if let Some((address, authority)) = stage.proxy_listener(&self.target)? {
            request.target = address;
            request.authority = Some(authority);
        }
        let outcome = |outcome, settling| EventKind::Rpc {
            target: self.target.clone(),
            outcome,
            settling,
        };
        if let Some(until) = &self.until {
            let give_up = Instant::now() + UNTIL_BUDGET;
            loop {
                let result = stage.client().rpc(&request).await?;
                let settling = !until.met_by(result.code, result.backend.as_deref())
                    && Instant::now() < give_up;
                stage.record(Source::Client, outcome(result, settling));
                if !settling {
                    break;
                }
                tokio::time::sleep(UNTIL_PAUSE).await;
            }
        } else if self.background {
            for _ in 0..self.count {
                let pending = stage.client().start_rpc(&request).await?;
                let timeline = stage.timeline();
                let target = self.target.clone();
                stage.keep(tokio::spawn(async move {
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
            for _ in 0..self.count {
                let result = stage.client().rpc(&request).await?;
                stage.record(Source::Client, outcome(result, false));
            }
        }
        Ok(())
    }
}

impl Generate for RpcSpec {
    /// One to three RPCs (or one until it succeeds), failing fast or
    /// waiting for ready, some in the background.
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            (
                palette.target(),
                1u32..=3,
                any::<bool>(),
                prop_oneof![Just(None), Just(Some(false)), Just(Some(true))],
                0u8..4,
            )
                .prop_map(|(target, count, wait_for_ready, background, shape)| {
                    let until = shape == 0;
                    RpcSpec {
                        target,
                        count: (!until && count > 1).then_some(count),
                        timeout: None,
                        wait_for_ready: wait_for_ready.then_some(true),
                        method: None,
                        until: until.then(|| Spanned::new("OK".to_string())),
                        until_backend: None,
                        background: if until { None } else { background },
                    }
                })
                .boxed(),
        )
    }
}
