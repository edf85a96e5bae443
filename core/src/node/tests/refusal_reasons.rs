//! A refused link's reason reaches the outcomes of the messages it kept from going out.

use alloc::vec;

use super::*;
use crate::outcome::FailReason;

/// A child configured with another cluster token than its upstream: the upstream refuses
/// every handshake, so messages to it — and through it — wait until their deadline (8 s) and
/// end `Failed(WrongCluster)`, not a bare `Timeout`.
#[test]
fn messages_kept_back_by_a_wrong_cluster_refusal_end_with_that_reason() {
    let mut child = config(0x201, 0x203, 8, false);
    child.cluster_token = "our-cluster".into();
    let mut upstream = config(0x203, 0, 8, false);
    upstream.cluster_token = "their-cluster".into();
    let sibling = {
        let mut c = config(0x202, 0x203, 8, false);
        c.cluster_token = "their-cluster".into();
        c
    };
    let mut sim = sim(vec![child, upstream, sibling]);
    publish(&mut sim, &[(0x203, 0), (0x201, 0x203), (0x202, 0x203)]);
    let to_upstream = send(&mut sim, 0x201, 0x203, b"to-upstream");
    let through = send(&mut sim, 0x201, 0x202, b"through-it");
    sim.advance_to(secs(8) - Duration::from_nanos(1));
    assert_eq!(seen(&sim, 0x201), vec![]);
    sim.advance_to(secs(8));
    assert_eq!(
        seen(&sim, 0x201),
        vec![
            outcome(
                secs(8),
                to_upstream,
                Outcome::Failed(FailReason::WrongCluster)
            ),
            outcome(secs(8), through, Outcome::Failed(FailReason::WrongCluster)),
        ]
    );
    assert_eq!(seen(&sim, 0x203), vec![]);
    assert_eq!(seen(&sim, 0x202), vec![]);
}
