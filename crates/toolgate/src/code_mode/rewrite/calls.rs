//! Calls and values: `asyncio.gather(..., return_exceptions=...)`,
//! `asyncio.create_task`/`ensure_future`/`wait_for`, `asyncio.Semaphore`/`Lock`,
//! `next(x for x in ...)`, and methods taken as values (`key=str.lower`,
//! `key=d.get`), which this Python cannot take; and `round`, whose `round(x, n)`
//! here is not correctly rounded (`round(2.675, 2)` is 2.68, not 2.67).

use super::Needs;
use super::source::{Edits, closing, is_called, is_name_byte, split_top, word_positions};

pub(super) fn rewrite(code: &str, mask: &str, edits: &mut Edits, needs: &mut Needs) {
    asyncio(mask, edits, needs);
    next_of_generator(code, mask, edits);
    methods_as_values(mask, edits);
    for at in word_positions(mask, "round") {
        if is_called(mask, at + 5) {
            needs.round = true;
            edits.replace(at, at + 5, "_round");
        }
    }
}

fn asyncio(mask: &str, edits: &mut Edits, needs: &mut Needs) {
    for (name, replacement) in [
        ("asyncio.create_task", "_asyncio_task"),
        ("asyncio.ensure_future", "_asyncio_task"),
        ("asyncio.wait_for", "_asyncio_wait_for"),
        ("asyncio.Semaphore", "_asyncio_Semaphore"),
        ("asyncio.BoundedSemaphore", "_asyncio_Semaphore"),
        ("asyncio.Lock", "_asyncio_Semaphore"),
    ] {
        for at in word_positions(mask, name) {
            needs.asyncio_extras = true;
            edits.replace(at, at + name.len(), replacement);
        }
    }
    for at in word_positions(mask, "asyncio.gather") {
        let open = at + "asyncio.gather".len();
        let Some(close) = closing(mask, open) else {
            continue;
        };
        let mut settled = false;
        let mut offset = open + 1;
        for arg in split_top(&mask[open + 1..close], ",") {
            if let Some(value) = arg.trim().strip_prefix("return_exceptions") {
                settled = value.trim_start().trim_start_matches('=').trim() == "True";
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
            needs.asyncio_extras = true;
            edits.replace(at, open, "_asyncio_gather_settled");
        }
    }
}

/// `next(x for x in xs)`: generator expressions are lists here, so the first
/// argument is made an iterator.
fn next_of_generator(code: &str, mask: &str, edits: &mut Edits) {
    for at in word_positions(mask, "next") {
        let open = at + 4;
        let Some(close) = closing(mask, open) else {
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
}

/// `key=str.lower`, `map(str.strip, ...)` and `key=d.get` as lambdas.
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
    for (dot, _) in mask.match_indices(".get") {
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
