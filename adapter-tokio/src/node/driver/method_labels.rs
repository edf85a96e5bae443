//! The `method` label of the RPC metrics, bounded: a method is labelled by its name while
//! fewer than [`MAX_METHOD_LABELS`] distinct names were labelled, and every later one is
//! [`OTHER_METHOD`] — so callers that invent method names cannot grow the node's metrics
//! (and a scraper's series) without bound.

use std::collections::BTreeSet;

use crate::observe::{MAX_METHOD_LABELS, OTHER_METHOD};

/// The method names labelled so far (at most [`MAX_METHOD_LABELS`]).
#[derive(Debug, Default)]
pub(super) struct MethodLabels {
    named: BTreeSet<String>,
}

impl MethodLabels {
    /// The label of `method`: its name if it was labelled before or there is room for
    /// another name, else [`OTHER_METHOD`].
    pub(super) fn label<'a>(&mut self, method: &'a str) -> &'a str {
        if self.named.contains(method) {
            return method;
        }
        if self.named.len() < MAX_METHOD_LABELS {
            self.named.insert(method.to_owned());
            return method;
        }
        OTHER_METHOD
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_distinct_methods_keep_their_names_and_the_rest_are_other() {
        let mut labels = MethodLabels::default();
        let names: Vec<String> = (0..=MAX_METHOD_LABELS).map(|i| format!("m{i}")).collect();
        let labelled: Vec<&str> = names.iter().map(|n| labels.label(n)).collect();
        assert_eq!(labelled[..MAX_METHOD_LABELS], names[..MAX_METHOD_LABELS]);
        assert_eq!(labelled[MAX_METHOD_LABELS], "other");
        // A name labelled before keeps its label once the set is full; new ones do not.
        assert_eq!(labels.label("m0"), "m0");
        assert_eq!(labels.label(&names[MAX_METHOD_LABELS]), "other");
        assert_eq!(labels.label("never-seen"), "other");
    }
}
