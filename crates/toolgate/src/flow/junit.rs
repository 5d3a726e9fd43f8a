//! JUnit XML for CI systems: one `<testsuite>` per spec file, one `<testcase>` per
//! script, the failure trace inside `<failure>`.

use std::fmt::Write as _;
use std::time::Duration;

use super::report::render_failure;
use super::runner::FileTests;

/// A spec file whose tests could not run at all (it does not check clean).
#[derive(Debug, Clone)]
pub struct BrokenFile {
    /// The file, as named on the command line.
    pub file: String,
    /// What is wrong, as `toolgate check` prints it.
    pub message: String,
}

/// The JUnit XML report of every file's results; files that could not run are
/// suites with one `<error>`.
pub fn junit_xml(files: &[FileTests], broken: &[BrokenFile]) -> String {
    let tests: usize = files.iter().map(|f| f.results.len()).sum::<usize>() + broken.len();
    let failures: usize = files
        .iter()
        .flat_map(|f| &f.results)
        .filter(|r| !r.passed())
        .count();
    let total: Duration = files
        .iter()
        .flat_map(|f| &f.results)
        .map(|r| r.duration)
        .sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"toolgate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{}\" time=\"{}\">",
        broken.len(),
        seconds(total)
    );
    for file in files {
        let failed = file.results.iter().filter(|r| !r.passed()).count();
        let time: Duration = file.results.iter().map(|r| r.duration).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"0\" time=\"{}\">",
            escape(&file.file),
            file.results.len(),
            seconds(time)
        );
        for result in &file.results {
            let _ = write!(
                out,
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"",
                escape(&result.name),
                escape(&file.file),
                seconds(result.duration)
            );
            match &result.failure {
                None => out.push_str("/>\n"),
                Some(failure) => {
                    let message = failure
                        .problems
                        .first()
                        .map(String::as_str)
                        .unwrap_or("failed");
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\" type=\"expectation\">{}</failure>\n    </testcase>",
                        escape(message),
                        escape(&render_failure(&file.file, failure))
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    for file in broken {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{0}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0.000\">\n    <testcase name=\"the spec file checks clean\" classname=\"{0}\" time=\"0.000\">\n      <error message=\"the spec file has errors\" type=\"check\">{1}</error>\n    </testcase>\n  </testsuite>",
            escape(&file.file),
            escape(&file.message)
        );
    }
    out.push_str("</testsuites>\n");
    out
}

fn seconds(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64())
}

/// Text as XML character data or an attribute value: markup escaped, and the
/// characters XML 1.0 cannot hold (most control characters) replaced.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("bell\u{7}\ttab"), "bell\u{FFFD}\ttab");
    }
}
