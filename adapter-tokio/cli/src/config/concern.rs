//! The concern file of `switchboard registry --concern FILE`: a TOML `[concern]` table from a
//! node type to the types whose changes it is pushed, e.g. `game = ["gate", "chat"]`. Types
//! the file does not list follow every type.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

use serde::Deserialize;
use switchboard_core::registry::server::ConcernTable;

use super::{TomlProblem, parse_toml};
use crate::error::CliError;

/// The file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConcernFile {
    concern: BTreeMap<String, Vec<String>>,
}

/// Reads a concern file.
///
/// # Errors
///
/// The file cannot be read or parsed, or a type name is empty (field `concern.<type>`).
pub(crate) fn read_concern_file(path: &Path) -> Result<ConcernTable, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::invalid("concern", format!("cannot read {}: {e}", path.display()))
    })?;
    parse_concern(&text).map_err(|e| match e {
        ConcernProblem::Toml(TomlProblem::Syntax { line, message }) => CliError::invalid(
            "concern",
            format!("{}: line {line}: {message}", path.display()),
        ),
        ConcernProblem::Toml(TomlProblem::Field { field, message }) => {
            CliError::invalid(field, message)
        }
        ConcernProblem::EmptyType { field } => CliError::invalid(field, "empty type name"),
    })
}

/// Why a concern text was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ConcernProblem {
    /// Not the expected TOML.
    Toml(TomlProblem),
    /// An empty type name, as follower or followed.
    EmptyType {
        /// Where.
        field: String,
    },
}

/// Parses the text of a concern file into a table.
///
/// # Errors
///
/// Bad TOML, unknown keys, non-string types, or an empty type name.
pub(crate) fn parse_concern(text: &str) -> Result<ConcernTable, ConcernProblem> {
    let file: ConcernFile = parse_toml(text).map_err(ConcernProblem::Toml)?;
    let mut follows = BTreeMap::new();
    for (follower, followed) in file.concern {
        if follower.is_empty() || followed.iter().any(String::is_empty) {
            return Err(ConcernProblem::EmptyType {
                field: format!("concern.{follower}"),
            });
        }
        follows.insert(follower, followed.into_iter().collect::<BTreeSet<_>>());
    }
    Ok(ConcernTable::from_map(follows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_types_follow_exactly_their_set() {
        let table =
            parse_concern("[concern]\ngame = [\"gate\", \"chat\"]\nbattle = []\n").expect("valid");
        let mut expected = ConcernTable::all();
        expected.set("game", ["gate", "chat"]);
        expected.set("battle", Vec::<String>::new());
        assert_eq!(table, expected);
        assert!(table.concerns("game", "gate"));
        assert!(table.concerns("game", "chat"));
        assert!(!table.concerns("game", "lobby"));
        assert!(!table.concerns("battle", "gate"));
        assert!(
            table.concerns("gate", "anything"),
            "unlisted types follow all"
        );
    }

    #[test]
    fn an_empty_concern_table_follows_everything() {
        assert_eq!(parse_concern("[concern]\n"), Ok(ConcernTable::all()));
    }

    #[test]
    fn a_missing_concern_table_is_an_error() {
        assert_eq!(
            parse_concern("game = [\"gate\"]\n"),
            Err(ConcernProblem::Toml(TomlProblem::Field {
                field: "game".to_owned(),
                message: "unknown key, expected `concern`".to_owned()
            }))
        );
    }

    #[test]
    fn a_non_list_value_is_named() {
        assert_eq!(
            parse_concern("[concern]\ngame = \"gate\"\n"),
            Err(ConcernProblem::Toml(TomlProblem::Field {
                field: "concern.game".to_owned(),
                message: "invalid type: string \"gate\", expected a sequence".to_owned()
            }))
        );
    }

    #[test]
    fn an_empty_type_name_is_refused() {
        assert_eq!(
            parse_concern("[concern]\ngame = [\"\"]\n"),
            Err(ConcernProblem::EmptyType {
                field: "concern.game".to_owned()
            })
        );
    }
}
