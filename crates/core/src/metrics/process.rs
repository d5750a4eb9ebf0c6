//! The process's own figures, read from `/proc/self` at scrape time (Linux; elsewhere they
//! stay at zero): resident memory, CPU time and open file descriptors, under the names
//! every Prometheus client uses.

use prometheus::{Counter, IntGauge, Registry};

use super::register;

/// The kernel's clock ticks per second in `/proc` (`USER_HZ`): 100 on every Linux ABI we
/// run on, whatever the kernel's internal tick.
const USER_HZ: f64 = 100.0;

pub(super) struct ProcessMetrics {
    resident_memory: IntGauge,
    cpu_seconds: Counter,
    open_fds: IntGauge,
}

impl ProcessMetrics {
    pub(super) fn register(registry: &Registry) -> Self {
        Self {
            resident_memory: register(
                registry,
                IntGauge::new("process_resident_memory_bytes", "Resident memory size in bytes."),
            ),
            cpu_seconds: register(
                registry,
                Counter::new("process_cpu_seconds_total", "Total user and system CPU time spent in seconds."),
            ),
            open_fds: register(registry, IntGauge::new("process_open_fds", "Number of open file descriptors.")),
        }
    }

    /// Reads `/proc/self` again; a figure that cannot be read keeps its last value.
    pub(super) fn refresh(&self) {
        if let Some(bytes) = resident_memory_bytes() {
            self.resident_memory.set(bytes);
        }
        if let Some(seconds) = std::fs::read_to_string("/proc/self/stat").ok().as_deref().and_then(cpu_seconds) {
            // A counter only goes up: add what was spent since the last scrape.
            let grown = seconds - self.cpu_seconds.get();
            if grown > 0.0 {
                self.cpu_seconds.inc_by(grown);
            }
        }
        if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
            // Less the descriptor of the directory being read.
            let open = entries.count().saturating_sub(1);
            self.open_fds.set(i64::try_from(open).unwrap_or(i64::MAX));
        }
    }
}

/// This process's resident memory now, in bytes (`VmRSS` of `/proc/self/status`; `None`
/// where that cannot be read).
pub fn resident_memory_bytes() -> Option<i64> {
    std::fs::read_to_string("/proc/self/status").ok().as_deref().and_then(resident_bytes)
}

/// `VmRSS` of `/proc/self/status`, in bytes.
fn resident_bytes(status: &str) -> Option<i64> {
    let line = status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?;
    let kib: i64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// User plus system time of `/proc/self/stat` (fields 14 and 15), in seconds. The command
/// name (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
fn cpu_seconds(stat: &str) -> Option<f64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / USER_HZ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read_from_vm_rss() {
        let status = "Name:\trehome\nVmPeak:\t  9000 kB\nVmRSS:\t   1234 kB\nThreads:\t4\n";
        assert_eq!(resident_bytes(status), Some(1234 * 1024));
        assert_eq!(resident_bytes("Name:\tx\n"), None);
    }

    #[test]
    fn cpu_time_is_counted_after_the_command_name() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        let stat = "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 4 0";
        assert_eq!(cpu_seconds(stat), Some(4.0));
    }

    #[test]
    fn this_process_has_memory_and_descriptors() {
        let registry = Registry::new();
        let process = ProcessMetrics::register(&registry);
        process.refresh();
        assert!(process.resident_memory.get() > 0);
        assert!(process.open_fds.get() > 0);
    }
}
