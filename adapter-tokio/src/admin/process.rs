//! The process's own figures for the standard `process_*` metrics, read from `/proc/self`
//! on Linux (elsewhere every figure is absent, and so are the metrics). Each read is a few
//! small files; a figure whose file is missing or does not parse is absent, never an error.

/// Clock ticks per second of the times in `/proc` (`USER_HZ`: fixed at 100 by the kernel's
/// ABI on every architecture Linux exports to user space).
pub const USER_HZ: u64 = 100;

/// The standard `process_*` families, in the order `/metrics` writes them.
pub const FAMILIES: [&str; 6] = [
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_open_fds",
    "process_max_fds",
    "process_start_time_seconds",
];

/// The process's figures now; `None` where the platform or `/proc` does not tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessMetrics {
    /// User and system CPU time, in [`USER_HZ`] ticks.
    pub cpu_ticks: Option<u64>,
    /// Resident memory in bytes.
    pub resident_memory_bytes: Option<u64>,
    /// Virtual memory in bytes.
    pub virtual_memory_bytes: Option<u64>,
    /// Open file descriptors.
    pub open_fds: Option<u64>,
    /// The soft limit on open file descriptors (`None` when unlimited).
    pub max_fds: Option<u64>,
    /// When the process started, in [`USER_HZ`] ticks since the Unix epoch.
    pub start_time_ticks: Option<u64>,
}

impl ProcessMetrics {
    /// Reads the figures of this process now.
    #[must_use]
    pub fn read() -> ProcessMetrics {
        #[cfg(target_os = "linux")]
        {
            let read = |path: &str| std::fs::read_to_string(path).ok();
            let stat = read("/proc/self/stat").and_then(|text| parse_stat(&text));
            let boot_time = read("/proc/stat").and_then(|text| parse_boot_time(&text));
            let open_fds = std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|entries| entries.count() as u64);
            ProcessMetrics {
                cpu_ticks: stat.map(|s| s.utime + s.stime),
                resident_memory_bytes: read("/proc/self/status")
                    .and_then(|text| parse_status_kib(&text, "VmRSS:"))
                    .map(|kib| kib * 1024),
                virtual_memory_bytes: stat.map(|s| s.vsize),
                open_fds,
                max_fds: read("/proc/self/limits").and_then(|text| parse_max_open_files(&text)),
                start_time_ticks: stat
                    .zip(boot_time)
                    .map(|(s, boot)| boot * USER_HZ + s.start_ticks),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            ProcessMetrics::default()
        }
    }
}

/// The fields of `/proc/self/stat` the metrics use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    /// User CPU time in ticks (field 14).
    pub(crate) utime: u64,
    /// System CPU time in ticks (field 15).
    pub(crate) stime: u64,
    /// Start time in ticks after boot (field 22).
    pub(crate) start_ticks: u64,
    /// Virtual memory size in bytes (field 23).
    pub(crate) vsize: u64,
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may hold
/// spaces and parentheses itself, so the fields are counted after its last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let after_name = &text[text.rfind(')')? + 1..];
    // Field 3 (the state) is the first after the name.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        utime: field(14)?,
        stime: field(15)?,
        start_ticks: field(22)?,
        vsize: field(23)?,
    })
}

/// The boot time in seconds since the epoch (`btime` of `/proc/stat`).
pub(crate) fn parse_boot_time(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|value| value.trim().parse().ok())
}

/// A `kB` figure of `/proc/<pid>/status` (`VmRSS:  1234 kB`).
pub(crate) fn parse_status_kib(text: &str, key: &str) -> Option<u64> {
    let value = text.lines().find_map(|line| line.strip_prefix(key))?;
    value.trim().strip_suffix("kB")?.trim().parse().ok()
}

/// The soft limit of `Max open files` in `/proc/<pid>/limits` (`None` when unlimited).
pub(crate) fn parse_max_open_files(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))?;
    line.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis_of_the_name() {
        let text = "4242 (sw (a) b) S 1 4242 4242 0 -1 4194560 1130 0 0 0 \
                    17 5 0 0 20 0 3 0 98765 123456789 2048 18446744073709551615 1 1 0 0 0 0 0 \
                    4096 17664 0 0 0 17 1 0 0 0 0 0\n";
        assert_eq!(
            parse_stat(text),
            Some(Stat {
                utime: 17,
                stime: 5,
                start_ticks: 98765,
                vsize: 123_456_789,
            })
        );
        assert_eq!(parse_stat("4242 (truncated) S 1 2"), None);
        assert_eq!(parse_stat("no name at all"), None);
    }

    #[test]
    fn boot_time_status_and_limits_figures_parse() {
        assert_eq!(
            parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1764770000\nprocesses 9\n"),
            Some(1_764_770_000)
        );
        assert_eq!(parse_boot_time("cpu 1\n"), None);
        let status = "Name:\tswitchboard\nVmSize:\t  20480 kB\nVmRSS:\t    5120 kB\n";
        assert_eq!(parse_status_kib(status, "VmRSS:"), Some(5120));
        assert_eq!(parse_status_kib(status, "VmHWM:"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             63672                63672                processes \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(parse_max_open_files(limits), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_max_open_files(unlimited), None);
    }

    /// This process, read for real: every figure present on Linux, each in the range its
    /// meaning allows.
    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_figures_are_read_from_proc() {
        let file = std::fs::File::open("/proc/self/stat").expect("open");
        let read = ProcessMetrics::read();
        drop(file);
        let now_ticks = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after the epoch")
            .as_secs()
            * USER_HZ;
        let start = read.start_time_ticks.expect("start time");
        assert!(start <= now_ticks + USER_HZ, "{start} vs now {now_ticks}");
        assert!(
            start + 24 * 3600 * USER_HZ > now_ticks,
            "started today: {start}"
        );
        assert!(read.cpu_ticks.is_some(), "{read:?}");
        let rss = read.resident_memory_bytes.expect("rss");
        let vsize = read.virtual_memory_bytes.expect("vsize");
        assert!(rss > 0 && rss <= vsize, "{read:?}");
        // stdin/out/err may be closed under a runner, but the file opened above is not.
        assert!(read.open_fds.expect("fds") >= 1, "{read:?}");
        if let Some(max) = read.max_fds {
            assert!(max >= read.open_fds.unwrap_or(0), "{read:?}");
        }
    }
}
