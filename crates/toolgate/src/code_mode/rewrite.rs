//! The program as the interpreter gets it: a prelude, then the model's own source
//! with the few constructs this Python lacks written as ones it has, line for
//! line, so that every line number the model sees is its own.
//!
//! - `asyncio` and `json` are there without an import, as in peers' runtimes.
//! - Modules the interpreter lacks (`statistics`, `operator`, `heapq`, `pprint`,
//!   `string`, `textwrap`, `io`) are served in pure Python (`served/*.py`): the
//!   prelude defines each one a program imports, and its `import` becomes an
//!   assignment.
//! - `asyncio.gather(..., return_exceptions=True)`, `asyncio.create_task`,
//!   `asyncio.Semaphore` with `async with`, `del x[k]`, `raise ... from ...`,
//!   `key=str.lower` / `key=d.get` and `next(x for x in ...)` become what they
//!   mean here.
//!
//! Only code is rewritten: string literals and comments are masked first.

use std::collections::BTreeSet;

/// The modules served in pure Python, each with its source.
const SERVED: &[(&str, &str)] = &[
    ("statistics", include_str!("served/statistics.py")),
    ("operator", include_str!("served/operator.py")),
    ("heapq", include_str!("served/heapq.py")),
    ("pprint", include_str!("served/pprint.py")),
    ("string", include_str!("served/string.py")),
    ("textwrap", include_str!("served/textwrap.py")),
    ("io", include_str!("served/io.py")),
];

/// What `asyncio` lacks here, defined when a program uses it.
const ASYNCIO_EXTRAS: &str = include_str!("served/asyncio_extras.py");

/// Imported for every program, as peers' runtimes do.
const ALWAYS: &str = "import asyncio\nimport json\n";

/// The names of the modules served in pure Python.
pub(super) fn served_modules() -> impl Iterator<Item = &'static str> {
    SERVED.iter().map(|(name, _)| *name)
}

/// A program ready for the interpreter.
#[derive(Debug)]
pub(super) struct Rewritten {
    /// The prelude and the rewritten program.
    pub code: String,
    pub prelude: Prelude,
}

/// How many lines the prelude takes: the program's line `n` is the
/// interpreter's `n + lines`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Prelude {
    pub lines: u32,
}

impl Prelude {
    /// The program's own line number for the interpreter's `line`, or `None`
    /// inside the prelude.
    pub(super) fn program_line(&self, line: u32) -> Option<u32> {
        line.checked_sub(self.lines).filter(|l| *l > 0)
    }

    /// A traceback with the program's own line numbers; frames inside the
    /// prelude are shown as the served module's.
    pub(super) fn traceback(&self, traceback: &str, script: &str) -> String {
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

/// The program with its prelude, rewritten for the interpreter.
pub(super) fn rewrite(code: &str) -> Rewritten {
    let mask = mask(code);
    let mut edits = Edits::default();
    let mut imported = BTreeSet::new();
    statements(code, &mask, &mut edits, &mut imported);
    let asyncio = calls(code, &mask, &mut edits);
    methods_as_values(&mask, &mut edits);
    let mut prelude = String::from(ALWAYS);
    if asyncio {
        prelude.push_str(ASYNCIO_EXTRAS);
    }
    for (name, source) in SERVED {
        if imported.contains(*name) {
            prelude.push_str(source);
        }
    }
    let prelude_lines = u32::try_from(prelude.lines().count()).unwrap_or(u32::MAX);
    prelude.push_str(&edits.apply(code));
    Rewritten {
        code: prelude,
        prelude: Prelude {
            lines: prelude_lines,
        },
    }
}

/// Replacements of byte ranges of the source, applied together.
#[derive(Default)]
struct Edits(Vec<(usize, usize, String)>);

impl Edits {
    fn replace(&mut self, start: usize, end: usize, with: impl Into<String>) {
        self.0.push((start, end, with.into()));
    }

    /// The source with every edit that does not overlap an earlier one applied.
    fn apply(mut self, code: &str) -> String {
        self.0.sort_by_key(|(start, end, _)| (*start, *end));
        let mut out = String::with_capacity(code.len() + 64);
        let mut at = 0;
        for (start, end, with) in self.0 {
            if start < at {
                continue;
            }
            out.push_str(&code[at..start]);
            out.push_str(&with);
            at = end;
        }
        out.push_str(&code[at..]);
        out
    }
}

/// The source with the insides of string literals and comments blanked out
/// (same length, newlines kept), so that only code is matched.
fn mask(code: &str) -> String {
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
    // Only ASCII bytes were blanked, and whole characters inside literals, so
    // the mask stays valid UTF-8 where it matters; anything else is code.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Each line of `mask` with its byte offset.
fn lines(mask: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    mask.split_inclusive('\n').map(move |line| {
        let start = at;
        at += line.len();
        (start, line.trim_end_matches(['\n', '\r']))
    })
}

/// Line-shaped statements: imports of served modules, `del`, `async with` and
/// `raise ... from ...`.
fn statements(code: &str, mask: &str, edits: &mut Edits, imported: &mut BTreeSet<String>) {
    for (start, line) in lines(mask) {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let from = start + indent.len();
        let end = start + line.len();
        if line.contains(';') || body.ends_with('\\') {
            continue;
        }
        if let Some(rest) = body.strip_prefix("import ") {
            if let Some(rewritten) = import(rest, imported) {
                edits.replace(from, end, rewritten);
            }
        } else if let Some(rest) = body.strip_prefix("from ") {
            if let Some(rewritten) = from_import(rest, imported) {
                edits.replace(from, end, rewritten);
            }
        } else if let Some(targets) = body.strip_prefix("del ") {
            if let Some(rewritten) = delete(&code[from + 4..end], targets) {
                edits.replace(from, end, rewritten);
            }
        } else if let Some(rest) = body.strip_prefix("async with ") {
            let Some(item) = rest.trim_end().strip_suffix(':') else {
                continue;
            };
            let item = &code[from + 11..from + 11 + item.len()];
            let rewritten = match split_top(item, " as ").as_slice() {
                [context, name] => format!("if ({} := {}) or True:", name.trim(), context.trim()),
                _ => "if True:".to_owned(),
            };
            edits.replace(from, end, rewritten);
        } else if body.starts_with("raise ")
            && let Some(at) = body.rfind(" from ")
        {
            edits.replace(from + at, end, "");
        }
    }
}

/// `import a, b as c`: the served modules among them become assignments.
fn import(rest: &str, imported: &mut BTreeSet<String>) -> Option<String> {
    let mut out = Vec::new();
    let mut served = false;
    for item in rest.split(',') {
        let words: Vec<&str> = item.split_whitespace().collect();
        let (module, alias) = match words[..] {
            [module] => (module, module),
            [module, "as", alias] => (module, alias),
            _ => return None,
        };
        if is_served(module) {
            served = true;
            imported.insert(module.to_owned());
            if alias != module {
                out.push(format!("{alias} = {module}"));
            }
        } else {
            out.push(format!("import {}", item.trim()));
        }
    }
    served.then(|| statement(out))
}

/// `from m import x, y as z` of a served module: assignments from its class.
fn from_import(rest: &str, imported: &mut BTreeSet<String>) -> Option<String> {
    let (module, names) = rest.split_once(" import ")?;
    let module = module.trim();
    if !is_served(module) {
        return None;
    }
    let names = names.trim().trim_start_matches('(').trim_end_matches(')');
    let mut out = Vec::new();
    for item in names.split(',').filter(|i| !i.trim().is_empty()) {
        let words: Vec<&str> = item.split_whitespace().collect();
        let (name, alias) = match words[..] {
            [name] if name != "*" => (name, name),
            [name, "as", alias] => (name, alias),
            _ => return None,
        };
        out.push(format!("{alias} = {module}.{name}"));
    }
    imported.insert(module.to_owned());
    Some(statement(out))
}

fn is_served(module: &str) -> bool {
    SERVED.iter().any(|(name, _)| *name == module)
}

/// Simple statements joined on one line; `pass` when there are none.
fn statement(parts: Vec<String>) -> String {
    if parts.is_empty() {
        "pass".to_owned()
    } else {
        parts.join("; ")
    }
}

/// `del d[k], name`: `d.pop(k)`, a slice emptied, a name set to `None`.
fn delete(source: &str, masked: &str) -> Option<String> {
    let mut out = Vec::new();
    let mut at = 0;
    for target in split_top(masked, ",") {
        let text = source[at..at + target.len()].trim();
        at += target.len() + 1;
        let masked_target = target.trim();
        if is_name(text) {
            out.push(format!("{text} = None"));
        } else if masked_target.ends_with(']') {
            let open = top_level_open_bracket(masked_target)?;
            let (base, key) = (&text[..open], &text[open + 1..text.len() - 1]);
            if split_top(&masked_target[open + 1..masked_target.len() - 1], ":").len() > 1 {
                out.push(format!("{base}[{key}] = []"));
            } else {
                out.push(format!("{base}.pop({key})"));
            }
        } else {
            return None;
        }
    }
    Some(statement(out))
}

/// Where the last top-level `[` of `target` opens.
fn top_level_open_bracket(target: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in target.char_indices().rev() {
        match c {
            ']' | ')' | '}' => depth += 1,
            '[' | '(' | '{' => {
                depth -= 1;
                if depth == 0 && c == '[' {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// `text` split at `separator` where no bracket is open.
fn split_top<'a>(text: &'a str, separator: &str) -> Vec<&'a str> {
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

/// Calls to rewrite: `asyncio.gather(..., return_exceptions=...)`,
/// `asyncio.create_task`/`ensure_future`/`wait_for`, `asyncio.Semaphore`/`Lock`,
/// and `next(x for x in ...)`. Whether the `asyncio` extras are needed.
fn calls(code: &str, mask: &str, edits: &mut Edits) -> bool {
    let mut extras = false;
    for (name, replacement) in [
        ("asyncio.create_task", "_asyncio_task"),
        ("asyncio.ensure_future", "_asyncio_task"),
        ("asyncio.wait_for", "_asyncio_wait_for"),
        ("asyncio.Semaphore", "_asyncio_Semaphore"),
        ("asyncio.BoundedSemaphore", "_asyncio_Semaphore"),
        ("asyncio.Lock", "_asyncio_Semaphore"),
    ] {
        for at in word_positions(mask, name) {
            extras = true;
            edits.replace(at, at + name.len(), replacement);
        }
    }
    for at in word_positions(mask, "asyncio.gather") {
        let open = at + "asyncio.gather".len();
        let Some(close) = call_end(mask, open) else {
            continue;
        };
        let args = &mask[open + 1..close];
        let mut settled = false;
        let mut offset = open + 1;
        for arg in split_top(args, ",") {
            let trimmed = arg.trim();
            if let Some(value) = trimmed.strip_prefix("return_exceptions") {
                let value = value.trim_start().trim_start_matches('=').trim();
                settled = value == "True";
                // The keyword and the comma before it.
                let from = mask[..offset]
                    .rfind(',')
                    .filter(|c| *c > open)
                    .unwrap_or(offset);
                edits.replace(from, offset + arg.len(), "");
            }
            offset += arg.len() + 1;
        }
        if settled {
            extras = true;
            edits.replace(at, open, "_asyncio_gather_settled");
        }
    }
    for at in word_positions(mask, "next") {
        let open = at + 4;
        let Some(close) = call_end(mask, open) else {
            continue;
        };
        let first = split_top(&mask[open + 1..close], ",")[0];
        if first
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == "for")
        {
            let end = open + 1 + first.len();
            edits.replace(open + 1, end, format!("iter({})", &code[open + 1..end]));
        }
    }
    extras
}

/// `key=str.lower`, `map(str.strip, ...)` and `key=d.get` as lambdas, since
/// methods cannot be taken as values here.
fn methods_as_values(mask: &str, edits: &mut Edits) {
    const STR_METHODS: &[&str] = &[
        "lower",
        "upper",
        "strip",
        "lstrip",
        "rstrip",
        "title",
        "capitalize",
        "casefold",
        "split",
        "swapcase",
        "isdigit",
        "isalpha",
        "isalnum",
        "isspace",
        "isupper",
        "islower",
    ];
    for method in STR_METHODS {
        let name = format!("str.{method}");
        for at in word_positions(mask, &name) {
            if !is_called(mask, at + name.len()) {
                edits.replace(
                    at,
                    at + name.len(),
                    format!("(lambda _s, *_a: _s.{method}(*_a))"),
                );
            }
        }
    }
    let bytes = mask.as_bytes();
    let mut search = 0;
    while let Some(found) = mask[search..].find(".get") {
        let dot = search + found;
        search = dot + 4;
        let after = dot + 4;
        if bytes.get(after).is_some_and(|b| is_name_byte(*b)) || is_called(mask, after) {
            continue;
        }
        let mut start = dot;
        while start > 0 && (is_name_byte(bytes[start - 1]) || bytes[start - 1] == b'.') {
            start -= 1;
        }
        let receiver = &mask[start..dot];
        if receiver.is_empty() || receiver.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        edits.replace(
            start,
            after,
            format!("(lambda _k, *_d: {receiver}.get(_k, *_d))"),
        );
    }
}

/// Whether a `(` follows position `at` (spaces allowed): a call, not a value.
fn is_called(mask: &str, at: usize) -> bool {
    mask[at..].trim_start_matches([' ', '\t']).starts_with('(')
}

/// Where `name` occurs as a whole dotted name followed by `(` or not, in code.
fn word_positions(mask: &str, name: &str) -> Vec<usize> {
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

/// The index of the `)` closing the call whose `(` follows `at` (spaces
/// allowed), if `at` is followed by a call.
fn call_end(mask: &str, at: usize) -> Option<usize> {
    if mask.as_bytes().get(at) != Some(&b'(') {
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

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program part of a rewrite, without the prelude.
    fn body(code: &str) -> String {
        let rewritten = rewrite(code);
        rewritten
            .code
            .lines()
            .skip(rewritten.prelude.lines as usize)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_served_module_import_becomes_assignments_on_the_same_line() {
        let code =
            "import statistics as st, json\nfrom heapq import nlargest, heappush as push\nx = 1";
        assert_eq!(
            body(code),
            "st = statistics; import json\nnlargest = heapq.nlargest; push = heapq.heappush\nx = 1"
        );
        let rewritten = rewrite(code);
        assert!(rewritten.code.contains("class statistics:"));
        assert!(rewritten.code.contains("class heapq:"));
        assert!(!rewritten.code.contains("class pprint:"));
    }

    #[test]
    fn strings_and_comments_are_never_rewritten() {
        let code = "s = 'del x[1]'  # import statistics\nprint(\"key=str.lower\")";
        assert_eq!(body(code), code);
    }

    #[test]
    fn del_gather_keywords_tasks_and_methods_as_values_are_rewritten() {
        assert_eq!(
            body("del d['a'], x, xs[1:3]"),
            "d.pop('a'); x = None; xs[1:3] = []"
        );
        assert_eq!(
            body("r = await asyncio.gather(*calls, return_exceptions=True)"),
            "r = await _asyncio_gather_settled(*calls)"
        );
        assert_eq!(
            body("t = asyncio.create_task(f())\nasync with sem:\n    pass"),
            "t = _asyncio_task(f())\nif True:\n    pass"
        );
        assert_eq!(
            body("best = max(counts, key=counts.get)"),
            "best = max(counts, key=(lambda _k, *_d: counts.get(_k, *_d)))"
        );
        assert_eq!(
            body("names = sorted(xs, key=str.lower)"),
            "names = sorted(xs, key=(lambda _s, *_a: _s.lower(*_a)))"
        );
        assert_eq!(
            body("first = next(u for u in users if u['ok'])"),
            "first = next(iter(u for u in users if u['ok']))"
        );
        assert_eq!(
            body("raise RuntimeError('x') from e"),
            "raise RuntimeError('x')"
        );
    }

    #[test]
    fn tracebacks_show_the_programs_own_line_numbers() {
        let rewritten = rewrite("import statistics\nstatistics.mean([])");
        let line = rewritten.prelude.lines + 2;
        let traceback = format!(
            "  File \"program.py\", line {line}, in <module>\n  File \"program.py\", line 5, in _statistics_mean"
        );
        assert_eq!(
            rewritten.prelude.traceback(&traceback, "program.py"),
            "  File \"program.py\", line 2, in <module>\n  File \"<served module>\", line ?, in _statistics_mean"
        );
    }
}
