//! The text exposition primitives: family headers, samples with escaped label values,
//! fixed-bucket histograms in exact decimal seconds.

use std::{collections::BTreeMap, fmt::Write as _};

use crate::observe::{Histogram, LATENCY_BUCKETS_NANOS};

/// An outcome label (`delivered`, `failed_no_route`, ...) as its `outcome` and `reason`
/// labels (`("delivered", "")`, `("failed", "no_route")`).
pub(super) fn outcome_and_reason(label: &str) -> (&str, &str) {
    ["failed", "unknown"]
        .into_iter()
        .find_map(|kind| {
            let reason = label.strip_prefix(kind)?.strip_prefix('_')?;
            Some((kind, reason))
        })
        .unwrap_or((label, ""))
}

/// A histogram family without labels: its header, then [`histogram_samples`].
pub(super) fn histogram(out: &mut String, name: &str, help: &str, histogram: &Histogram) {
    header(out, name, "histogram", help);
    histogram_samples(out, name, &[], histogram);
}

/// One histogram's samples with `labels`: cumulative `_bucket` samples (with `le` last),
/// `_sum` in seconds and `_count`.
pub(super) fn histogram_samples(
    out: &mut String,
    name: &str,
    labels: &[(&str, &str)],
    histogram: &Histogram,
) {
    let bucket = format!("{name}_bucket");
    let mut cumulative = 0;
    for (i, count) in histogram.buckets.iter().enumerate() {
        cumulative += count;
        let le = LATENCY_BUCKETS_NANOS
            .get(i)
            .map_or_else(|| "+Inf".to_owned(), |&bound| seconds(bound));
        let mut with_le = labels.to_vec();
        with_le.push(("le", &le));
        sample(out, &bucket, &with_le, cumulative);
    }
    let sum = seconds(histogram.sum_nanos);
    sample_text(out, &format!("{name}_sum"), labels, &sum);
    sample(out, &format!("{name}_count"), labels, histogram.count);
}

/// `nanos` as exact decimal seconds without trailing zeros (`0.0025`, `1`, `2.5`).
pub(super) fn seconds(nanos: u64) -> String {
    let (whole, fraction) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
    if fraction == 0 {
        return whole.to_string();
    }
    let fraction = format!("{fraction:09}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// `known` labels at 0, overlaid with the reported `values` (which may add labels).
pub(super) fn with_known(
    known: impl Iterator<Item = String>,
    values: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    let mut all: BTreeMap<String, u64> = known.map(|label| (label, 0)).collect();
    all.extend(values.iter().map(|(k, v)| (k.clone(), *v)));
    all
}

pub(super) fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

pub(super) fn scalar(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    header(out, name, kind, help);
    sample(out, name, &[], value);
}

pub(super) fn labelled(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    label: &str,
    values: &BTreeMap<String, u64>,
) {
    header(out, name, kind, help);
    for (value_label, value) in values {
        sample(out, name, &[(label, value_label)], *value);
    }
}

/// One sample line with `labels` (names as given, values escaped; none: no braces).
pub(super) fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: u64) {
    sample_text(out, name, labels, &value.to_string());
}

/// [`sample`] with a value already written out (a decimal).
pub(super) fn sample_text(out: &mut String, name: &str, labels: &[(&str, &str)], value: &str) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (label, label_value)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{label}=\"{}\"", escape_label_value(label_value));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

/// Escapes a label value: backslash, double quote and line feed.
pub(super) fn escape_label_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            other => escaped.push(other),
        }
    }
    escaped
}
