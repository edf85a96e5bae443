//! The debug lines of the core's events that need no reaction (route changes, relays
//! dropped, registry records ignored): structured fields with ids in decimal and reasons as
//! their short names, never the `Debug` of the core's enums.

use switchboard_core::{
    connector::RouteEvent,
    node::{Event, RegistryIgnored},
};
use tracing::debug;

/// Logs `event` of node `id` at debug level.
pub(super) fn log_event(id: u64, event: &Event) {
    match event {
        Event::Route(route) => log_route(id, route),
        Event::ForwardDropped { src, dst, msg_type } => {
            debug!(
                id,
                src = src.0,
                dst = dst.0,
                msg_type,
                "relay dropped a message"
            );
        }
        Event::RegistryIgnored(ignored) => log_ignored(id, ignored),
        // Every other event has a line of its own in the driver; one added to the core
        // later is named by its kind only.
        _ => debug!(id, "node event"),
    }
}

fn log_route(id: u64, event: &RouteEvent) {
    let target = event.target().0;
    match *event {
        RouteEvent::Ready { via, .. } => {
            debug!(id, target, via = via.map(|v| v.0), "route ready");
        }
        RouteEvent::Unready { .. } => debug!(id, target, "route unready"),
        RouteEvent::Removed {
            reason, endpoint, ..
        } => debug!(
            id,
            target,
            reason = reason.as_str(),
            endpoint,
            "route removed"
        ),
        RouteEvent::ReconnectScheduled { attempt, .. } => {
            debug!(id, target, attempt, "route reconnect scheduled");
        }
        RouteEvent::WaitingDiscovery { .. } => {
            debug!(id, target, "route waiting for discovery");
        }
        RouteEvent::TopologyLost { .. } => debug!(id, target, "route lost its topology"),
        _ => debug!(id, target, "route event"),
    }
}

fn log_ignored(id: u64, ignored: &RegistryIgnored) {
    match ignored {
        RegistryIgnored::Discovery { id: record } => {
            debug!(id, record = record.0, "registry discovery record ignored");
        }
        RegistryIgnored::StaleTopology {
            id: record,
            revision,
            held,
        } => debug!(
            id,
            record = record.0,
            revision,
            held,
            "stale registry topology record ignored"
        ),
        RegistryIgnored::Topology(error) => {
            debug!(id, %error, "registry topology record ignored");
        }
        RegistryIgnored::OwnTopologyDelete => {
            debug!(id, "delete of this node's own topology record ignored");
        }
        _ => debug!(id, "registry record ignored"),
    }
}

/// The short name of a frame dropped off its route.
pub(super) fn off_route_frame(frame: switchboard_core::perimeter::OffRouteFrame) -> &'static str {
    use switchboard_core::perimeter::OffRouteFrame;
    match frame {
        OffRouteFrame::Ack => "ack",
        OffRouteFrame::Unreachable => "unreachable",
        _ => "other",
    }
}
