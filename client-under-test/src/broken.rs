//! A client broken on purpose: every rule the harness checks needs a
//! client that breaks it. [`Broken`] passes each command to the client it
//! wraps, except those its rule answers itself, so a test names the break
//! (drop every watch; fail the third dial) and not the fifteen methods
//! passed on.

use std::sync::Arc;

use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse};
use xds_vocabulary::{ResourceType, XdsError};

use crate::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, PendingRpc, RpcOutcome,
    RpcRequest,
};

/// A command as a rule sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    Watch(ResourceType, &'a str),
    CancelWatch(ResourceType, &'a str),
    Dial(&'a str),
    /// An RPC (or a background one) to this target.
    Rpc(&'a str),
    Serve(&'a str),
}

/// What a rule does to a command: `None` passes it on, `Some(result)`
/// answers it instead (an RPC's `Some(Ok(()))` passes it on: only an
/// error can stand for its outcome).
pub type Rule = Arc<dyn Fn(&Command<'_>) -> Option<Result<(), ClientError>> + Send + Sync>;

/// What a broken client claims of itself, from what its inner client
/// claims.
pub type Claims = Arc<dyn Fn(Capabilities) -> Capabilities + Send + Sync>;

/// `inner`, broken by `rule`.
pub struct Broken<C> {
    inner: C,
    name: String,
    rule: Rule,
    real_time: bool,
    claims: Option<Claims>,
}

impl<C: ClientUnderTest> Broken<C> {
    pub fn new(inner: C, name: &str, rule: Rule) -> Self {
        Broken {
            inner,
            name: name.to_string(),
            rule,
            real_time: false,
            claims: None,
        }
    }

    /// Claims other capabilities than the client it wraps (a client that
    /// subscribes only by wildcard, as Envoy, or one without CSDS): the
    /// harness then holds it to what such a client shows.
    pub fn claiming(mut self, claims: Claims) -> Self {
        self.claims = Some(claims);
        self
    }

    /// Claims no virtual time, as an external client: its runs are on
    /// real time.
    pub fn on_real_time(mut self) -> Self {
        self.real_time = true;
        self
    }

    fn answer(&self, command: Command<'_>) -> Option<Result<(), ClientError>> {
        (self.rule)(&command)
    }
}

#[async_trait::async_trait]
impl<C: ClientUnderTest> ClientUnderTest for Broken<C> {
    fn name(&self) -> &str {
        &self.name
    }
    fn capabilities(&self) -> Capabilities {
        let caps = self.inner.capabilities();
        let caps = Capabilities {
            virtual_time: caps.virtual_time && !self.real_time,
            ..caps
        };
        match &self.claims {
            Some(claims) => claims(caps),
            None => caps,
        }
    }
    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        self.inner.start(env).await
    }
    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        match self.answer(Command::Watch(resource_type, name)) {
            Some(result) => result,
            None => self.inner.watch(resource_type, name).await,
        }
    }
    async fn watch_in_callback(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        of: (ResourceType, &str),
    ) -> Result<(), ClientError> {
        self.inner.watch_in_callback(resource_type, name, of).await
    }
    async fn hold_reads(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        hold: bool,
    ) -> Result<(), ClientError> {
        self.inner.hold_reads(resource_type, name, hold).await
    }
    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        match self.answer(Command::CancelWatch(resource_type, name)) {
            Some(result) => result,
            None => self.inner.cancel_watch(resource_type, name).await,
        }
    }
    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        match self.answer(Command::Dial(target)) {
            Some(result) => result,
            None => self.inner.dial(target).await,
        }
    }
    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        match self.answer(Command::Serve(address)) {
            Some(result) => result,
            None => self.inner.serve(address).await,
        }
    }
    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        if let Some(Err(e)) = self.answer(Command::Rpc(&request.target)) {
            return Err(e);
        }
        self.inner.rpc(request).await
    }
    async fn start_rpc(&mut self, request: &RpcRequest) -> Result<PendingRpc, ClientError> {
        if let Some(Err(e)) = self.answer(Command::Rpc(&request.target)) {
            return Err(e);
        }
        self.inner.start_rpc(request).await
    }
    async fn resource_counts(&mut self) -> Result<crate::ResourceCounts, ClientError> {
        self.inner.resource_counts().await
    }
    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        self.inner.csds().await
    }
    async fn csds_request(
        &mut self,
        request: ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, XdsError>, ClientError> {
        self.inner.csds_request(request).await
    }
    fn peak_rss_bytes(&self) -> Option<u64> {
        self.inner.peak_rss_bytes()
    }
    async fn zone_set(
        &mut self,
        resources: Vec<xds_vocabulary::kds::KdsResource>,
    ) -> Result<(), ClientError> {
        self.inner.zone_set(resources).await
    }

    async fn zone_remove(
        &mut self,
        kuma_type: &str,
        names: &[xds_vocabulary::kds::KdsName],
    ) -> Result<(), ClientError> {
        self.inner.zone_remove(kuma_type, names).await
    }

    async fn shutdown(&mut self) {
        self.inner.shutdown().await
    }
}
