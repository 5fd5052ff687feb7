//! What a report was measured on, and when.

use std::fs;
use std::time::{SystemTime, UNIX_EPOCH};

/// The CPU model and logical core count (`/proc/cpuinfo`), the
/// architecture and the kernel: the line a report names its machine by.
#[must_use]
pub fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
        .map_or("unknown CPU".to_owned(), |(_, m)| m.trim().to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{model}, {cores} logical cores, {} {} {}",
        std::env::consts::ARCH,
        std::env::consts::OS,
        kernel.trim()
    )
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
#[must_use]
pub fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    civil_date(days as i64)
}

/// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_from_day_numbers() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(59), "1970-03-01");
        // 2000 is a leap year (divisible by 400), 2100 is not.
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(47_540), "2100-02-28");
        assert_eq!(civil_date(47_541), "2100-03-01");
        assert_eq!(civil_date(20_788), "2026-12-01");
        assert_eq!(today().len(), 10);
    }
}
