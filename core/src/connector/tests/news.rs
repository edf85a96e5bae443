//! News beats a backoff: a discovery put that arrives while a dial to the same peer is in
//! flight (a replacement under the same id, which may not have listened yet when the dial
//! left) must not be lost when that dial is refused. Exact instants on virtual time, libatapp's
//! matrix schedule (start 2 s, max 16 s, no jitter).

use alloc::vec;

use super::routing::{H, dial, linked_peer, n, scheduled, t};
use super::*;

fn ms(at: Instant, millis: u64) -> Instant {
    at + Duration::from_millis(millis)
}

/// `peer`'s discovery record is put 1 ms after a dial to it left at `dialled_at` (no second
/// dial while one is in flight); the dial is refused 1 ms later: one redial at once.
fn news_during_dial_then_refused(h: &mut H, peer: u64, dialled_at: Instant) {
    h.now = ms(dialled_at, 1);
    h.disc_put(peer);
    assert_eq!(h.effects(), vec![], "a dial is in flight: no second one");
    h.now = ms(dialled_at, 2);
    h.down(peer);
    assert_eq!(
        h.effects(),
        vec![dial(peer)],
        "the refusal predates the news"
    );
}

/// A leaf's upstream (its proxy) is killed; the keeper's redial at 12 s races the
/// replacement: the news lands while the dial is in flight, the refusal comes after it.
/// The keeper redials at the refusal (not at 16 s), and a refusal of that redial backs off
/// from the start again (2 s), the news having reset the schedule.
#[test]
fn upstream_dial_refused_after_news_redials_at_once() {
    let mut h = H::new(0x101, 0x102, 2, false);
    h.disc_put(0x102);
    assert_eq!(h.effects(), vec![dial(0x102)]);
    h.up(0x102);
    h.now = t(10);
    h.down(0x102);
    assert_eq!(h.c.next_deadline(), Some(t(12)));
    h.at(t(12));
    assert_eq!(h.effects(), vec![dial(0x102)]);
    news_during_dial_then_refused(&mut h, 0x102, t(12));
    assert_eq!(h.c.link_state(n(0x102)), Some(LinkState::Connecting));
    assert_eq!(h.c.next_deadline(), None);
    h.now = ms(t(12), 3);
    h.down(0x102);
    assert_eq!(h.effects(), vec![]);
    assert_eq!(h.c.next_deadline(), Some(ms(t(14), 3)), "no news: backoff");
}

/// The same race on a direct peer record: its timer dialled at 12 s (next attempt due at
/// 16 s); the news during the dial is kept, the refusal redials at once.
#[test]
fn peer_dial_refused_after_news_redials_at_once() {
    let mut h = linked_peer(0);
    h.now = t(10);
    h.down(0x202);
    assert_eq!(h.view(0x202).next_reconnect, Some(t(12)));
    h.effects();
    h.at(t(12));
    assert_eq!(h.effects(), vec![scheduled(0x202, 2, t(16)), dial(0x202)]);
    news_during_dial_then_refused(&mut h, 0x202, t(12));
    assert_eq!(h.c.link_state(n(0x202)), Some(LinkState::Connecting));
    h.up(0x202);
    let v = h.view(0x202);
    assert_eq!((v.retry_count, v.next_reconnect, v.timer), (0, None, None));
}

/// News with no dial in flight leaves nothing behind: a later refusal backs off as usual.
#[test]
fn refusal_without_news_during_the_dial_backs_off() {
    let mut h = H::new(0x101, 0x102, 2, false);
    h.disc_put(0x102);
    h.effects();
    h.up(0x102);
    h.now = t(10);
    h.down(0x102);
    h.disc_put(0x102);
    assert_eq!(
        h.effects(),
        vec![dial(0x102)],
        "news without a dial: dial now"
    );
    h.now = ms(t(10), 2);
    h.down(0x102);
    assert_eq!(h.effects(), vec![]);
    assert_eq!(h.c.next_deadline(), Some(ms(t(12), 2)));
}
