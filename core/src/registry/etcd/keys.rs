//! libatapp's etcd key layout: building keys, parsing them back, watch prefixes.
//!
//! Every node writes three keys under one prefix: `<prefix>by_id/<name>-<id>`,
//! `<prefix>by_name/<name>-<id>` (both holding the `atapp_discovery` JSON) and
//! `<prefix>topology/<name>-<id>` (`atapp_topology_info`). The id is decimal. A key is parsed
//! back from its last segment, split at the *last* `-` (names may contain `-`); a segment
//! without `-` is a legacy id-only key. Keys that do not fit are a typed [`KeyError`].

use alloc::{format, string::String, vec::Vec};

use crate::ids::NodeId;

/// Which of the three key families a key belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyKind {
    /// `<prefix>by_id/…`: discovery record, indexed by id.
    ById,
    /// `<prefix>by_name/…`: the same discovery record, indexed by name.
    ByName,
    /// `<prefix>topology/…`: topology record.
    Topology,
}

impl KeyKind {
    /// All three, in libatapp's watcher creation order (topology first).
    pub const ALL: [KeyKind; 3] = [KeyKind::Topology, KeyKind::ById, KeyKind::ByName];

    /// The path segment naming this family (`by_id`, `by_name`, `topology`).
    #[must_use]
    pub const fn segment(self) -> &'static str {
        match self {
            KeyKind::ById => "by_id",
            KeyKind::ByName => "by_name",
            KeyKind::Topology => "topology",
        }
    }

    /// Whether keys of this family hold discovery records (`by_id`, `by_name`).
    #[must_use]
    pub const fn is_discovery(self) -> bool {
        !matches!(self, KeyKind::Topology)
    }
}

/// Why a key could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key does not start with the configured prefix.
    #[error("key is not under the registry prefix")]
    NotUnderPrefix,
    /// The family segment after the prefix is none of `by_id`, `by_name`, `topology`.
    #[error("key names no known family (by_id, by_name, topology)")]
    UnknownKind,
    /// The key is not UTF-8.
    #[error("key is not UTF-8")]
    NotUtf8,
    /// The last segment is empty (`…/by_id/`).
    #[error("key has an empty last segment")]
    EmptySegment,
    /// The id part is not a decimal u64.
    #[error("key id part {0:?} is not a decimal u64")]
    BadId(String),
    /// The key names neither an id nor a name (`0`, `-0`), or a topology key without an id.
    #[error("key names no usable identity")]
    NoIdentity,
}

/// A key parsed back into its family and identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ParsedKey {
    /// The family.
    pub kind: KeyKind,
    /// The name part (empty for a legacy id-only key).
    pub name: String,
    /// The id part (0 for a name-only key `<name>-0`).
    pub id: NodeId,
}

/// The key layout under one prefix.
///
/// Build it once from the configured prefix; it hands out keys, watch ranges, and parses keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyLayout {
    prefix: String,
}

impl KeyLayout {
    /// A layout under `prefix`, normalised like libatapp: empty → `/`, a trailing `/` added
    /// when missing.
    #[must_use]
    pub fn new(prefix: &str) -> KeyLayout {
        let mut prefix = String::from(prefix);
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        KeyLayout { prefix }
    }

    /// The normalised prefix (always ends with `/`).
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key of a node's record in family `kind`: `<prefix><family>/<name>-<id>`; a node
    /// without a name gets the legacy id-only form `<prefix><family>/<id>`.
    #[must_use]
    pub fn key(&self, kind: KeyKind, name: &str, id: NodeId) -> Vec<u8> {
        let text = if name.is_empty() {
            format!("{}{}/{}", self.prefix, kind.segment(), id.0)
        } else {
            format!("{}{}/{}-{}", self.prefix, kind.segment(), name, id.0)
        };
        text.into_bytes()
    }

    /// The claim key of a node name: `<prefix>names/<name>`, holding the decimal id of the
    /// node that registered under the name, on its lease. One key per name, so a single txn
    /// conditioned on it claims the name atomically (two nodes racing for one free name: one
    /// txn wins, the other sees the key). Outside the three record families: libatapp and our
    /// watchers never see it. `None` for a node without a name.
    #[must_use]
    pub fn claim_key(&self, name: &str) -> Option<Vec<u8>> {
        (!name.is_empty()).then(|| format!("{}names/{name}", self.prefix).into_bytes())
    }

    /// The watch / list prefix of a family: `<prefix><family>/`.
    #[must_use]
    pub fn watch_prefix(&self, kind: KeyKind) -> Vec<u8> {
        format!("{}{}/", self.prefix, kind.segment()).into_bytes()
    }

    /// The `(key, range_end)` pair selecting every key of a family.
    #[must_use]
    pub fn watch_range(&self, kind: KeyKind) -> (Vec<u8>, Vec<u8>) {
        let key = self.watch_prefix(kind);
        let end = range_end(&key);
        (key, end)
    }

    /// Parses a key of this layout back into family, name and id.
    ///
    /// The part after `<prefix><family>/` is read from its last `/`-separated segment (as
    /// libatapp does), split at the last `-`: `echo-svr-1-4353` → name `echo-svr-1`, id 4353;
    /// no `-` → id only. A topology key must carry a non-zero id.
    ///
    /// # Errors
    /// [`KeyError`] naming the first problem.
    pub fn parse(&self, key: &[u8]) -> Result<ParsedKey, KeyError> {
        let rest = key
            .strip_prefix(self.prefix.as_bytes())
            .ok_or(KeyError::NotUnderPrefix)?;
        let rest = core::str::from_utf8(rest).map_err(|_| KeyError::NotUtf8)?;
        let (family, tail) = rest.split_once('/').ok_or(KeyError::UnknownKind)?;
        let kind = match family {
            "by_id" => KeyKind::ById,
            "by_name" => KeyKind::ByName,
            "topology" => KeyKind::Topology,
            _ => return Err(KeyError::UnknownKind),
        };
        let segment = tail.rsplit('/').next().unwrap_or(tail);
        if segment.is_empty() {
            return Err(KeyError::EmptySegment);
        }
        let (name, id_text) = match segment.rsplit_once('-') {
            Some((name, id_text)) => (name, id_text),
            None => ("", segment),
        };
        let id = parse_decimal(id_text).ok_or_else(|| KeyError::BadId(String::from(id_text)))?;
        let id = NodeId(id);
        let usable = match kind {
            KeyKind::Topology => id.is_valid(),
            _ => id.is_valid() || !name.is_empty(),
        };
        if !usable {
            return Err(KeyError::NoIdentity);
        }
        Ok(ParsedKey {
            kind,
            name: String::from(name),
            id,
        })
    }
}

/// A strict decimal u64: ASCII digits only, no sign, no overflow.
fn parse_decimal(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// etcd's `range_end` for "every key starting with `prefix`": the prefix with its last byte
/// below `0xff` incremented and everything after it dropped. A prefix of only `0xff` bytes (or
/// an empty one) yields `[0]`, etcd's "to the end of the keyspace".
#[must_use]
pub fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = Vec::from(prefix);
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    alloc::vec![0]
}
