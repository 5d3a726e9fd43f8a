//! The program's source as the rewrites see it: masked so that only code
//! matches, edited by byte ranges, and mapped line by line back to the lines
//! the model wrote.

/// Replacements of byte ranges of the source, applied together.
#[derive(Default)]
pub(super) struct Edits(Vec<(usize, usize, String)>);

impl Edits {
    pub(super) fn replace(&mut self, start: usize, end: usize, with: impl Into<String>) {
        self.0.push((start, end, with.into()));
    }

    pub(super) fn insert(&mut self, at: usize, text: impl Into<String>) {
        self.replace(at, at, text);
    }

    /// The source with every edit that does not overlap an earlier one applied,
    /// and for each line of it the line of `code` it came from: lines an edit
    /// adds belong to the line the edit starts on.
    pub(super) fn apply(mut self, code: &str) -> (String, Vec<u32>) {
        self.0.sort_by_key(|(start, end, _)| (*start, *end));
        let mut out = Written {
            text: String::with_capacity(code.len() + 64),
            lines: vec![1],
            line: 1,
        };
        let mut at = 0;
        for (start, end, with) in self.0 {
            if start < at {
                continue;
            }
            out.push(&code[at..start], true);
            out.push(&with, false);
            out.line += count_lines(&code[start..end]);
            at = end;
        }
        out.push(&code[at..], true);
        if out.text.ends_with('\n') || out.text.is_empty() {
            out.lines.pop();
        }
        (out.text, out.lines)
    }
}

/// The rewritten text and the original line of each of its lines.
struct Written {
    text: String,
    lines: Vec<u32>,
    line: u32,
}

impl Written {
    /// Appends `text`; `original` text moves the original line on with it.
    fn push(&mut self, text: &str, original: bool) {
        for piece in text.split_inclusive('\n') {
            self.text.push_str(piece);
            if piece.ends_with('\n') {
                if original {
                    self.line += 1;
                }
                self.lines.push(self.line);
            }
        }
    }
}

fn count_lines(text: &str) -> u32 {
    u32::try_from(text.matches('\n').count()).unwrap_or(u32::MAX)
}

/// For each line the interpreter runs, the program's own line (0 inside the
/// prelude), so that every line number the model sees is its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LineMap(pub(crate) Vec<u32>);

impl LineMap {
    /// The program's own line for the interpreter's `line`, or `None` inside
    /// the prelude.
    pub(crate) fn program_line(&self, line: u32) -> Option<u32> {
        match self.0.get(usize::try_from(line).ok()?.checked_sub(1)?) {
            Some(0) => None,
            Some(own) => Some(*own),
            // Past the map (a map that was not kept): as it is.
            None => Some(line),
        }
    }

    /// A traceback with the program's own line numbers; frames inside the
    /// prelude are shown as the served module's.
    pub(crate) fn traceback(&self, traceback: &str, script: &str) -> String {
        let marker = format!("File \"{script}\", line ");
        let mut out = String::with_capacity(traceback.len());
        let mut rest = traceback;
        while let Some(at) = rest.find(&marker) {
            out.push_str(&rest[..at]);
            let after = &rest[at + marker.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            match after[..digits].parse::<u32>().ok() {
                Some(line) => match self.program_line(line) {
                    Some(own) => out.push_str(&format!("{marker}{own}")),
                    None => out.push_str("File \"<served module>\", line ?"),
                },
                None => out.push_str(&marker),
            }
            rest = &after[digits..];
        }
        out.push_str(rest);
        out
    }
}

/// The source with the insides of string literals and comments blanked out
/// (same length, newlines kept), so that only code is matched.
pub(super) fn mask(code: &str) -> String {
    let bytes = code.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            quote @ (b'\'' | b'"') => {
                let triple = bytes.get(i..i + 3) == Some(&[quote, quote, quote][..]);
                i += if triple { 3 } else { 1 };
                while i < bytes.len() {
                    if triple && bytes.get(i..i + 3) == Some(&[quote, quote, quote][..]) {
                        i += 3;
                        break;
                    }
                    if !triple && (bytes[i] == quote || bytes[i] == b'\n') {
                        i += 1;
                        break;
                    }
                    let step = if bytes[i] == b'\\' { 2 } else { 1 };
                    for j in i..(i + step).min(bytes.len()) {
                        if bytes[j] != b'\n' {
                            out[j] = b' ';
                        }
                    }
                    i += step;
                }
            }
            _ => i += 1,
        }
    }
    // Whole characters inside literals were blanked, byte by byte, so the mask
    // is valid UTF-8 with every offset where the source has it.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Each line of `text` (without its newline) with its byte offset.
pub(super) fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |line| {
        let start = at;
        at += line.len();
        (start, line.trim_end_matches(['\n', '\r']))
    })
}

/// How far a line is indented.
pub(super) fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `text` split at `separator` where no bracket is open.
pub(super) fn split_top<'a>(text: &'a str, separator: &str) -> Vec<&'a str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < text.len() {
        match text.as_bytes()[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ if depth == 0 && text[i..].starts_with(separator) => {
                parts.push(&text[start..i]);
                i += separator.len();
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&text[start..]);
    parts
}

/// The index of the bracket closing the one at `at`, if `at` opens one.
pub(super) fn closing(mask: &str, at: usize) -> Option<usize> {
    if !matches!(mask.as_bytes().get(at), Some(b'(' | b'[' | b'{')) {
        return None;
    }
    let mut depth = 0i32;
    for (i, b) in mask.bytes().enumerate().skip(at) {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where the statement starting at `at` ends: the first newline outside
/// brackets (or the end).
pub(super) fn statement_end(mask: &str, at: usize) -> usize {
    let mut depth = 0i32;
    for (i, b) in mask.bytes().enumerate().skip(at) {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'\n' if depth <= 0 => return i,
            _ => {}
        }
    }
    mask.len()
}

/// Where `name` occurs as a whole (dotted) name in code.
pub(super) fn word_positions(mask: &str, name: &str) -> Vec<usize> {
    let bytes = mask.as_bytes();
    mask.match_indices(name)
        .map(|(at, _)| at)
        .filter(|at| {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(at + name.len());
            !before.is_some_and(|b| is_name_byte(b) || b == b'.')
                && !after.is_some_and(|b| is_name_byte(*b))
        })
        .collect()
}

/// Whether a `(` follows position `at` (spaces allowed): a call, not a value.
pub(super) fn is_called(mask: &str, at: usize) -> bool {
    mask[at..].trim_start_matches([' ', '\t']).starts_with('(')
}

pub(super) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

pub(super) fn is_name(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// A block: the line that opens it and the lines indented under it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    /// Where the opening line starts, and its indentation.
    pub start: usize,
    pub indent: usize,
    /// Where the body's first line starts, and its indentation.
    pub body: usize,
    pub body_indent: usize,
    /// Where the block ends: after the newline of its last line.
    pub end: usize,
}

/// The block whose opening line (ending with `:`, possibly over several lines)
/// starts at `start`; `None` when its body is on the same line.
pub(super) fn block(mask: &str, start: usize) -> Option<Block> {
    let header_end = statement_end(mask, start);
    if !mask[start..header_end].trim_end().ends_with(':') {
        return None;
    }
    let own = indent(&mask[start..header_end]);
    let base = (header_end + 1).min(mask.len());
    let mut body = None;
    let mut end = base;
    for (offset, line) in lines(&mask[base..]) {
        if line.trim().is_empty() {
            continue;
        }
        if indent(line) <= own {
            break;
        }
        body.get_or_insert((base + offset, indent(line)));
        end = (base + offset + line.len() + 1).min(mask.len());
    }
    let (body, body_indent) = body?;
    Some(Block {
        start,
        indent: own,
        body,
        body_indent,
        end,
    })
}
