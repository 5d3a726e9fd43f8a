//! The summary an import ends with: how many operations became tools, which were
//! left out and why (grouped by reason), and the notes grouped by kind, each group
//! with its first few examples, so a thousand-operation API reads in a screen.

use indexmap::IndexMap;

use super::{NoteKind, RestImported};

/// Examples shown per group.
const EXAMPLES: usize = 3;

impl RestImported {
    /// The summary, one line a string.
    pub fn summary(&self) -> Vec<String> {
        let mut out = vec![format!(
            "imported {} of {} operations of {} as tools",
            self.spec.tools.len(),
            self.operations,
            self.describe()
        )];
        if !self.left_out.is_empty() {
            out.push(format!("left out {}:", self.left_out.len()));
            let mut by_reason: IndexMap<&str, Vec<&str>> = IndexMap::new();
            for l in &self.left_out {
                by_reason
                    .entry(group(&l.reason))
                    .or_default()
                    .push(&l.operation);
            }
            for (reason, ops) in by_reason {
                out.push(format!("  {} {reason}: {}", ops.len(), examples(&ops)));
            }
        }
        if !self.notes.is_empty() {
            out.push(format!("notes ({}):", self.notes.len()));
            let mut by_kind: IndexMap<NoteKind, Vec<String>> = IndexMap::new();
            for n in &self.notes {
                let line = match &n.tool {
                    Some(tool) => format!("{tool}: {}", n.message),
                    None => n.message.clone(),
                };
                by_kind.entry(n.kind).or_default().push(line);
            }
            by_kind.sort_keys();
            for (kind, lines) in by_kind {
                out.push(format!("  {} ({}):", kind.as_str(), lines.len()));
                for line in lines.iter().take(EXAMPLES) {
                    out.push(format!("    {line}"));
                }
                if lines.len() > EXAMPLES {
                    out.push(format!("    ... and {} more", lines.len() - EXAMPLES));
                }
            }
        }
        out
    }

    /// `"Swagger Petstore" 1.0.0 (OpenAPI 3.0)`.
    fn describe(&self) -> String {
        let title = if self.title.is_empty() {
            "the API"
        } else {
            &self.title
        };
        let mut out = format!("\"{title}\"");
        if !self.api_version.is_empty() {
            out.push(' ');
            out.push_str(&self.api_version);
        }
        out.push_str(&format!(" ({})", self.version.as_str()));
        out
    }
}

/// The reason without what is particular to one operation, so alike reasons group.
fn group(reason: &str) -> &str {
    if reason.starts_with("its request body is") {
        "with a request body toolgate does not send"
    } else if reason.starts_with("--exclude") {
        "by --exclude"
    } else {
        reason
    }
}

fn examples(ops: &[&str]) -> String {
    let mut out = ops
        .iter()
        .take(EXAMPLES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if ops.len() > EXAMPLES {
        out.push_str(&format!(", ... and {} more", ops.len() - EXAMPLES));
    }
    out
}
