//! The standard process metrics (the names client_golang's process collector and
//! controller-runtime components serve), read from `/proc/self` on every scrape, as
//! OpenMetrics text: CPU seconds, resident and virtual memory, open and maximum file
//! descriptors, threads and the start time. Off Linux, or when `/proc` cannot be read, a
//! metric is left out rather than reported wrong.

use std::fmt::Write as _;

/// `/proc`'s clock tick (`USER_HZ`): the kernel reports process times in it, and it is 100 on
/// every Linux architecture's user-space ABI.
const USER_HZ: f64 = 100.0;

/// The process metrics as OpenMetrics families (no `# EOF`), to append to a registry's
/// exposition before its `# EOF` line.
pub fn process_metrics() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").ok();
    let status = std::fs::read_to_string("/proc/self/status").ok();
    let limits = std::fs::read_to_string("/proc/self/limits").ok();
    let boot = std::fs::read_to_string("/proc/stat").ok();
    let open_fds = std::fs::read_dir("/proc/self/fd").ok().map(Iterator::count);
    render(&ProcSources {
        stat: stat.as_deref(),
        status: status.as_deref(),
        limits: limits.as_deref(),
        boot: boot.as_deref(),
        open_fds,
    })
}

/// The texts read from `/proc` (each optional), so the rendering is testable without them.
struct ProcSources<'a> {
    stat: Option<&'a str>,
    status: Option<&'a str>,
    limits: Option<&'a str>,
    boot: Option<&'a str>,
    open_fds: Option<usize>,
}

/// `/proc/self/stat`'s fields after the command name (which may hold spaces and parentheses):
/// index 0 is field 3 (`state`).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().collect())
}

/// A `/proc/self/status` line's value in bytes (`VmRSS:   1234 kB`).
fn status_bytes(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[allow(clippy::cast_precision_loss)]
fn render(src: &ProcSources<'_>) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, sample: &str, value: String| {
        let _ = write!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{sample} {value}\n"
        );
    };
    let fields = src.stat.and_then(stat_fields);
    let field = |i: usize| -> Option<f64> { fields.as_ref()?.get(i)?.parse().ok() };
    // utime and stime are fields 14 and 15 (indices 11 and 12 here).
    if let (Some(user), Some(system)) = (field(11), field(12)) {
        let seconds = (user + system) / USER_HZ;
        family(
            "process_cpu_seconds",
            "counter",
            "Total user and system CPU time spent in seconds.",
            "process_cpu_seconds_total",
            format!("{seconds}"),
        );
    }
    if let Some(threads) = field(17) {
        family(
            "process_threads",
            "gauge",
            "Number of OS threads in the process.",
            "process_threads",
            format!("{threads}"),
        );
    }
    let btime = src.boot.and_then(|b| {
        b.lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse::<f64>().ok())
    });
    if let (Some(start_ticks), Some(btime)) = (field(19), btime) {
        family(
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
            "process_start_time_seconds",
            format!("{}", btime + start_ticks / USER_HZ),
        );
    }
    if let Some(rss) = src.status.and_then(|s| status_bytes(s, "VmRSS:")) {
        family(
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            "process_resident_memory_bytes",
            rss.to_string(),
        );
    }
    if let Some(vm) = src.status.and_then(|s| status_bytes(s, "VmSize:")) {
        family(
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
            "process_virtual_memory_bytes",
            vm.to_string(),
        );
    }
    if let Some(fds) = src.open_fds {
        family(
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            "process_open_fds",
            fds.to_string(),
        );
    }
    let max_fds = src.limits.and_then(|l| {
        l.lines()
            .find(|line| line.starts_with("Max open files"))
            .and_then(|line| line.split_whitespace().nth(3))
            .and_then(|v| v.parse::<u64>().ok())
    });
    if let Some(max) = max_fds {
        family(
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
            "process_max_fds",
            max.to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (plumb (agent)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 7 0 12345 100000000 2000 18446744073709551615";

    #[test]
    fn the_recorded_proc_files_become_the_standard_metrics() {
        let text = render(&ProcSources {
            stat: Some(STAT),
            status: Some("Name:\tplumb\nVmSize:\t  102400 kB\nVmRSS:\t    2048 kB\n"),
            limits: Some(
                "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 4096                 files\n",
            ),
            boot: Some("cpu  1 2 3\nbtime 1700000000\n"),
            open_fds: Some(9),
        });
        assert!(text.contains("process_cpu_seconds_total 3\n"), "{text}");
        assert!(text.contains("process_threads 7\n"), "{text}");
        assert!(
            text.contains("process_start_time_seconds 1700000123.45\n"),
            "{text}"
        );
        assert!(
            text.contains("process_resident_memory_bytes 2097152\n"),
            "{text}"
        );
        assert!(
            text.contains("process_virtual_memory_bytes 104857600\n"),
            "{text}"
        );
        assert!(text.contains("process_open_fds 9\n"), "{text}");
        assert!(text.contains("process_max_fds 1024\n"), "{text}");
        assert!(
            text.contains("# TYPE process_cpu_seconds counter\n"),
            "{text}"
        );
    }

    #[test]
    fn what_cannot_be_read_is_left_out() {
        let text = render(&ProcSources {
            stat: Some("garbage"),
            status: None,
            limits: None,
            boot: None,
            open_fds: None,
        });
        assert_eq!(text, "");
    }

    #[test]
    fn this_process_reports_its_memory_and_cpu_on_linux() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let text = process_metrics();
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
        assert!(text.contains("process_cpu_seconds_total "), "{text}");
    }
}
