//! Writing reports: number formats for tables, and the marked sections a
//! tool owns in a markdown file it shares with other tools
//! (`BENCHMARKS.md`).

use std::path::Path;
use std::time::Duration;
use std::{fs, io};

/// Microseconds for a table: no decimals from 100 up, one below.
#[must_use]
pub fn fmt_us(us: f64) -> String {
    if us >= 100.0 {
        format!("{us:.0}")
    } else {
        format!("{us:.1}")
    }
}

/// A duration in microseconds, as [`fmt_us`] writes them.
#[must_use]
pub fn us(d: Duration) -> String {
    fmt_us(d.as_secs_f64() * 1e6)
}

/// `a / b` as a ratio for a table, e.g. `1.04×`.
#[must_use]
pub fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}×", a / b.max(f64::MIN_POSITIVE))
}

/// A section of a markdown file owned by one tool, between the HTML
/// comments `<!-- NAME:start -->` and `<!-- NAME:end -->`: the tool rewrites
/// it, and other tools writing the same file carry it over unchanged.
#[derive(Clone, Debug)]
pub struct Section {
    start: String,
    end: String,
}

impl Section {
    /// The section called `name`.
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self {
            start: format!("<!-- {name}:start -->"),
            end: format!("<!-- {name}:end -->"),
        }
    }

    /// The section in `text`, its markers included, if `text` has it.
    #[must_use]
    pub fn find<'a>(&self, text: &'a str) -> Option<&'a str> {
        let (s, e) = self.bounds(text)?;
        text.get(s..e)
    }

    /// `text` with the section's content replaced by `body`, or with the
    /// section appended if `text` has none.
    #[must_use]
    pub fn replace(&self, text: &str, body: &str) -> String {
        let block = format!("{}\n{body}{}", self.start, self.end);
        match self.bounds(text) {
            Some((s, e)) => format!(
                "{}{block}{}",
                text.get(..s).unwrap_or_default(),
                text.get(e..).unwrap_or_default()
            ),
            None if text.trim().is_empty() => format!("{block}\n"),
            None => format!("{}\n\n{block}\n", text.trim_end()),
        }
    }

    /// Replaces the section in the file at `path` (created if missing).
    ///
    /// # Errors
    /// Reading or writing the file.
    pub fn write(&self, path: &Path, body: &str) -> io::Result<()> {
        let old = match fs::read_to_string(path) {
            Ok(old) => old,
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        fs::write(path, self.replace(&old, body))
    }

    /// Start and end (past the end marker) of the section in `text`.
    fn bounds(&self, text: &str) -> Option<(usize, usize)> {
        let s = text.find(&self.start)?;
        let e = s + text.get(s..)?.find(&self.end)? + self.end.len();
        Some((s, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_replaced_in_place_or_appended() {
        let s = Section::new("demo");
        let file = "# Title\n\nintro\n\n<!-- demo:start -->\nold\n<!-- demo:end -->\n\nafter\n";
        assert_eq!(
            s.find(file),
            Some("<!-- demo:start -->\nold\n<!-- demo:end -->")
        );
        let new = s.replace(file, "new\n");
        assert_eq!(
            new,
            "# Title\n\nintro\n\n<!-- demo:start -->\nnew\n<!-- demo:end -->\n\nafter\n"
        );
        assert_eq!(s.replace(&new, "old\n"), file);
        let appended = s.replace("# Title\n\n", "body\n");
        assert_eq!(
            appended,
            "# Title\n\n<!-- demo:start -->\nbody\n<!-- demo:end -->\n"
        );
        assert_eq!(Section::new("other").find(file), None);
        // An end marker before the start is not a section.
        assert_eq!(s.find("<!-- demo:end -->\n<!-- demo:start -->"), None);
    }

    #[test]
    fn table_numbers() {
        assert_eq!(fmt_us(1234.4), "1234");
        assert_eq!(fmt_us(12.34), "12.3");
        assert_eq!(us(Duration::from_nanos(40_700)), "40.7");
        assert_eq!(ratio(1.04, 1.0), "1.04×");
    }
}
