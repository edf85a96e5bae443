//! The standard `process_*` families of [`ProcessMetrics`], under the names every Prometheus
//! client library uses; a figure the platform does not tell is left out with its family.

use super::text::{header, sample_text, scalar, seconds};
use crate::admin::process::{ProcessMetrics, USER_HZ};

/// Nanoseconds in one [`USER_HZ`] tick.
const NANOS_PER_TICK: u64 = 1_000_000_000 / USER_HZ;

/// Renders `process` as Prometheus text: `process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
/// `process_max_fds`, `process_start_time_seconds` (the times exact to the tick).
#[must_use]
pub fn render_process(process: &ProcessMetrics) -> String {
    let mut out = String::with_capacity(1024);
    if let Some(ticks) = process.cpu_ticks {
        seconds_family(
            &mut out,
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            ticks,
        );
    }
    let figures = [
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            process.resident_memory_bytes,
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            process.virtual_memory_bytes,
        ),
        (
            "process_open_fds",
            "Number of open file descriptors.",
            process.open_fds,
        ),
        (
            "process_max_fds",
            "Maximum number of open file descriptors.",
            process.max_fds,
        ),
    ];
    for (name, help, value) in figures {
        if let Some(value) = value {
            scalar(&mut out, name, "gauge", help, value);
        }
    }
    if let Some(ticks) = process.start_time_ticks {
        seconds_family(
            &mut out,
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
            ticks,
        );
    }
    out
}

/// A family of one sample: `ticks` as exact decimal seconds.
fn seconds_family(out: &mut String, name: &str, kind: &str, help: &str, ticks: u64) {
    header(out, name, kind, help);
    sample_text(
        out,
        name,
        &[],
        &seconds(ticks.saturating_mul(NANOS_PER_TICK)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_is_a_family_with_exact_seconds() {
        let process = ProcessMetrics {
            cpu_ticks: Some(1234),
            resident_memory_bytes: Some(5_242_880),
            virtual_memory_bytes: Some(123_456_789),
            open_fds: Some(9),
            max_fds: Some(1024),
            start_time_ticks: Some(176_477_000_042),
        };
        assert_eq!(
            render_process(&process),
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.34
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 5242880
# HELP process_virtual_memory_bytes Virtual memory size in bytes.
# TYPE process_virtual_memory_bytes gauge
process_virtual_memory_bytes 123456789
# HELP process_open_fds Number of open file descriptors.
# TYPE process_open_fds gauge
process_open_fds 9
# HELP process_max_fds Maximum number of open file descriptors.
# TYPE process_max_fds gauge
process_max_fds 1024
# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1764770000.42
"
        );
    }

    #[test]
    fn absent_figures_leave_their_families_out() {
        assert_eq!(render_process(&ProcessMetrics::default()), "");
        let only_fds = ProcessMetrics {
            open_fds: Some(3),
            ..ProcessMetrics::default()
        };
        assert_eq!(
            render_process(&only_fds),
            "# HELP process_open_fds Number of open file descriptors.\n\
             # TYPE process_open_fds gauge\nprocess_open_fds 3\n"
        );
    }
}
