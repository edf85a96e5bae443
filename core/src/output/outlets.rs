//! [`Outlets`], where the node's layers put what they produce: the driver's output queue and
//! the RPC machine's inputs. What is the RPC machine's is routed to it where it arises, never through
//! the driver's queue: a message of the reserved type from the link layer
//! ([`LinkSink::received`]), the outcome of one of its messages (ids with
//! [`MsgId::is_rpc`], from the outboxes' [`OutcomeSink`]), and evidence of a peer's death or
//! restart (the [`Event::PeerDead`] and [`Event::PeerRestarted`] pushed for the driver, read
//! as they pass). The node hands the inputs to the machine before it returns to the driver
//! (`node/rpc.rs`). The outboxes and the link machine write into it directly: it is their
//! [`OutcomeSink`], [`OutboxSink`] and [`LinkSink`].

use alloc::{collections::VecDeque, string::String};

use bytes::Bytes;

use super::{OutQueue, Output};
use crate::{
    bus::links::{LinkEvent, LinkSink},
    endpoint::OutboxSink,
    event::Event,
    ids::{LinkId, MsgId, NodeId},
    outcome::{Outcome, OutcomeSink},
    rpc::RpcInput,
    wire::{self, RPC_MSG_TYPE},
};

/// The driver's output queue and the RPC machine's inputs; see the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct Outlets {
    /// What the driver takes with `poll_output`.
    pub(crate) queue: OutQueue,
    /// What the RPC machine takes next, in order.
    pub(crate) rpc: VecDeque<RpcInput>,
}

impl Outlets {
    /// Appends `output` for the driver; evidence of a peer's death or restart is the RPC
    /// machine's input too.
    #[inline]
    pub(crate) fn push_back(&mut self, output: Output) {
        match output {
            Output::Event(Event::PeerDead {
                peer,
                incarnation,
                evidence,
            }) => self.rpc.push_back(RpcInput::PeerDead {
                peer,
                incarnation,
                evidence,
            }),
            Output::Event(Event::PeerRestarted { peer, incarnation }) => {
                self.rpc
                    .push_back(RpcInput::PeerRestarted { peer, incarnation });
            }
            _ => {}
        }
        self.queue.push_back(output);
    }

    /// Appends `event` for the driver ([`push_back`](Self::push_back)).
    #[inline]
    pub(crate) fn event(&mut self, event: Event) {
        self.push_back(Output::Event(event));
    }

    /// A message for this node: the RPC machine's if of the reserved type, else the
    /// application's.
    #[inline]
    pub(crate) fn deliver(&mut self, from: NodeId, via: NodeId, msg_type: u32, payload: Bytes) {
        if msg_type == RPC_MSG_TYPE {
            self.rpc.push_back(RpcInput::Message { from, payload });
        } else {
            self.queue.push_back(Output::Received {
                from,
                via,
                msg_type,
                payload,
            });
        }
    }

    /// How a message ended: the RPC machine's if the message is, else the driver's.
    #[inline]
    pub(crate) fn outcome(&mut self, msg: MsgId, outcome: Outcome) {
        if msg.is_rpc() {
            self.rpc.push_back(RpcInput::Outcome { msg, outcome });
        } else {
            self.queue.push_back(Output::Outcome { msg, outcome });
        }
    }
}

/// Outcomes go straight to their owner (the driver's queue or the RPC machine).
impl OutcomeSink for Outlets {
    #[inline]
    fn emit(&mut self, msg: MsgId, outcome: Outcome) {
        self.outcome(msg, outcome);
    }
}

/// Our `Data` frames join the link's open batch.
impl OutboxSink for Outlets {
    #[inline]
    fn transmit_data(&mut self, link: LinkId, data: &wire::Data<'_>) {
        self.queue.push_data(link, data);
    }
}

/// The link machine's effects become outputs, in order; RPC messages go to the RPC machine.
impl LinkSink for Outlets {
    fn connect(&mut self, link: LinkId, peer: NodeId, addr: String) {
        self.queue.push_back(Output::Connect { link, peer, addr });
    }

    fn transmit(&mut self, link: LinkId, bytes: Bytes) {
        self.queue.push_back(Output::Transmit { link, bytes });
    }

    /// A relayed message joins the link's open batch, as the node's own messages do.
    fn transmit_data(&mut self, link: LinkId, data: &wire::Data<'_>) {
        self.queue.push_data(link, data);
    }

    fn close(&mut self, link: LinkId) {
        self.queue.push_back(Output::Close { link });
    }

    fn received(&mut self, from: NodeId, via: NodeId, msg_type: u32, payload: Bytes) {
        self.deliver(from, via, msg_type, payload);
    }

    fn event(&mut self, event: LinkEvent) {
        self.queue.push_back(Output::Event(event.into()));
    }
}
