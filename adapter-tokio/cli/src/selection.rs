//! `--select MODE` (with `--key`/`--hash-key` and `--filter`) for `send`, `load` and `call`:
//! how the target node is picked, as the core's [`Select`] (`switchboard_core::select`).
//!
//! The modes a command line names are the core's modes that pick among candidates: `hash`,
//! `maglev` and `bounded` (each needs a key), `round-robin`, `random`, `least-outstanding`
//! (also spelt `p2c`). A node named directly is `--to NAME|ID` (`send`, `load`). A key alone
//! keeps meaning `hash`.

use std::collections::BTreeMap;

use bytes::Bytes;
use switchboard_core::{
    Select,
    discovery::{Filter, Metadata},
    select::Mode,
};
use switchboard_tokio::TargetSpec;

use crate::error::CliError;

/// Whether `--select` takes `mode`: the modes that pick among candidates do; a node named
/// directly is `--to`. An exhaustive `match`: a new mode does not compile until the CLI says.
const fn is_select_value(mode: Mode) -> bool {
    match mode {
        Mode::Hash
        | Mode::RoundRobin
        | Mode::Random
        | Mode::LeastOutstanding
        | Mode::Maglev
        | Mode::Bounded => true,
        Mode::Node | Mode::Name => false,
    }
}

/// Parses a `--select` value (clap's value parser: a bad value is a usage error, exit 2).
///
/// # Errors
///
/// A value that is not one of the modes' labels (or `p2c`, least-outstanding's other name).
pub(crate) fn parse_mode(text: &str) -> Result<Mode, String> {
    Mode::from_label(text)
        .filter(|&mode| is_select_value(mode))
        .ok_or_else(|| {
            let labels: Vec<&str> = Mode::ALL
                .into_iter()
                .filter(|&mode| is_select_value(mode))
                .map(Mode::label)
                .chain(["p2c"])
                .collect();
            format!("expected one of {}", labels.join(", "))
        })
}

/// The selection `mode` and `key` name (`key_field`: the key's flag in errors): a key alone
/// is `hash`; neither is round robin.
///
/// # Errors
///
/// `hash`, `maglev` or `bounded` without a key, a key with another mode.
pub(crate) fn selection(
    mode: Option<Mode>,
    key: Option<String>,
    key_field: &str,
) -> Result<Select, CliError> {
    let mode = mode.unwrap_or(if key.is_some() {
        Mode::Hash
    } else {
        Mode::RoundRobin
    });
    match (mode, key) {
        (Mode::Hash, Some(key)) => Ok(Select::Hash(Bytes::from(key.into_bytes()))),
        (Mode::Maglev, Some(key)) => Ok(Select::Maglev(Bytes::from(key.into_bytes()))),
        (Mode::Bounded, Some(key)) => Ok(Select::Bounded(Bytes::from(key.into_bytes()))),
        (Mode::Hash | Mode::Maglev | Mode::Bounded, None) => Err(CliError::invalid(
            "select",
            format!("{} needs a key: give --{key_field} K", mode.label()),
        )),
        (_, Some(_)) => Err(CliError::invalid(
            key_field.replace('-', "_"),
            "only used with --select hash, maglev or bounded",
        )),
        (Mode::RoundRobin, None) => Ok(Select::RoundRobin),
        (Mode::Random, None) => Ok(Select::Random),
        (Mode::LeastOutstanding, None) => Ok(Select::LeastOutstanding),
        (Mode::Node | Mode::Name, None) => Err(CliError::invalid(
            "select",
            format!("{} is not a --select mode (use --to)", mode.label()),
        )),
    }
}

/// The target of a message (`send`, a message `load`): `to` a name or a node id (digits),
/// else the node `mode` and `key` (its flag: `key_field`) select among the nodes with the
/// `filter` labels; `None` when none of them is given.
///
/// # Errors
///
/// Two targets, an empty name or id 0, filters with `to`, a bad selection.
pub(crate) fn message_target(
    to: Option<String>,
    mode: Option<Mode>,
    key: Option<String>,
    filter_labels: BTreeMap<String, String>,
    key_field: &str,
) -> Result<Option<TargetSpec>, CliError> {
    let Some(to) = to else {
        if mode.is_none() && key.is_none() {
            return Ok(None);
        }
        let filter = (!filter_labels.is_empty()).then(|| {
            Filter(Metadata {
                labels: filter_labels.into(),
                ..Metadata::default()
            })
        });
        return Ok(Some(TargetSpec::among(
            filter,
            selection(mode, key, key_field)?,
        )));
    };
    if mode.is_some() || key.is_some() {
        return Err(CliError::invalid(
            "to",
            format!(
                "give either to or select / {}, not both",
                key_field.replace('-', "_")
            ),
        ));
    }
    if !filter_labels.is_empty() {
        return Err(CliError::invalid(
            "filter",
            "only used with select / hash_key",
        ));
    }
    match to.parse::<u64>() {
        _ if to.is_empty() => Err(CliError::invalid("to", "the name is empty")),
        Ok(0) => Err(CliError::invalid("to", "node id 0 is reserved")),
        Ok(id) => Ok(Some(TargetSpec::Id(switchboard_core::NodeId(id)))),
        Err(_) => Ok(Some(TargetSpec::Name(to))),
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::NodeId;

    use super::*;

    /// Issue 26 added `maglev`, `bounded` and `p2c` (least-outstanding), so the list a bad
    /// value gets names them too.
    #[test]
    fn every_select_value_parses_and_a_bad_one_lists_the_modes() {
        assert_eq!(parse_mode("hash"), Ok(Mode::Hash));
        assert_eq!(parse_mode("round-robin"), Ok(Mode::RoundRobin));
        assert_eq!(parse_mode("random"), Ok(Mode::Random));
        assert_eq!(parse_mode("least-outstanding"), Ok(Mode::LeastOutstanding));
        assert_eq!(parse_mode("p2c"), Ok(Mode::LeastOutstanding));
        assert_eq!(parse_mode("maglev"), Ok(Mode::Maglev));
        assert_eq!(parse_mode("bounded"), Ok(Mode::Bounded));
        let expected = "expected one of hash, round-robin, random, least-outstanding, maglev, \
                        bounded, p2c";
        for bad in ["node", "name", "roundrobin", "", "HASH"] {
            assert_eq!(parse_mode(bad), Err(expected.to_owned()), "{bad:?}");
        }
    }

    #[test]
    fn a_key_alone_is_hash_and_neither_is_round_robin() {
        let key = || Some("user-7".to_owned());
        let hash = Select::Hash(Bytes::from_static(b"user-7"));
        assert_eq!(selection(None, key(), "key").unwrap(), hash);
        assert_eq!(selection(Some(Mode::Hash), key(), "key").unwrap(), hash);
        assert_eq!(selection(None, None, "key").unwrap(), Select::RoundRobin);
        assert_eq!(
            selection(Some(Mode::Maglev), key(), "key").unwrap(),
            Select::Maglev(Bytes::from_static(b"user-7"))
        );
        assert_eq!(
            selection(Some(Mode::Bounded), key(), "key").unwrap(),
            Select::Bounded(Bytes::from_static(b"user-7"))
        );
        for (mode, select) in [
            (Mode::RoundRobin, Select::RoundRobin),
            (Mode::Random, Select::Random),
            (Mode::LeastOutstanding, Select::LeastOutstanding),
        ] {
            assert_eq!(selection(Some(mode), None, "key").unwrap(), select);
        }
        let error =
            |mode, key: Option<String>, field| selection(mode, key, field).unwrap_err().to_string();
        assert_eq!(
            error(Some(Mode::Hash), None, "hash-key"),
            "select: hash needs a key: give --hash-key K"
        );
        assert_eq!(
            error(Some(Mode::Maglev), None, "key"),
            "select: maglev needs a key: give --key K"
        );
        assert_eq!(
            error(Some(Mode::Bounded), None, "key"),
            "select: bounded needs a key: give --key K"
        );
        // Since issue 26 the message names every keyed mode.
        assert_eq!(
            error(Some(Mode::Random), key(), "hash-key"),
            "hash_key: only used with --select hash, maglev or bounded"
        );
        assert_eq!(
            error(Some(Mode::Name), None, "key"),
            "select: name is not a --select mode (use --to)"
        );
    }

    /// Moved from `run_send` (its `--to` parser is this one now).
    #[test]
    fn digits_are_an_id_and_anything_else_a_name() {
        let parse_target =
            |to: &str| message_target(Some(to.to_owned()), None, None, BTreeMap::new(), "key");
        assert_eq!(
            parse_target("7").ok(),
            Some(Some(TargetSpec::Id(NodeId(7))))
        );
        assert_eq!(
            parse_target("leaf-7").ok(),
            Some(Some(TargetSpec::Name("leaf-7".to_owned())))
        );
        assert_eq!(
            parse_target("0").expect_err("id 0").to_string(),
            "to: node id 0 is reserved"
        );
        assert_eq!(
            parse_target("").expect_err("empty").to_string(),
            "to: the name is empty"
        );
    }

    #[test]
    fn a_message_target_is_a_name_or_a_selection_among_the_filter() {
        let none = BTreeMap::new;
        let leaf: BTreeMap<String, String> = [("role".to_owned(), "leaf".to_owned())].into();
        let leaf_filter = Some(Filter(Metadata {
            labels: leaf.clone().into(),
            ..Metadata::default()
        }));
        let target = |to: Option<&str>, mode, key: Option<&str>, labels| {
            let (to, key) = (to.map(str::to_owned), key.map(str::to_owned));
            message_target(to, mode, key, labels, "hash-key")
        };
        assert_eq!(target(None, None, None, none()).unwrap(), None);
        assert_eq!(
            target(None, None, Some("k"), leaf.clone()).unwrap(),
            Some(TargetSpec::Hash {
                filter: leaf_filter.clone(),
                key: b"k".to_vec()
            })
        );
        assert_eq!(
            target(None, Some(Mode::LeastOutstanding), None, leaf.clone()).unwrap(),
            Some(TargetSpec::LeastOutstanding {
                filter: leaf_filter
            })
        );
        assert_eq!(
            target(None, Some(Mode::Random), None, none()).unwrap(),
            Some(TargetSpec::Random { filter: None })
        );
        assert_eq!(
            target(None, Some(Mode::RoundRobin), None, none()).unwrap(),
            Some(TargetSpec::RoundRobin { filter: None })
        );
        let error = |r: Result<Option<TargetSpec>, CliError>| r.unwrap_err().to_string();
        assert_eq!(
            error(target(Some("a"), None, Some("k"), none())),
            "to: give either to or select / hash_key, not both"
        );
        assert_eq!(
            error(target(Some("a"), None, None, leaf)),
            "filter: only used with select / hash_key"
        );
        assert_eq!(
            error(target(None, Some(Mode::Hash), None, none())),
            "select: hash needs a key: give --hash-key K"
        );
    }
}
