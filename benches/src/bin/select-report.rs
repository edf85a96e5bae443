//! `select-report`: selection beyond the peers (issue 26) as one JSON line — Maglev and the
//! ring, bounded loads, two random choices, outlier ejection, the retry budget and hedging,
//! each a seeded experiment next to its plain baseline (`switchboard_benches::select_report`).
//!
//! Run `cargo run --release -p switchboard-benches --bin select-report` (progress on stderr).

use switchboard_benches::select_report::{Figures, ejection, modes, retry};

/// A section of the report: its name and what fills its figures.
type Section = (&'static str, fn(&mut Figures));

fn main() {
    let mut report = Figures::new();
    let sections: [Section; 3] = [
        ("modes", modes::run),
        ("ejection", ejection::run),
        ("retry", retry::run),
    ];
    for (name, run) in sections {
        let started = std::time::Instant::now();
        run(&mut report);
        eprintln!(
            "select-report: {name} in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    println!("{}", serde_json::Value::Object(report));
}
