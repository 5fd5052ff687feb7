//! What the process costs, from Linux's `/proc`: resident memory, CPU time
//! per thread and in total, the load average. Elsewhere each figure reads
//! as absent (`None`, empty, zero) rather than failing a run.

use std::collections::HashMap;
use std::fs;
use std::time::Duration;

/// The process's resident set size in KiB (`VmRSS` of `/proc/self/status`).
#[must_use]
pub fn rss_kib() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let value = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    value.trim().trim_end_matches("kB").trim().parse().ok()
}

/// CPU time the process has used, user and system, all threads together
/// (`/proc/self/stat`, in clock ticks of 10 ms).
#[must_use]
pub fn process_cpu() -> Option<Duration> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    // After the parenthesised name: field 3 is the first; utime is 14, stime 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

/// The process's nice value (field 19 of `/proc/self/stat`).
#[must_use]
pub fn nice() -> Option<i64> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(16)?
        .parse()
        .ok()
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` writes them.
#[must_use]
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// CPU time of every thread of the process at one instant, by thread id,
/// with each thread's name: take one before and one after a run, and
/// [`cpu_since`](Self::cpu_since) gives what the threads picked used in
/// between. Nanoseconds from `/proc/self/task/*/schedstat`, so a short run
/// is not rounded to clock ticks.
#[derive(Clone, Debug, Default)]
pub struct ThreadCpu {
    threads: HashMap<u64, (String, Duration)>,
}

impl ThreadCpu {
    /// Every thread's CPU time now.
    #[must_use]
    pub fn now() -> Self {
        let mut threads = HashMap::new();
        let Ok(entries) = fs::read_dir("/proc/self/task") else {
            return Self { threads };
        };
        for entry in entries.flatten() {
            let Ok(tid) = entry.file_name().to_string_lossy().parse::<u64>() else {
                continue;
            };
            let path = entry.path();
            let name = fs::read_to_string(path.join("comm")).unwrap_or_default();
            let ns = fs::read_to_string(path.join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .unwrap_or(0);
            threads.insert(tid, (name.trim().to_owned(), Duration::from_nanos(ns)));
        }
        Self { threads }
    }

    /// The ids of the threads, e.g. to tell which ones a library started
    /// (those in a snapshot taken after it started and not in one taken
    /// before).
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.threads.keys().copied()
    }

    /// CPU time used since `before` by the threads `pick` accepts (thread
    /// id, name); a thread born in between counts from zero.
    #[must_use]
    pub fn cpu_since(&self, before: &Self, pick: impl Fn(u64, &str) -> bool) -> Duration {
        self.threads
            .iter()
            .filter(|(tid, (name, _))| pick(**tid, name))
            .map(|(tid, (_, t))| {
                let was = before.threads.get(tid).map_or(Duration::ZERO, |b| b.1);
                t.saturating_sub(was)
            })
            .sum()
    }
}

/// The id of the calling thread, as `/proc/self/task` names it (from the
/// `/proc/thread-self` link): for [`ThreadCpu::cpu_since`]'s filter.
#[must_use]
pub fn current_thread_id() -> Option<u64> {
    let link = fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn memory_and_cpu_are_read_and_grow_with_use() {
        let before = rss_kib().unwrap_or(0);
        assert!(before > 0, "VmRSS read");
        // 64 MiB touched page by page must show up as resident.
        let big = vec![1u8; 64 << 20];
        let after = rss_kib().unwrap_or(0);
        assert!(after >= before + 32 * 1024, "{before} KiB → {after} KiB");
        drop(big);

        let start = ThreadCpu::now();
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let end = ThreadCpu::now();
        let wall = spin.elapsed();
        let me = current_thread_id().unwrap_or(0);
        let mine = end.cpu_since(&start, |tid, _| tid == me);
        // Spinning uses CPU (however busy the machine), and one thread
        // cannot use more than the wall time.
        assert!(mine > Duration::ZERO && mine <= wall + Duration::from_millis(5));
        assert!(end.ids().any(|tid| tid == me));
        let none = end.cpu_since(&start, |_, _| false);
        assert_eq!(none, Duration::ZERO);
        assert!(process_cpu().is_some());
        assert!(!load_average().is_empty());
    }
}
