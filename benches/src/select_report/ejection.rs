//! The `ejection` section of `select-report` (see the [parent](super)).

use super::Figures;

/// Runs the section's seeded experiments and adds their figures to `out`.
pub fn run(out: &mut Figures) {
    let _ = out;
}
