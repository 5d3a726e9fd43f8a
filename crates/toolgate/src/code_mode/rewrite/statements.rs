//! Line-shaped statements: imports of served modules, `del`, `async with` and
//! `raise ... from ...`.

use super::source::{Edits, is_name, lines, split_top};
use super::{Needs, SERVED};

pub(super) fn rewrite(code: &str, mask: &str, edits: &mut Edits, needs: &mut Needs) {
    for (start, line) in lines(mask) {
        let body = line.trim_start();
        let from = start + line.len() - body.len();
        let end = start + line.len();
        if line.contains(';') || body.ends_with('\\') {
            continue;
        }
        if let Some(rest) = body.strip_prefix("import ") {
            if let Some(rewritten) = import(rest, needs) {
                edits.replace(from, end, rewritten);
            }
        } else if let Some(rest) = body.strip_prefix("from ") {
            if let Some(rewritten) = from_import(rest, needs) {
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
fn import(rest: &str, needs: &mut Needs) -> Option<String> {
    let mut out = Vec::new();
    let mut served = false;
    for item in rest.split(',') {
        let words: Vec<&str> = item.split_whitespace().collect();
        let (module, alias) = match words[..] {
            [module] => (module, module),
            [module, "as", alias] => (module, alias),
            _ => return None,
        };
        if let Some((name, _)) = SERVED.iter().find(|(name, _)| *name == module) {
            served = true;
            needs.modules.insert(name);
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
fn from_import(rest: &str, needs: &mut Needs) -> Option<String> {
    let (module, names) = rest.split_once(" import ")?;
    let (module, _) = SERVED.iter().find(|(name, _)| *name == module.trim())?;
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
    needs.modules.insert(module);
    Some(statement(out))
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
        // Masking keeps whitespace, so the trimmed source and mask align.
        let text = source[at..at + target.len()].trim();
        let shape = target.trim();
        at += target.len() + 1;
        if is_name(text) {
            out.push(format!("{text} = None"));
        } else if shape.ends_with(']') {
            let open = top_level_open_bracket(shape)?;
            let (base, key) = (&text[..open], &text[open + 1..text.len() - 1]);
            if split_top(&shape[open + 1..shape.len() - 1], ":").len() > 1 {
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
