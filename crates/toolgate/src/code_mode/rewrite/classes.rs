//! Functions and classes this Python cannot define as written:
//!
//! - a generator: the function collects what it would yield and returns an
//!   iterator over it (run eagerly, which a program that consumes what it
//!   yields cannot tell apart);
//! - `@staticmethod`: a callable class attribute, called the same from the
//!   class and from an instance;
//! - `@property`: a plain method, which every read of the attribute calls;
//! - a class whose base class is defined in the program: the base's body is
//!   copied into it, and `super().m(...)` calls `Base.m(self, ...)`.

use std::collections::BTreeMap;

use super::Needs;
use super::source::{
    Block, Edits, block, closing, indent, is_called, is_name, is_name_byte, lines, statement_end,
    word_positions,
};

pub(super) fn rewrite(code: &str, mask: &str, edits: &mut Edits, needs: &mut Needs) {
    generators(mask, edits);
    decorators(mask, edits, needs);
    inheritance(code, mask, edits);
}

/// The statements of `block` that start with `keyword`, outside the functions
/// and classes nested in it; `None` when `keyword` is also used otherwise (a
/// `yield` inside an expression).
fn own_statements(mask: &str, block: &Block, keyword: &str) -> Option<Vec<usize>> {
    let mut found = Vec::new();
    let mut nested: Option<usize> = None;
    for (offset, line) in lines(&mask[block.body..block.end]) {
        let body = line.trim_start();
        if body.is_empty() {
            continue;
        }
        let at = block.body + offset + indent(line);
        if nested.is_some_and(|n| indent(line) > n) {
            continue;
        }
        nested = None;
        if ["def ", "async def ", "class "]
            .iter()
            .any(|k| body.starts_with(k))
        {
            nested = Some(indent(line));
            continue;
        }
        let starts = body
            .strip_prefix(keyword)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '(', '\t']));
        if starts {
            found.push(at);
        }
        let elsewhere = word_positions(line, keyword)
            .into_iter()
            .any(|p| p != indent(line));
        if elsewhere {
            return None;
        }
    }
    Some(found)
}

fn generators(mask: &str, edits: &mut Edits) {
    for (start, line) in lines(mask) {
        if !line.trim_start().starts_with("def ") {
            continue;
        }
        let Some(block) = block(mask, start) else {
            continue;
        };
        let Some(yields) = own_statements(mask, &block, "yield") else {
            continue;
        };
        if yields.is_empty() {
            continue;
        }
        let Some(returns) = own_statements(mask, &block, "return") else {
            continue;
        };
        let pad = " ".repeat(block.body_indent);
        edits.insert(block.body, format!("{pad}_yielded = []\n"));
        for at in yields {
            let end = mask[..statement_end(mask, at)].trim_end().len();
            let rest = mask[at + 5..end].trim_start();
            if rest.is_empty() {
                edits.replace(at, end, "_yielded.append(None)");
            } else if let Some(iterable) = rest.strip_prefix("from ") {
                edits.replace(at, end - iterable.len(), "_yielded.extend(");
                edits.insert(end, ")");
            } else {
                // `yield a, b` yields a tuple.
                edits.replace(at, end - rest.len(), "_yielded.append((");
                edits.insert(end, "))");
            }
        }
        for at in returns {
            edits.replace(at, statement_end(mask, at), "return iter(_yielded)");
        }
        after_block(mask, &block, edits, format!("{pad}return iter(_yielded)"));
    }
}

fn decorators(mask: &str, edits: &mut Edits, needs: &mut Needs) {
    let mut properties = Vec::new();
    for (start, line) in lines(mask) {
        let decorator = line.trim();
        if decorator != "@staticmethod" && decorator != "@property" {
            continue;
        }
        let def_at = start + line.len() + 1;
        let Some(def_line) = mask.get(def_at..).and_then(|rest| rest.lines().next()) else {
            continue;
        };
        let Some(name) = def_line
            .trim_start()
            .strip_prefix("def ")
            .and_then(|rest| rest.split('(').next())
            .map(str::trim)
            .filter(|name| is_name(name))
        else {
            continue;
        };
        let Some(function) = block(mask, def_at) else {
            continue;
        };
        let from = start + indent(line);
        if decorator == "@staticmethod" {
            needs.staticmethod = true;
            edits.replace(from, start + line.len(), "");
            let pad = " ".repeat(function.indent);
            after_block(
                mask,
                &function,
                edits,
                format!("{pad}{name} = _staticmethod({name})"),
            );
        } else if !mask.contains(&format!("@{name}.")) && !is_assigned(mask, name) {
            edits.replace(from, start + line.len(), "");
            properties.push(name.to_owned());
        }
    }
    for name in properties {
        let attribute = format!(".{name}");
        let bytes = mask.as_bytes();
        for (at, _) in mask.match_indices(&attribute) {
            let end = at + attribute.len();
            let before = at.checked_sub(1).map(|i| bytes[i]);
            if bytes.get(end).is_some_and(|b| is_name_byte(*b))
                || !before.is_some_and(|b| is_name_byte(b) || b == b')' || b == b']')
                || is_called(mask, end)
            {
                continue;
            }
            edits.insert(end, "()");
        }
    }
}

/// Adds `line` after the last line of `block`, as part of that line (so its
/// errors point there).
fn after_block(mask: &str, block: &Block, edits: &mut Edits, line: String) {
    let end = if mask[..block.end].ends_with('\n') {
        block.end - 1
    } else {
        block.end
    };
    edits.insert(end, format!("\n{line}"));
}

/// Whether the program gives some object an attribute called `name` other
/// than through the property: assigns to it, or declares it as a class field
/// (`name: int`, as a dataclass does).
fn is_assigned(mask: &str, name: &str) -> bool {
    let attribute = format!(".{name}");
    let assigned = mask.match_indices(&attribute).any(|(at, _)| {
        let rest = mask[at + attribute.len()..].trim_start_matches([' ', '\t']);
        (rest.starts_with('=') && !rest.starts_with("=="))
            || ["+=", "-=", "*=", "/=", "|="]
                .iter()
                .any(|op| rest.starts_with(op))
    });
    let declared = lines(mask).any(|(_, line)| {
        indent(line) > 0
            && line
                .trim_start()
                .strip_prefix(name)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
    });
    assigned || declared
}

/// A class defined at the top level: its block and the text of its bases.
struct Class<'a> {
    block: Block,
    bases: Option<&'a str>,
    header_end: usize,
}

fn inheritance(code: &str, mask: &str, edits: &mut Edits) {
    let mut classes: BTreeMap<&str, Class<'_>> = BTreeMap::new();
    for (start, line) in lines(mask) {
        let Some(rest) = line.strip_prefix("class ") else {
            continue;
        };
        let name_len = rest.bytes().take_while(|b| is_name_byte(*b)).count();
        let name = &rest[..name_len];
        let Some(block) = block(mask, start) else {
            continue;
        };
        let open = start + 6 + name_len;
        let bases = closing(mask, open).map(|close| &mask[open + 1..close]);
        let header_end = statement_end(mask, start);
        classes.insert(
            name,
            Class {
                block,
                bases,
                header_end,
            },
        );
    }
    for (name, class) in &classes {
        let Some(base_name) = class.bases.map(str::trim) else {
            continue;
        };
        let Some(base) = classes.get(base_name).filter(|b| b.bases.is_none()) else {
            continue;
        };
        if base_name == *name {
            continue;
        }
        let start = class.block.start;
        edits.replace(start, class.header_end, format!("class {name}:"));
        let pad = " ".repeat(class.block.body_indent);
        let mut copied = String::new();
        for (_, line) in lines(&code[base.block.body..base.block.end]) {
            let own = line
                .get(base.block.body_indent.min(indent(line))..)
                .unwrap_or("");
            if own.is_empty() {
                copied.push('\n');
            } else {
                copied.push_str(&format!("{pad}{own}\n"));
            }
        }
        edits.insert(class.block.body, copied);
        let body = &mask[class.block.body..class.block.end];
        for (offset, _) in body.match_indices("super().") {
            let at = class.block.body + offset;
            let method_at = at + "super().".len();
            let method_len = mask[method_at..]
                .bytes()
                .take_while(|b| is_name_byte(*b))
                .count();
            let open = method_at + method_len;
            let Some(close) = closing(mask, open) else {
                continue;
            };
            let method = &mask[method_at..open];
            let separator = if mask[open + 1..close].trim().is_empty() {
                ""
            } else {
                ", "
            };
            edits.replace(
                at,
                open + 1,
                format!("{base_name}.{method}(self{separator}"),
            );
        }
    }
}
