//! The suspicion rules ([`suspicion`](super::suspicion)) on virtual time: a failed redial is a
//! doubt; the registry's lost session, an indirect probe's word or the bound corroborate it
//! at an exact instant; a link up, a newer life or another path up end or renew it. Each
//! shown to fire and not to fire.

use alloc::vec;

use super::tests::{
    BOUND, T0, failed_dial, nothing_announced, nothing_up, up_link_closed, with_suspect,
};
use super::*;
use crate::wire::ProbeVerdict;

const PEER: NodeId = NodeId(7);
const MS: Duration = Duration::from_millis(1);
const NS: Duration = Duration::from_nanos(1);

fn dead(incarnation: u64) -> Death {
    Death {
        peer: PEER,
        incarnation,
        evidence: Evidence::RedialFailed,
    }
}

/// The book after `PEER`'s link (incarnation 40) closed and a redial failed at `T0`.
fn in_doubt() -> EvidenceBook {
    let mut book = with_suspect();
    let death = book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(death, None);
    assert!(book.in_doubt(PEER));
    book
}

/// The bound: at exactly the first failed redial + the bound the suspect is due its last
/// probe (once); that probe failing is the death, on its instant.
#[test]
fn an_uncorroborated_doubt_is_probed_a_last_time_at_the_bound_and_its_failure_is_the_death() {
    let mut book = in_doubt();
    assert_eq!(book.next_deadline(), Some(T0 + BOUND));
    assert_eq!(book.due(T0 + BOUND - NS), vec![]);
    assert_eq!(book.due(T0 + BOUND), vec![PEER]);
    assert_eq!(
        book.next_deadline(),
        None,
        "the last probe's outcome decides"
    );
    assert_eq!(book.due(T0 + BOUND * 2), vec![], "once");
    let last = T0 + BOUND + MS;
    let failed = book.link_gone(last, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(failed, Some(dead(40)));
    assert_eq!(book.record_death(PEER, 40), Some(true));
    assert!(!book.is_suspect(PEER), "the death ends the suspicion");
}

/// A path back by the bound: the last probe links, the suspicion ends, nothing dies.
#[test]
fn a_last_probe_that_links_ends_the_suspicion() {
    let mut book = in_doubt();
    assert_eq!(book.due(T0 + BOUND), vec![PEER]);
    book.link_up(PEER);
    assert!(!book.is_suspect(PEER));
    let later = T0 + BOUND * 2;
    let dial = book.link_gone(later, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(dial, None);
    // A suspect this node may no longer dial a last time is no suspect any more: nothing the
    // links can tell (a later failed dial proves nothing either).
    let mut book = in_doubt();
    assert_eq!(book.due(T0 + BOUND), vec![PEER]);
    book.no_last_probe(PEER);
    assert!(!book.is_suspect(PEER));
    let later = T0 + BOUND + MS;
    let dial = book.link_gone(later, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(dial, None);
}

#[test]
fn a_suspect_not_in_doubt_has_no_bound() {
    // Its link closed, no redial failed yet (the probe is in flight): nothing is due.
    let mut book = with_suspect();
    assert_eq!(book.next_deadline(), None);
    assert_eq!(book.due(T0 + BOUND * 10), vec![]);
    assert!(book.is_suspect(PEER) && !book.in_doubt(PEER));
}

#[test]
fn later_failed_redials_keep_the_doubts_start() {
    let mut book = in_doubt();
    let later = T0 + BOUND / 2;
    let again = book.link_gone(later, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(again, None);
    assert_eq!(book.next_deadline(), Some(T0 + BOUND));
    assert_eq!(book.due(T0 + BOUND), vec![PEER]);
}

#[test]
fn a_link_up_or_a_newer_life_ends_the_doubt_before_the_bound() {
    let mut book = in_doubt();
    book.link_up(PEER);
    assert!(!book.is_suspect(PEER));
    assert_eq!(book.next_deadline(), None);
    assert_eq!(book.due(T0 + BOUND), vec![]);
    // A later failed dial of a peer no longer suspected proves nothing.
    let dial = book.link_gone(
        T0 + BOUND,
        &failed_dial(),
        false,
        nothing_up,
        nothing_announced,
    );
    assert_eq!(dial, None);
    assert!(!book.in_doubt(PEER));

    let mut book = in_doubt();
    let newer = book.link_gone(T0 + MS, &failed_dial(), false, nothing_up, |_| 41);
    assert_eq!(newer, None);
    assert!(
        !book.is_suspect(PEER),
        "the dial failed against a replaced life"
    );
    assert_eq!(book.due(T0 + BOUND), vec![]);
}

#[test]
fn a_lost_session_corroborates_a_doubt_whichever_comes_first() {
    // The session is lost after the redial failed: dead at the session's news.
    let mut book = in_doubt();
    assert_eq!(book.session(PEER, 40, true), Some(dead(40)));
    // Before it: dead at the failed redial.
    let mut book = with_suspect();
    assert_eq!(book.session(PEER, 40, true), None, "no redial failed yet");
    assert!(book.is_suspect(PEER) && !book.in_doubt(PEER));
    let dial = book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(dial, Some(dead(40)));
    // An unstated incarnation (0) is the suspected one's.
    let mut book = in_doubt();
    assert_eq!(book.session(PEER, 0, true), Some(dead(40)));
}

#[test]
fn a_session_of_another_life_or_one_back_corroborates_nothing() {
    let mut book = in_doubt();
    assert_eq!(book.session(PEER, 39, true), None, "another life's session");
    assert_eq!(book.session(PEER, 40, false), None, "a session back");
    assert!(book.in_doubt(PEER));
    // Lost, then back (it registered again): a failed redial is a doubt again.
    let mut book = with_suspect();
    assert_eq!(book.session(PEER, 40, true), None);
    assert_eq!(book.session(PEER, 40, false), None);
    let dial = book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(dial, None);
    assert!(book.in_doubt(PEER));
    // A session lost for a peer not suspected: nothing, and its record's deletion forgets it.
    let mut book = EvidenceBook::new(BOUND);
    assert_eq!(book.session(PEER, 40, true), None);
    book.record_gone(PEER);
    assert_eq!(
        book.link_gone(T0, &up_link_closed(), false, nothing_up, nothing_announced),
        None
    );
    let dial = book.link_gone(T0, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(dial, None, "the forgotten loss corroborates nothing");
}

#[test]
fn an_indirect_probe_answer_dead_corroborates_alive_ends_the_doubt_unknown_changes_nothing() {
    let mut book = in_doubt();
    assert_eq!(book.probe_answered(PEER, 40, ProbeVerdict::Unknown), None);
    assert!(book.in_doubt(PEER));
    assert_eq!(
        book.probe_answered(PEER, 39, ProbeVerdict::Dead),
        None,
        "another life"
    );
    assert_eq!(
        book.probe_answered(PEER, 40, ProbeVerdict::Dead),
        Some(dead(40))
    );

    // Alive: another path is up. The doubt ends (no death at the bound); it stays a suspect,
    // and the next failed redial doubts again from its own instant.
    let mut book = in_doubt();
    assert_eq!(book.probe_answered(PEER, 40, ProbeVerdict::Alive), None);
    assert!(book.is_suspect(PEER) && !book.in_doubt(PEER));
    assert_eq!(book.next_deadline(), None);
    assert_eq!(book.due(T0 + BOUND), vec![]);
    let again = T0 + BOUND * 3;
    let dial = book.link_gone(again, &failed_dial(), false, nothing_up, nothing_announced);
    assert_eq!(dial, None);
    assert_eq!(book.next_deadline(), Some(again + BOUND));

    // A suspect not in doubt (its redial not failed yet): an answer changes nothing.
    let mut book = with_suspect();
    assert_eq!(book.probe_answered(PEER, 40, ProbeVerdict::Dead), None);
    assert_eq!(book.probe_answered(PEER, 40, ProbeVerdict::Alive), None);
    assert!(book.is_suspect(PEER) && !book.in_doubt(PEER));
}

#[test]
fn a_probed_node_answers_alive_only_for_the_life_its_up_link_runs() {
    let verdict = EvidenceBook::verdict;
    assert_eq!(verdict(40, 40, 0), ProbeVerdict::Alive);
    assert_eq!(verdict(40, 40, 41), ProbeVerdict::Alive, "linked wins");
    assert_eq!(
        verdict(40, 41, 0),
        ProbeVerdict::Dead,
        "another life linked"
    );
    assert_eq!(
        verdict(40, 0, 41),
        ProbeVerdict::Dead,
        "another life announced"
    );
    assert_eq!(verdict(40, 0, 40), ProbeVerdict::Unknown);
    assert_eq!(verdict(40, 0, 0), ProbeVerdict::Unknown);
}

#[test]
fn a_death_from_elsewhere_ends_the_doubt_and_its_bound() {
    let mut book = in_doubt();
    assert_eq!(book.record_death(PEER, 40), Some(true));
    assert_eq!(book.next_deadline(), None);
    assert_eq!(book.due(T0 + BOUND), vec![]);
}
