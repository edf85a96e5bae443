//! Every rule of the evidence book, shown to fire and shown not to fire.

use alloc::vec;

use super::*;
use crate::wire::RefuseReason;

const PEER: NodeId = NodeId(7);
const OTHER: NodeId = NodeId(8);
const OWN: NodeId = NodeId(1);
/// The suspicion bound of every book here (`Config::suspicion_timeout`'s default).
pub(super) const BOUND: Duration = Duration::from_secs(1);
/// The instant the books' links close and dials fail.
pub(super) const T0: Instant = Instant::from_nanos(5_000_000_000);

/// A link to `PEER` (incarnation 40) that was up and closed without a word.
pub(super) fn up_link_closed() -> Down {
    Down {
        peer: Some(PEER),
        dialed: None,
        incarnation: 40,
        refused: None,
        bye: None,
    }
}

/// A dial to `PEER` that failed before any handshake.
pub(super) fn failed_dial() -> Down {
    Down {
        peer: None,
        dialed: Some(PEER),
        incarnation: 0,
        refused: None,
        bye: None,
    }
}

pub(super) fn nothing_up(_: NodeId) -> bool {
    false
}

pub(super) fn nothing_announced(_: NodeId) -> u64 {
    0
}

/// The book after `PEER`'s last up link (incarnation 40) closed.
pub(super) fn with_suspect() -> EvidenceBook {
    let mut book = EvidenceBook::new(BOUND);
    let death = book.link_gone(T0, &up_link_closed(), false, nothing_up, nothing_announced);
    assert_eq!(death, None);
    assert!(book.is_suspect(PEER));
    book
}

#[test]
fn the_last_up_link_closing_makes_a_suspect_and_another_up_link_does_not() {
    with_suspect();
    let mut book = EvidenceBook::new(BOUND);
    assert_eq!(
        book.link_gone(
            T0,
            &up_link_closed(),
            false,
            |p| p == PEER,
            nothing_announced
        ),
        None
    );
    assert!(!book.is_suspect(PEER), "another link to it is still up");
    // A link whose handshake never showed an incarnation makes no suspect.
    let unknown_life = Down {
        incarnation: 0,
        ..up_link_closed()
    };
    assert_eq!(
        book.link_gone(T0, &unknown_life, false, nothing_up, nothing_announced),
        None
    );
    assert!(!book.is_suspect(PEER));
}

#[test]
fn a_bye_other_than_shutdown_is_a_live_peer_closing_on_purpose() {
    for reason in [
        ByeReason::Unneeded,
        ByeReason::Replaced,
        ByeReason::Restarting,
    ] {
        let mut book = EvidenceBook::new(BOUND);
        let down = Down {
            bye: Some(reason),
            ..up_link_closed()
        };
        assert_eq!(
            book.link_gone(T0, &down, true, nothing_up, nothing_announced),
            None
        );
        assert!(!book.is_suspect(PEER), "{reason:?}");
    }
    // A shutdown `Bye` is no proof of life: the peer becomes a suspect.
    let mut book = EvidenceBook::new(BOUND);
    let down = Down {
        bye: Some(ByeReason::Shutdown),
        ..up_link_closed()
    };
    assert_eq!(
        book.link_gone(T0, &down, false, nothing_up, nothing_announced),
        None
    );
    assert!(book.is_suspect(PEER));
}

#[test]
fn stopped_heartbeats_of_a_known_life_are_its_death() {
    let mut book = EvidenceBook::new(BOUND);
    assert_eq!(
        book.link_gone(T0, &up_link_closed(), true, nothing_up, nothing_announced),
        Some(Death {
            peer: PEER,
            incarnation: 40,
            evidence: Evidence::HeartbeatsStopped
        })
    );
    let unknown_life = Down {
        incarnation: 0,
        ..up_link_closed()
    };
    assert_eq!(
        book.link_gone(T0, &unknown_life, true, nothing_up, nothing_announced),
        None
    );
}

/// Changed expectation: a failed dial of a suspect alone is no longer its death (a refusal is
/// a fact about the path; issue 23) — it is its death once corroborated, here by the
/// registry's lost session (the other corroborations: `tests_suspicion.rs`).
#[test]
fn a_failed_dial_of_a_suspect_is_its_death_when_corroborated_unless_the_registry_names_a_newer_life()
 {
    let redial_failed = Some(Death {
        peer: PEER,
        incarnation: 40,
        evidence: Evidence::RedialFailed,
    });
    let mut book = with_suspect();
    book.session(PEER, 40, true);
    assert_eq!(
        book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced),
        redial_failed
    );
    let mut book = with_suspect();
    book.session(PEER, 40, true);
    assert_eq!(
        book.link_gone(T0, &failed_dial(), false, nothing_up, |_| 40),
        redial_failed,
        "the registry names the same life"
    );
    let mut book = with_suspect();
    assert_eq!(
        book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced),
        None,
        "not corroborated: in doubt"
    );
    assert!(book.in_doubt(PEER));
    let mut book = with_suspect();
    book.session(PEER, 40, true);
    assert_eq!(
        book.link_gone(T0, &failed_dial(), false, nothing_up, |_| 41),
        None
    );
    assert!(!book.is_suspect(PEER), "a newer life clears the suspicion");
}

#[test]
fn a_refused_or_handshaken_dial_and_a_dial_of_a_non_suspect_prove_nothing() {
    let mut book = with_suspect();
    let refused = Down {
        refused: Some(RefuseReason::WrongCluster),
        ..failed_dial()
    };
    assert_eq!(
        book.link_gone(T0, &refused, false, nothing_up, nothing_announced),
        None
    );
    assert!(
        book.is_suspect(PEER),
        "a refusal proves the peer alive and clears nothing"
    );
    let reached = Down {
        peer: Some(PEER),
        incarnation: 40,
        ..failed_dial()
    };
    assert_eq!(
        book.link_gone(T0, &reached, false, |p| p == PEER, nothing_announced),
        None
    );
    let mut book = EvidenceBook::new(BOUND);
    assert_eq!(
        book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced),
        None
    );
}

#[test]
fn a_link_up_clears_the_suspicion() {
    let mut book = with_suspect();
    book.link_up(OTHER);
    assert!(book.is_suspect(PEER));
    book.link_up(PEER);
    assert!(!book.is_suspect(PEER));
    assert_eq!(
        book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced),
        None
    );
}

#[test]
fn a_death_is_acted_on_once_per_incarnation_and_says_whether_it_was_suspected() {
    let mut book = with_suspect();
    assert_eq!(book.record_death(PEER, 40), Some(true));
    assert!(!book.is_suspect(PEER));
    assert_eq!(
        book.record_death(PEER, 40),
        None,
        "a second word of the same death"
    );
    assert_eq!(book.record_death(PEER, 41), Some(false), "another life");
    assert_eq!(
        book.record_death(PEER, 40),
        Some(false),
        "the book keeps the last one"
    );
    assert_eq!(book.record_death(OTHER, 40), Some(false), "per peer");
    // Incarnation 0 (never seen) always counts, and still clears a suspicion.
    let mut book = with_suspect();
    assert_eq!(book.record_death(PEER, 0), Some(true));
    assert_eq!(book.record_death(PEER, 0), Some(false));
    // A death that was acted on already still clears a suspicion.
    let mut book = with_suspect();
    assert_eq!(book.record_death(PEER, 40), Some(true));
    let mut book2 = book.clone();
    book2.link_gone(T0, &up_link_closed(), false, nothing_up, nothing_announced);
    assert_eq!(book2.record_death(PEER, 40), None);
    assert!(!book2.is_suspect(PEER));
}

#[test]
fn relayed_sources_are_kept_per_target_without_this_node_and_forgotten_on_death() {
    let mut book = EvidenceBook::new(BOUND);
    book.note_relayed(OWN, NodeId(30), PEER);
    book.note_relayed(OWN, NodeId(20), PEER);
    book.note_relayed(OWN, NodeId(30), PEER);
    book.note_relayed(OWN, OWN, PEER);
    book.note_relayed(OWN, NodeId(20), OTHER);
    assert_eq!(book.sources(PEER), vec![NodeId(20), NodeId(30)]);
    assert_eq!(book.sources(PEER), vec![NodeId(20), NodeId(30)], "kept");
    assert_eq!(book.take_sources(PEER), Some(vec![NodeId(20), NodeId(30)]));
    assert_eq!(book.take_sources(PEER), None, "forgotten");
    assert_eq!(book.sources(PEER), vec![]);
    assert_eq!(book.sources(OTHER), vec![NodeId(20)]);
    let mut own_only = EvidenceBook::new(BOUND);
    own_only.note_relayed(OWN, OWN, PEER);
    assert_eq!(own_only.take_sources(PEER), None);
}

#[test]
fn only_the_links_own_evidence_closes_zombie_links() {
    for evidence in [Evidence::RedialFailed, Evidence::HeartbeatsStopped] {
        assert!(EvidenceBook::closes_links(evidence, 40), "{evidence:?}");
        assert!(!EvidenceBook::closes_links(evidence, 0), "{evidence:?}");
    }
    for evidence in [
        Evidence::RegistryDeleted,
        Evidence::NewIncarnation,
        Evidence::RelayNotice,
    ] {
        assert!(!EvidenceBook::closes_links(evidence, 40), "{evidence:?}");
    }
}

#[test]
fn a_death_is_reported_when_it_changed_anything() {
    let book = EvidenceBook::new(BOUND);
    assert!(book.is_reported(PEER, true, 0, false, 0));
    assert!(book.is_reported(PEER, false, 1, false, 0));
    assert!(book.is_reported(PEER, false, 0, true, 0));
    assert!(book.is_reported(PEER, false, 0, false, 40));
    assert!(!book.is_reported(PEER, false, 0, false, 0));
}

#[test]
fn a_clients_leaving_is_never_reported_and_makes_no_suspect() {
    let mut book = EvidenceBook::new(BOUND);
    book.note_record(PEER, true);
    // Whatever the death changed, a client's is not reported; another peer's still is.
    assert!(!book.is_reported(PEER, true, 3, true, 40));
    assert!(book.is_reported(OTHER, false, 0, false, 40));
    // Its closed link makes no suspect: nothing probes it, so no redial fails.
    assert_eq!(
        book.link_gone(T0, &up_link_closed(), false, nothing_up, nothing_announced),
        None
    );
    assert!(!book.is_suspect(PEER));
    assert_eq!(
        book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced),
        None
    );
    // Stopped heartbeats of a client are acted on (what reached it ends) but not reported.
    let death = book.link_gone(T0, &up_link_closed(), true, nothing_up, nothing_announced);
    assert_eq!(death.map(|d| d.evidence), Some(Evidence::HeartbeatsStopped));
    assert_eq!(book.record_death(PEER, 40), Some(false));
    assert!(!book.is_reported(PEER, false, 1, false, 40));
    // Once its record is gone (or says it is a member now) the id is a member's again.
    book.record_gone(PEER);
    assert!(book.is_reported(PEER, false, 0, false, 41));
    book.note_record(PEER, true);
    book.note_record(PEER, false);
    assert!(book.is_reported(PEER, false, 0, false, 41));
    assert_eq!(
        book.link_gone(T0, &up_link_closed(), false, nothing_up, nothing_announced),
        None
    );
    assert!(book.is_suspect(PEER));
}
