//! Reading spec files from disk and showing their problems the way a compiler would.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource, Report,
};
use toolgate_core::escape_for_terminal;
use toolgate_core::spec::{self, Checked, Diagnostic, MAX_SPEC_BYTES, Severity};

use crate::regular_file::OpenFileError;

/// The spec file used when none is named.
pub const DEFAULT_SPEC_FILE: &str = "toolgate.yaml";

/// A spec file that could not be read at all. The message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SpecReadError {
    /// The file could not be opened or read.
    #[error("cannot read spec file {path}: {source}; create it or name another with -f FILE", path = .path.display())]
    Io {
        /// The spec file's path, as named.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    #[error("cannot read spec file {path}: it is {kind}, not a regular file; a spec file is read whole, so save it to a file and name that with -f FILE", path = .path.display())]
    /// The path names something that is not a regular file (a directory, a pipe, ...).
    NotAFile {
        /// The spec file's path, as named.
        path: PathBuf,
        /// What it names instead, in words.
        kind: &'static str,
    },
    #[error("{path} is {size}, more than a spec file may hold ({max}); check that this is the spec file you meant", path = .path.display(), size = human_size(*.size), max = human_size(MAX_SPEC_BYTES as u64))]
    /// The file is larger than a spec file may be (`MAX_SPEC_BYTES`).
    TooLarge {
        /// The spec file's path, as named.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
    },
    #[error("{path} is not UTF-8 text (byte 0x{byte:02X} at line {line}, column {column}); a spec file is YAML or JSON, saved as UTF-8", path = .path.display())]
    /// The file is not UTF-8 text.
    NotText {
        /// The spec file's path, as named.
        path: PathBuf,
        /// The byte offset of the first byte that is not UTF-8.
        offset: usize,
        /// That byte.
        byte: u8,
        /// Its line (1-based).
        line: usize,
        /// Its column (1-based, in characters).
        column: usize,
    },
}

/// A spec file's text, checked.
#[derive(Debug, Clone)]
pub struct SpecSource {
    /// Where the file was read from.
    pub path: PathBuf,
    /// Its text, whole, as read.
    pub text: String,
    /// The spec parsed and checked: its diagnostics, and the spec when it has no errors.
    pub checked: Checked,
    /// The skills its `skills:` section names, read from disk and checked; a
    /// skill that cannot load is an error in `checked.diagnostics` instead.
    pub skills: Vec<crate::skills::LocalSkill>,
}

impl SpecSource {
    /// Reads and checks a spec file. Only unreadable files are errors; problems in the
    /// file are in `checked.diagnostics`.
    pub fn read(path: impl AsRef<Path>) -> Result<SpecSource, SpecReadError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| SpecReadError::Io {
            path: path.clone(),
            source,
        };
        // A named pipe would block the open; only regular files are read.
        let file = match crate::regular_file::open_regular_file(&path) {
            Ok(file) => file,
            Err(OpenFileError::Io(e)) => return Err(io(e)),
            Err(OpenFileError::NotAFile { kind }) => {
                return Err(SpecReadError::NotAFile { path, kind });
            }
        };
        let size = file.metadata().map_err(io)?.len();
        if size > MAX_SPEC_BYTES as u64 {
            return Err(SpecReadError::TooLarge { path, size });
        }
        // Read at most one byte past the limit: the file may have grown since `metadata`.
        let mut bytes = Vec::new();
        file.take(MAX_SPEC_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() > MAX_SPEC_BYTES {
            let size = bytes.len() as u64;
            return Err(SpecReadError::TooLarge { path, size });
        }
        match String::from_utf8(bytes) {
            Ok(text) => Ok(SpecSource::from_text(path, text)),
            Err(e) => {
                let offset = e.utf8_error().valid_up_to();
                let bytes = e.as_bytes();
                let before = &bytes[..offset];
                let line_start = before
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                // The text before `offset` is valid UTF-8, so columns count characters.
                let column = std::str::from_utf8(&before[line_start..])
                    .map_or(1, |line| line.chars().count() + 1);
                Err(SpecReadError::NotText {
                    byte: bytes[offset],
                    line: before.iter().filter(|&&b| b == b'\n').count() + 1,
                    column,
                    offset,
                    path,
                })
            }
        }
    }

    /// Checks text as if it had been read from `path`.
    pub fn from_text(path: impl Into<PathBuf>, text: impl Into<String>) -> SpecSource {
        let text = text.into();
        let path = path.into();
        let mut checked = spec::check(&text);
        let skills = load_skills(&path, &text, &mut checked);
        SpecSource {
            path,
            text,
            checked,
            skills,
        }
    }

    /// Every diagnostic, rendered with the offending line and a caret.
    pub fn render_diagnostics(&self) -> String {
        render_diagnostics(
            &self.path.display().to_string(),
            &self.text,
            &self.checked.diagnostics,
        )
    }
}

/// The skills the spec names, relative to its folder; each that cannot load
/// becomes an error pointing at `skills:`.
fn load_skills(path: &Path, text: &str, checked: &mut Checked) -> Vec<crate::skills::LocalSkill> {
    let Some(section) = checked.spec.as_ref().and_then(|s| s.skills.as_ref()) else {
        return Vec::new();
    };
    let base = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (skills, problems) = crate::skills::load_skills(section, base);
    let span = spec::Document::parse(text)
        .ok()
        .and_then(|doc| doc.key_span("/skills"));
    for problem in problems {
        let mut diagnostic = Diagnostic::error("/skills", format!("skill at {problem}"));
        diagnostic.span = span;
        checked.diagnostics.push(diagnostic);
    }
    skills
}

/// Renders diagnostics as text with source snippets, no colour. Control and
/// invisible characters in the source lines, messages and file name are shown as
/// escapes (`\u{1b}`), so a hostile file cannot drive the terminal that shows its
/// problems; the spans move with the text they point at.
pub fn render_diagnostics(file_name: &str, text: &str, diagnostics: &[Diagnostic]) -> String {
    let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .with_width(100)
        .with_links(false);
    let file_name = &*escape_for_terminal(file_name);
    let shown = ShownSource::new(text);
    let mut out = String::new();
    for d in diagnostics {
        let message = escape_for_terminal(&d.message).into_owned();
        let mut m = MietteDiagnostic::new(message).with_severity(match d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        });
        if let Some(help) = &d.help {
            m = m.with_help(escape_for_terminal(help).into_owned());
        }
        let report = match d.span {
            Some(span) => {
                let start = shown.offset(span.offset);
                let end = shown.offset(span.offset + span.len);
                m = m.with_label(LabeledSpan::at(start..end, "here"));
                Report::new(m).with_source_code(NamedSource::new(file_name, shown.text.clone()))
            }
            // No position: name the file in the message itself.
            None => {
                m.message = format!("{file_name}: {}", m.message);
                Report::new(m)
            }
        };
        let _ = handler.render_report(&mut out, report.as_ref());
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    let _ = writeln!(
        out,
        "{file_name}: {errors} error{}, {warnings} warning{}",
        plural(errors),
        plural(warnings)
    );
    out
}

/// A spec file's text with its control characters shown as escapes, and where
/// each byte offset of the original text went.
struct ShownSource {
    text: String,
    /// `(offset, shift)`: from this offset of the original on, offsets grow by
    /// `shift` bytes. In offset order.
    shifts: Vec<(usize, usize)>,
}

impl ShownSource {
    fn new(original: &str) -> ShownSource {
        let mut text = String::with_capacity(original.len());
        let mut shifts = Vec::new();
        let mut shift = 0;
        for (i, c) in original.char_indices() {
            let shown = escape_for_terminal(c.encode_utf8(&mut [0; 4])).into_owned();
            if shown.len() != c.len_utf8() {
                shift += shown.len() - c.len_utf8();
                shifts.push((i + c.len_utf8(), shift));
            }
            text.push_str(&shown);
        }
        ShownSource { text, shifts }
    }

    /// Where `offset` of the original text is in the shown text.
    fn offset(&self, offset: usize) -> usize {
        let moved = self.shifts.partition_point(|&(at, _)| at <= offset);
        offset + moved.checked_sub(1).map_or(0, |i| self.shifts[i].1)
    }
}

/// A byte count the way a person reads it: `8 MiB`, `50.0 MiB`; exact bytes when
/// a rounded figure could not be told from the limit (`8,388,609 bytes`).
fn human_size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes.is_multiple_of(MIB) {
        return format!("{} MiB", bytes / MIB);
    }
    if bytes >= 10 * MIB {
        return format!("{:.1} MiB", bytes as f64 / MIB as f64);
    }
    let digits = bytes.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out} bytes")
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_move_with_the_escaped_text_they_point_at() {
        let original = "x\x1by\u{202e}z";
        let shown = ShownSource::new(original);
        assert_eq!(shown.text, "x\\u{1b}y\\u{202e}z");
        let find = |needle: &str| {
            (
                original.find(needle).unwrap(),
                shown.text.find(needle).unwrap(),
            )
        };
        for needle in ["x", "y", "z"] {
            let (before, after) = find(needle);
            assert_eq!(shown.offset(before), after, "{needle}");
        }
        assert_eq!(shown.offset(original.len()), shown.text.len());
        // A span over the escape covers all of its escaped form.
        assert_eq!(shown.offset(1)..shown.offset(2), 1..7);
    }
}
