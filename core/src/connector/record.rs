//! Route records, their flags, and the read-only view of a record that queries return.

use alloc::{collections::BTreeSet, vec::Vec};
use core::{fmt, ops};

use crate::{ids::NodeId, time::Instant};

/// The state bits of a route record (libatapp's `atbus_connection_handle_flags_t`, same
/// values).
///
/// A small bit set: combine with `|`, test with [`contains`](RouteFlags::contains).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RouteFlags(u8);

impl RouteFlags {
    /// No flag set.
    pub const EMPTY: RouteFlags = RouteFlags(0);
    /// We initiated this route (a `send` to the target opened it). Never cleared; an active
    /// record is kept while it is unready, a passive one (a pure proxy hop) only while
    /// records route through it.
    pub const ACTIVE: RouteFlags = RouteFlags(0x01);
    /// The route needs the target's discovery record (its address) before it can dial.
    /// Set for peers only; cleared by a discovery put for the target.
    pub const WAIT_DISCOVERY: RouteFlags = RouteFlags(0x02);
    /// The target's topology record was deleted; the record is removed at its lost deadline
    /// unless a topology put arrives first (or its direct link is still up, see the module
    /// docs).
    pub const LOST_TOPOLOGY: RouteFlags = RouteFlags(0x04);
    /// Data for the target can be handed to a link now (directly or through the proxy).
    pub const READY: RouteFlags = RouteFlags(0x08);

    /// The raw bits (libatapp's values).
    #[must_use]
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Flags from raw bits; unknown bits are dropped.
    #[must_use]
    pub const fn from_bits_truncate(bits: u8) -> RouteFlags {
        RouteFlags(bits & 0x0f)
    }

    /// Whether every flag of `other` is set in `self`.
    #[must_use]
    pub const fn contains(self, other: RouteFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no flag is set.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Sets (`on`) or clears the flags of `flag`.
    pub fn set(&mut self, flag: RouteFlags, on: bool) {
        if on {
            self.0 |= flag.0;
        } else {
            self.0 &= !flag.0;
        }
    }
}

impl ops::BitOr for RouteFlags {
    type Output = RouteFlags;
    fn bitor(self, rhs: RouteFlags) -> RouteFlags {
        RouteFlags(self.0 | rhs.0)
    }
}

impl fmt::Debug for RouteFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("EMPTY");
        }
        let names = [
            (RouteFlags::ACTIVE, "ACTIVE"),
            (RouteFlags::WAIT_DISCOVERY, "WAIT_DISCOVERY"),
            (RouteFlags::LOST_TOPOLOGY, "LOST_TOPOLOGY"),
            (RouteFlags::READY, "READY"),
        ];
        let mut first = true;
        for (flag, name) in names {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}

/// One route record: how this node reaches one remote node (libatapp's
/// `atbus_connection_handle_data`).
#[derive(Clone, Debug, Default)]
pub(super) struct RouteRecord {
    pub(super) flags: RouteFlags,
    /// An endpoint (a pending queue) is bound to this record: its removal must fail that
    /// queue. Set by [`super::Connector::open_route`].
    pub(super) endpoint: bool,
    /// The record this one routes through; [`NodeId::NONE`] = direct (or loopback).
    pub(super) proxy: NodeId,
    /// Records that route through this one, ascending (deterministic cascades).
    pub(super) proxy_for: BTreeSet<NodeId>,
    /// Reconnect attempts scheduled since the last reset (ready, discovery event, upstream
    /// switch).
    pub(super) retry_count: u32,
    /// Before this instant no new dial is started for the record (its backoff window).
    pub(super) next_reconnect: Option<Instant>,
    /// When a `LOST_TOPOLOGY` record is given up.
    pub(super) lost_deadline: Option<Instant>,
    /// A dial or the link of this (direct) record failed since it was last ready or its
    /// count was reset ([`super::Connector::is_failing`]).
    pub(super) failed: bool,
}

impl RouteRecord {
    pub(super) fn has(&self, flag: RouteFlags) -> bool {
        self.flags.contains(flag)
    }

    /// Inside the backoff window: a dial for this record was started and the next one is not
    /// due yet.
    pub(super) fn in_backoff(&self, now: Instant) -> bool {
        self.next_reconnect.is_some_and(|next| next > now)
    }
}

/// A snapshot of one route record, for tests, admin pages and the simulator's invariant
/// checks. Returned by [`super::Connector::view`] (and `Inspect::route`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouteView {
    /// The remote node this record routes to.
    pub target: NodeId,
    /// Its flags.
    pub flags: RouteFlags,
    /// The record it routes through; `None` = direct.
    pub proxy: Option<NodeId>,
    /// Records routed through it, ascending.
    pub proxy_for: Vec<NodeId>,
    /// Reconnect attempts since the last reset.
    pub retry_count: u32,
    /// End of its backoff window, if one was started.
    pub next_reconnect: Option<Instant>,
    /// Its lost-topology deadline, if its topology record was deleted.
    pub lost_deadline: Option<Instant>,
    /// Its one timer, if armed.
    pub timer: Option<Instant>,
    /// Whether an endpoint's pending queue is bound to it.
    pub endpoint: bool,
}
