//! A scripted stand-in node for the simulator's own tests: it records every input with its
//! time and emits exactly the outputs a test pushes, so the link and clock machinery is tested
//! without the connection manager.

use alloc::{collections::VecDeque, vec::Vec};

use bytes::Bytes;

use super::{RegistryEvent, SimNode};
use crate::{
    ids::{LinkId, MsgId, NodeId},
    node::{Output, SendError},
    select::Select,
    time::{Duration, Instant},
};

#[derive(Clone, Debug)]
pub(super) struct PuppetConfig {
    pub(super) id: NodeId,
    /// Send back every received byte batch on the same link.
    pub(super) echo: bool,
    /// The suspicion bound it reports (the path-failure invariant's).
    pub(super) suspicion_bound: Duration,
}

impl PuppetConfig {
    pub(super) fn new(id: u64) -> PuppetConfig {
        PuppetConfig {
            id: NodeId(id),
            echo: false,
            suspicion_bound: Duration::ZERO,
        }
    }
}

/// An input the puppet received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Input {
    Registry(RegistryEvent),
    Accepted(LinkId),
    Connected(LinkId),
    ConnectFailed(LinkId),
    Received(LinkId, Vec<u8>),
    Closed(LinkId),
    Timeout,
    Send(u32, Bytes),
    Shutdown,
}

pub(super) struct Puppet {
    id: NodeId,
    echo: bool,
    suspicion_bound: Duration,
    next_link: u64,
    next_msg: u64,
    pub(super) inputs: Vec<(Instant, Input)>,
    pub(super) outbox: VecDeque<Output>,
    pub(super) deadline: Option<Instant>,
    /// Deadlines to arm one after another as each fires.
    pub(super) timer_plan: VecDeque<Instant>,
    /// Keep the deadline after it fires (a broken node).
    pub(super) stuck: bool,
}

impl Puppet {
    pub(super) fn push(&mut self, output: Output) {
        self.outbox.push_back(output);
    }
}

impl SimNode for Puppet {
    type Config = PuppetConfig;
    type Error = &'static str;

    fn start(config: &PuppetConfig, _now: Instant) -> Result<Puppet, &'static str> {
        if !config.id.is_valid() {
            return Err("id 0");
        }
        Ok(Puppet {
            id: config.id,
            echo: config.echo,
            suspicion_bound: config.suspicion_bound,
            next_link: 100,
            next_msg: 0,
            inputs: Vec::new(),
            outbox: VecDeque::new(),
            deadline: None,
            timer_plan: VecDeque::new(),
            stuck: false,
        })
    }
    fn id(&self) -> NodeId {
        self.id
    }
    fn handle_registry(&mut self, now: Instant, event: RegistryEvent) {
        self.inputs.push((now, Input::Registry(event)));
    }
    fn handle_accepted(&mut self, now: Instant) -> LinkId {
        let link = LinkId(self.next_link);
        self.next_link += 1;
        self.inputs.push((now, Input::Accepted(link)));
        link
    }
    fn handle_connected(&mut self, now: Instant, link: LinkId) {
        self.inputs.push((now, Input::Connected(link)));
    }
    fn handle_connect_failed(&mut self, now: Instant, link: LinkId) {
        self.inputs.push((now, Input::ConnectFailed(link)));
    }
    fn handle_received(&mut self, now: Instant, link: LinkId, bytes: Bytes) {
        self.inputs
            .push((now, Input::Received(link, bytes.to_vec())));
        if self.echo {
            self.push(Output::Transmit { link, bytes });
        }
    }
    fn handle_closed(&mut self, now: Instant, link: LinkId) {
        self.inputs.push((now, Input::Closed(link)));
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.inputs.push((now, Input::Timeout));
        if self.stuck {
            return;
        }
        if self.deadline.is_some_and(|d| d <= now) {
            self.deadline = self.timer_plan.pop_front();
        }
    }
    fn send(
        &mut self,
        now: Instant,
        _target: Select,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<MsgId, SendError> {
        self.next_msg += 1;
        self.inputs.push((now, Input::Send(msg_type, payload)));
        Ok(MsgId(self.next_msg))
    }
    fn shutdown(&mut self, now: Instant) {
        self.inputs.push((now, Input::Shutdown));
    }
    fn poll_output(&mut self) -> Option<Output> {
        self.outbox.pop_front()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }
    fn suspicion_bound(&self) -> Duration {
        self.suspicion_bound
    }
}
