//! How many tuning workers memory allows: AOE's first documented failure is a tuner killed by
//! the OOM killer because `TUNING_PARALLEL_NUM` compile-and-measure workers did not fit.

use std::path::Path;

/// Where the memory figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemorySource {
    /// The cgroup v2 `memory.max` (minus `memory.current`) of this process.
    CgroupV2,
    /// The cgroup v1 `memory.limit_in_bytes` (minus `memory.usage_in_bytes`).
    CgroupV1,
    /// `MemAvailable` of `/proc/meminfo`.
    MemInfo,
}

/// Available memory and where the figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryAvailable {
    /// Bytes this process may still use.
    pub bytes: u64,
    /// Its source.
    pub source: MemorySource,
}

/// The memory this process may still use: the smaller of the cgroup limit's headroom (when
/// a limit is set) and `MemAvailable`. `None` when neither can be read.
pub fn available_memory() -> Option<MemoryAvailable> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| parse_meminfo_available(&t))
        .map(|bytes| MemoryAvailable {
            bytes,
            source: MemorySource::MemInfo,
        });
    let cgroup = cgroup_headroom(Path::new("/sys/fs/cgroup"));
    match (cgroup, meminfo) {
        (Some(c), Some(m)) => Some(if c.bytes < m.bytes { c } else { m }),
        (c, m) => c.or(m),
    }
}

/// `MemAvailable` in bytes from the text of `/proc/meminfo`.
pub fn parse_meminfo_available(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Headroom under the cgroup memory limit rooted at `root`, if a finite limit is set.
pub fn cgroup_headroom(root: &Path) -> Option<MemoryAvailable> {
    if let Some(max) = read_u64(&root.join("memory.max")) {
        let used = read_u64(&root.join("memory.current")).unwrap_or(0);
        return Some(MemoryAvailable {
            bytes: max.saturating_sub(used),
            source: MemorySource::CgroupV2,
        });
    }
    let v1 = root.join("memory");
    let limit = read_u64(&v1.join("memory.limit_in_bytes"))?;
    if limit >= 1 << 60 {
        return None; // "no limit" in cgroup v1
    }
    let used = read_u64(&v1.join("memory.usage_in_bytes")).unwrap_or(0);
    Some(MemoryAvailable {
        bytes: limit.saturating_sub(used),
        source: MemorySource::CgroupV1,
    })
}

/// The number of workers to run: `requested`, capped so that `per_worker_bytes` each fit in
/// `available` (at least one). Returns the count and whether memory capped it.
pub fn cap_workers(
    requested: usize,
    per_worker_bytes: u64,
    available: Option<MemoryAvailable>,
) -> (usize, bool) {
    let requested = requested.max(1);
    match available {
        Some(a) if per_worker_bytes > 0 => {
            let fit = usize::try_from(a.bytes / per_worker_bytes)
                .unwrap_or(usize::MAX)
                .max(1);
            if fit < requested {
                (fit, true)
            } else {
                (requested, false)
            }
        }
        _ => (requested, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_parses() {
        let t = "MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:    2048 kB\n";
        assert_eq!(parse_meminfo_available(t), Some(2048 * 1024));
    }

    #[test]
    fn cap_limits_and_says_so() {
        let a = Some(MemoryAvailable {
            bytes: 3 << 30,
            source: MemorySource::CgroupV2,
        });
        assert_eq!(cap_workers(8, 1 << 30, a), (3, true));
        assert_eq!(cap_workers(2, 1 << 30, a), (2, false));
        assert_eq!(cap_workers(8, 8 << 30, a), (1, true));
        assert_eq!(cap_workers(0, 1, None), (1, false));
    }

    #[test]
    fn cgroup_v2_limit_is_read() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("memory.max"), "1073741824\n").unwrap();
        std::fs::write(d.path().join("memory.current"), "73741824\n").unwrap();
        let a = cgroup_headroom(d.path()).unwrap();
        assert_eq!(a.bytes, 1_000_000_000);
        std::fs::write(d.path().join("memory.max"), "max\n").unwrap();
        assert_eq!(cgroup_headroom(d.path()), None);
    }
}
