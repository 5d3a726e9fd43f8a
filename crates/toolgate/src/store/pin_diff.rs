//! A pin's recorded change as a line diff, part by part: what `toolgate pins
//! diff` prints and the console's Catalog shows beside **Accept**.

use serde_json::Value;

use super::pins::{PINNED_FIELDS, Pin, join_fields};

/// The change of a pin, part by part, as `-`/`+` lines.
pub fn pin_diff(pin: &Pin) -> String {
    let Some(change) = &pin.change else {
        return String::new();
    };
    let mut out = format!(
        "{}: its {} changed since it was pinned at {} (seen {})\n",
        pin.tool,
        join_fields(&pin.changed_fields()),
        pin.pinned_at,
        change.seen_at
    );
    for (key, words) in PINNED_FIELDS {
        let before = pin.definition.get(key);
        let after = change.definition.get(key);
        if before == after {
            continue;
        }
        out.push_str(&format!("\n{words}\n"));
        for line in line_diff(&text_of(before), &text_of(after)) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// A definition part as lines: text as it is, anything else as indented JSON.
fn text_of(value: Option<&Value>) -> String {
    match value {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// The lines of `before` and `after`, marked `  ` (both), `- ` (removed), `+ `
/// (added), by longest common subsequence.
fn line_diff(before: &str, after: &str) -> Vec<String> {
    const MAX_LINES: usize = 2000;
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    if a.len() > MAX_LINES || b.len() > MAX_LINES {
        let mut out: Vec<String> = a.iter().map(|l| format!("  - {l}")).collect();
        out.extend(b.iter().map(|l| format!("  + {l}")));
        return out;
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push(format!("    {}", a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("  - {}", a[i]));
            i += 1;
        } else {
            out.push(format!("  + {}", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_diff_marks_removed_and_added_lines_around_common_ones() {
        let diff = line_diff("a\nb\nc", "a\nB\nc\nd");
        assert_eq!(diff, ["    a", "  - b", "  + B", "    c", "  + d"]);
        assert_eq!(line_diff("", "x"), ["  + x"]);
        assert_eq!(line_diff("x", "x"), ["    x"]);
    }
}
