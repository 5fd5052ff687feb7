//! What a report was measured on, and when.

use std::fs;
use std::time::{SystemTime, UNIX_EPOCH};

/// The CPU model and logical core count (`/proc/cpuinfo`), the
/// architecture and the kernel: the line a report names its machine by.
#[must_use]
pub fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpu_model(&cpuinfo);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{model}, {cores} logical cores, {} {} {}",
        std::env::consts::ARCH,
        std::env::consts::OS,
        kernel.trim()
    )
}

/// The first CPU's model name, with its x86 family, model and stepping
/// where `/proc/cpuinfo` gives them. A virtual machine may name every
/// generation the same ("AMD EPYC" for a Zen 2 and a Zen 4 alike, whose
/// rows differ by up to 2×); the numbers tell them apart.
fn cpu_model(cpuinfo: &str) -> String {
    let first = cpuinfo.split("\n\n").next().unwrap_or_default();
    let field = |name: &str| {
        first.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_owned())
        })
    };
    let name = field("model name").unwrap_or_else(|| "unknown CPU".to_owned());
    match (field("cpu family"), field("model"), field("stepping")) {
        (Some(family), Some(model), Some(stepping)) => {
            format!("{name} (family {family}, model {model}, stepping {stepping})")
        }
        _ => name,
    }
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
    fn the_cpu_is_named_with_its_family_and_model() {
        let zen2 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\n\
                    model\t\t: 49\nmodel name\t: AMD EPYC\nstepping\t: 0\n\n\
                    processor\t: 1\ncpu family\t: 25\nmodel\t\t: 17\n\
                    model name\t: AMD EPYC\nstepping\t: 1\n";
        assert_eq!(
            cpu_model(zen2),
            "AMD EPYC (family 23, model 49, stepping 0)"
        );
        // Without the numbers (another architecture), the name alone.
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: ARMv8 Processor\n"),
            "ARMv8 Processor"
        );
        assert_eq!(cpu_model(""), "unknown CPU");
    }

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
