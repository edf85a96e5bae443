//! Which `mio::Token`s a [`MioNode`](crate::MioNode) uses, and what each stands for.
//!
//! A node registers its listener and every connection under tokens of one [`TokenRange`]:
//! the whole token space when it owns its poll ([`MioNode::bind`](crate::MioNode::bind)),
//! the range the application gives it when it is embedded in the application's poll
//! ([`MioNode::embed`](crate::MioNode::embed)). The first token of the range is the
//! listener's; the others are handed to connections as they open and taken back as they
//! close — never-used tokens first, then freed ones oldest first, so a token is reused as
//! late as possible (a stale readiness event for a reused token is only a spurious wake-up).

use std::collections::{HashMap, VecDeque};

use mio::Token;
use switchboard_core::ids::LinkId;

/// A contiguous range of poll tokens, `base .. base + len`, that one node may use: its
/// listener is `base`, and each open connection (a link, the registry connection, a
/// connection closing) holds one of the others. `len` bounds the node's connections: a dial
/// or accept finding no free token fails like a refused connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TokenRange {
    base: Token,
    len: usize,
}

impl TokenRange {
    /// The tokens `base .. base + len`. [`MioNode::embed`](crate::MioNode::embed) refuses a
    /// range shorter than 2 or one passing `usize::MAX`.
    #[must_use]
    pub const fn new(base: Token, len: usize) -> TokenRange {
        TokenRange { base, len }
    }

    /// The range of a node that owns its poll: every token.
    pub(crate) const ALL: TokenRange = TokenRange::new(Token(0), usize::MAX);

    /// The first token (the listener's).
    #[must_use]
    pub const fn base(&self) -> Token {
        self.base
    }

    /// How many tokens.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `token` is in the range.
    #[must_use]
    pub const fn contains(&self, token: Token) -> bool {
        token.0 >= self.base.0 && token.0 - self.base.0 < self.len
    }

    /// Whether a node can use it: at least a listener and one connection, no overflow.
    pub(crate) fn is_usable(&self) -> bool {
        self.len >= 2 && self.base.0.checked_add(self.len - 1).is_some()
    }
}

/// What a token stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    Listener,
    Link(LinkId),
    /// The registry connection of this generation.
    Registry(u64),
}

/// The tokens in use and the free ones of a node's range.
#[derive(Debug)]
pub(crate) struct Tokens {
    range: TokenRange,
    /// Offset of the first never-used token.
    fresh: usize,
    freed: VecDeque<Token>,
    keys: HashMap<Token, Key>,
}

impl Tokens {
    /// The range with its first token given to the listener.
    pub(crate) fn new(range: TokenRange) -> Tokens {
        let mut keys = HashMap::new();
        keys.insert(range.base, Key::Listener);
        Tokens {
            range,
            fresh: 1,
            freed: VecDeque::new(),
            keys,
        }
    }

    pub(crate) fn range(&self) -> TokenRange {
        self.range
    }

    /// A free token for `key`; `None` when every token of the range is in use.
    pub(crate) fn take(&mut self, key: Key) -> Option<Token> {
        let token = if self.fresh < self.range.len {
            self.fresh += 1;
            Token(self.range.base.0 + self.fresh - 1)
        } else {
            self.freed.pop_front()?
        };
        self.keys.insert(token, key);
        Some(token)
    }

    /// What `token` stands for now (`None`: free, or not this node's).
    pub(crate) fn key(&self, token: Token) -> Option<Key> {
        self.keys.get(&token).copied()
    }

    /// Gives `token` back (its connection left the poll). The listener's is never reused.
    pub(crate) fn give_back(&mut self, token: Token) {
        if matches!(
            self.keys.remove(&token),
            Some(Key::Link(_) | Key::Registry(_))
        ) {
            self.freed.push_back(token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_handed_out_fresh_first_then_oldest_freed_first() {
        let range = TokenRange::new(Token(100), 4);
        assert!(range.contains(Token(100)) && range.contains(Token(103)));
        assert!(!range.contains(Token(99)) && !range.contains(Token(104)));
        let mut tokens = Tokens::new(range);
        assert_eq!(tokens.key(Token(100)), Some(Key::Listener));
        let a = tokens.take(Key::Link(LinkId(1))).expect("free");
        let b = tokens.take(Key::Registry(1)).expect("free");
        let c = tokens.take(Key::Link(LinkId(2))).expect("free");
        assert_eq!((a, b, c), (Token(101), Token(102), Token(103)));
        assert_eq!(tokens.take(Key::Link(LinkId(3))), None);
        tokens.give_back(c);
        tokens.give_back(a);
        tokens.give_back(Token(100));
        assert_eq!(tokens.key(a), None);
        assert_eq!(tokens.take(Key::Link(LinkId(4))), Some(c));
        assert_eq!(tokens.take(Key::Link(LinkId(5))), Some(a));
        assert_eq!(tokens.key(a), Some(Key::Link(LinkId(5))));
        assert_eq!(tokens.take(Key::Link(LinkId(6))), None);
        assert!(!TokenRange::new(Token(usize::MAX), 2).is_usable());
        assert!(!TokenRange::new(Token(0), 1).is_usable());
        assert!(TokenRange::ALL.is_usable());
    }
}
