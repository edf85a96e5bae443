//! Lease machine decisions at exact instants.

use super::{
    records::{expected_discovery, expected_topology, layout},
    *,
};
use crate::time::Instant;

fn at(secs: u64) -> Instant {
    Instant::from_secs(secs)
}

const LEASE: i64 = 0x6d2a_0000_0001;

/// Granted at 0 and registered.
fn active() -> LeaseState {
    let mut l = LeaseState::new(LeaseConfig::default());
    assert_eq!(l.poll(at(0)), LeaseAction::Grant { ttl_secs: 31 });
    assert_eq!(l.poll(at(0)), LeaseAction::Wait { until: None });
    l.on_granted(at(0), LEASE);
    assert_eq!(l.poll(at(0)), LeaseAction::Register { lease: LEASE });
    assert!(!l.is_registered());
    l.on_registered(at(0), &RegisterOutcome::Registered { revision: 9 });
    assert!(l.is_registered());
    l
}

#[test]
fn keepalive_every_ten_seconds() {
    let mut l = active();
    assert_eq!(
        l.poll(at(0)),
        LeaseAction::Wait {
            until: Some(at(10))
        }
    );
    assert_eq!(l.poll(at(10)), LeaseAction::KeepAlive { lease: LEASE });
    assert_eq!(
        l.poll(at(10)),
        LeaseAction::Wait {
            until: Some(at(20))
        }
    );
    l.on_keepalive(at(10), 31);
    assert_eq!(l.poll(at(20)), LeaseAction::KeepAlive { lease: LEASE });
    l.on_keepalive(at(20), 31);
    assert_eq!(
        l.poll(at(20)),
        LeaseAction::Wait {
            until: Some(at(30))
        }
    );
    assert_eq!(l.stats().keepalives, 2);
}

#[test]
fn keepalive_ttl_zero_is_lost_and_registration_replays() {
    let mut l = active();
    assert_eq!(l.poll(at(10)), LeaseAction::KeepAlive { lease: LEASE });
    l.on_keepalive(at(10), 0);
    assert_eq!(l.lease(), 0);
    assert!(!l.is_registered());
    assert_eq!(l.poll(at(10)), LeaseAction::Grant { ttl_secs: 31 });
    l.on_granted(at(11), LEASE + 1);
    assert_eq!(l.poll(at(11)), LeaseAction::Register { lease: LEASE + 1 });
    l.on_registered(at(11), &RegisterOutcome::Registered { revision: 30 });
    assert_eq!(
        l.poll(at(11)),
        LeaseAction::Wait {
            until: Some(at(21))
        }
    );
    assert_eq!(
        (l.stats().lost, l.stats().grants, l.stats().registrations),
        (1, 2, 2)
    );
}

#[test]
fn broken_stream_past_ttl_checks_time_to_live() {
    let mut l = active();
    l.on_keepalive(at(0), 31);
    assert_eq!(l.poll(at(10)), LeaseAction::KeepAlive { lease: LEASE });
    l.on_keepalive_failed(at(10));
    assert_eq!(
        l.poll(at(10)),
        LeaseAction::Wait {
            until: Some(at(13))
        }
    );
    assert_eq!(l.poll(at(13)), LeaseAction::KeepAlive { lease: LEASE });
    l.on_keepalive_failed(at(13));
    // Retries every 3 s until the TTL (31 s after the last success at 0) has passed.
    let mut t = 16;
    while t < 31 {
        assert_eq!(l.poll(at(t)), LeaseAction::KeepAlive { lease: LEASE });
        l.on_keepalive_failed(at(t));
        t += 3;
    }
    assert_eq!(t, 31);
    assert_eq!(
        l.poll(at(30)),
        LeaseAction::Wait {
            until: Some(at(31))
        }
    );
    assert_eq!(
        l.poll(at(31)),
        LeaseAction::CheckTimeToLive { lease: LEASE }
    );
    assert_eq!(l.poll(at(31)), LeaseAction::Wait { until: None });
    // etcd unreachable: check again after 3 s.
    l.on_time_to_live_failed(at(32));
    assert_eq!(
        l.poll(at(34)),
        LeaseAction::Wait {
            until: Some(at(35))
        }
    );
    assert_eq!(
        l.poll(at(35)),
        LeaseAction::CheckTimeToLive { lease: LEASE }
    );
    // The lease survived (etcd restarted, deadline reset): reopen the keepalive at once.
    l.on_time_to_live(at(36), 25);
    assert!(l.is_registered());
    assert_eq!(l.poll(at(36)), LeaseAction::KeepAlive { lease: LEASE });
    assert_eq!(l.stats().lost, 0);
}

#[test]
fn time_to_live_gone_is_lost() {
    let mut l = active();
    assert_eq!(l.poll(at(10)), LeaseAction::KeepAlive { lease: LEASE });
    assert_eq!(l.poll(at(20)), LeaseAction::KeepAlive { lease: LEASE });
    assert_eq!(l.poll(at(30)), LeaseAction::KeepAlive { lease: LEASE });
    assert_eq!(
        l.poll(at(31)),
        LeaseAction::CheckTimeToLive { lease: LEASE }
    );
    l.on_time_to_live(at(31), -1);
    assert_eq!(l.poll(at(31)), LeaseAction::Grant { ttl_secs: 31 });
    assert_eq!(l.stats().lost, 1);
}

#[test]
fn conflicts_are_retried_not_overwritten() {
    let mut l = LeaseState::new(LeaseConfig::default());
    assert_eq!(l.poll(at(0)), LeaseAction::Grant { ttl_secs: 31 });
    l.on_grant_failed(at(0));
    assert_eq!(l.poll(at(1)), LeaseAction::Wait { until: Some(at(3)) });
    assert_eq!(l.poll(at(3)), LeaseAction::Grant { ttl_secs: 31 });
    l.on_granted(at(3), LEASE);
    assert_eq!(l.poll(at(3)), LeaseAction::Register { lease: LEASE });
    let txn = RegistrationTxn::plan(&layout(), &expected_discovery(0), &expected_topology(0));
    let conflict = txn.outcome(false, 40, None);
    l.on_registered(at(4), &conflict);
    assert!(!l.is_registered());
    assert_eq!(
        l.poll(at(4)),
        LeaseAction::Wait {
            until: Some(at(13))
        }
    );
    assert_eq!(l.poll(at(13)), LeaseAction::KeepAlive { lease: LEASE });
    assert_eq!(
        l.poll(at(13)),
        LeaseAction::Wait {
            until: Some(at(14))
        }
    );
    assert_eq!(l.poll(at(14)), LeaseAction::Register { lease: LEASE });
    l.on_register_failed(at(14));
    assert_eq!(l.poll(at(17)), LeaseAction::Register { lease: LEASE });
    l.on_registered(at(17), &RegisterOutcome::Registered { revision: 50 });
    assert!(l.is_registered());
    assert_eq!((l.stats().conflicts, l.stats().registrations), (1, 1));
}

#[test]
fn shutdown_revokes_the_lease() {
    let mut l = active();
    l.shutdown();
    assert_eq!(l.poll(at(5)), LeaseAction::Revoke { lease: LEASE });
    assert_eq!(l.poll(at(5)), LeaseAction::Wait { until: None });
    assert!(!l.is_closed());
    l.on_revoked();
    assert!(l.is_closed());
    assert_eq!(l.lease(), 0);
    // Late answers change nothing.
    l.on_keepalive(at(6), 31);
    assert_eq!(l.poll(at(100)), LeaseAction::Wait { until: None });

    let mut fresh = LeaseState::new(LeaseConfig::default());
    fresh.shutdown();
    assert!(fresh.is_closed());
}

#[test]
fn own_key_deleted_registers_again_at_once_and_taken_over_yields_until_deleted() {
    let mut l = active();
    // Our own writes (registration, topology rewrites) change nothing.
    l.on_own_key(at(1), false, LEASE);
    assert!(l.is_registered());
    // Deleted under us (a copy that had it stopped, or a hand): register again now.
    l.on_own_key(at(2), true, 0);
    assert!(!l.is_registered(), "not registered until the txn commits");
    assert_eq!(l.poll(at(2)), LeaseAction::Register { lease: LEASE });
    l.on_registered(at(2), &RegisterOutcome::Registered { revision: 20 });
    assert!(l.is_registered());
    // Written under another lease: a live copy took the id over. Yield, do not take it back.
    l.on_own_key(at(3), false, LEASE + 1);
    assert!(!l.is_registered());
    assert_eq!(
        l.poll(at(3)),
        LeaseAction::Wait {
            until: Some(at(10))
        }
    );
    assert_eq!(l.poll(at(10)), LeaseAction::KeepAlive { lease: LEASE });
    assert_eq!(
        l.poll(at(10)),
        LeaseAction::Wait {
            until: Some(at(20))
        }
    );
    // Its holder stops (its revoke deletes the key): register again at once.
    l.on_own_key(at(11), true, 0);
    assert_eq!(l.poll(at(11)), LeaseAction::Register { lease: LEASE });
    l.on_registered(at(11), &RegisterOutcome::Registered { revision: 30 });
    assert!(l.is_registered());
    assert_eq!(l.stats().registrations, 3);
}
