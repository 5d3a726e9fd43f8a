//! A struct's doc comment as a tool description.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The doc comment's text: each line trimmed, the lines of a paragraph joined with a
/// space, paragraphs separated by one blank line. Empty when there is no doc comment.
///
/// Model APIs show descriptions as plain text, so the hard wraps of a `///` block
/// are undone. `#[doc = include_str!(..)]` and other non-literal docs are skipped:
/// a derive cannot read them.
pub(crate) fn text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Meta::NameValue(doc) = &attr.meta
            && doc.path.is_ident("doc")
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) = &doc.value
        {
            lines.extend(block_lines(&lit.value()));
        }
    }
    join(&lines)
}

/// The trimmed lines of one doc attribute. A `/** ... */` block whose lines all
/// start with `*` loses the stars, as rustdoc shows it.
fn block_lines(value: &str) -> Vec<String> {
    // `split`, not `lines`: an empty `///` is an empty string and still a (blank) line.
    let lines: Vec<&str> = value.split('\n').map(str::trim).collect();
    let starred = lines.len() > 1 && lines.iter().all(|l| l.is_empty() || l.starts_with('*'));
    lines
        .into_iter()
        .map(|line| {
            if starred {
                line.trim_start_matches('*').trim()
            } else {
                line
            }
        })
        .map(str::to_owned)
        .collect()
}

fn join(lines: &[String]) -> String {
    let mut paragraphs = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in lines {
        if line.is_empty() {
            if !current.is_empty() {
                paragraphs.push(current.join(" "));
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        paragraphs.push(current.join(" "));
    }
    paragraphs.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_of(item: &str) -> String {
        let item: syn::DeriveInput = syn::parse_str(item).unwrap();
        text(&item.attrs)
    }

    #[test]
    fn paragraphs_keep_one_blank_line_and_lines_join_with_a_space() {
        let item =
            "///  First line\n/// continues.\n///\n///\n/// Second   paragraph.\n///\nstruct S;";
        assert_eq!(doc_of(item), "First line continues.\n\nSecond   paragraph.");
    }

    #[test]
    fn block_comments_lose_their_stars() {
        let item = "/**\n * Block doc\n * wraps.\n *\n * Again.\n */\nstruct S;";
        assert_eq!(doc_of(item), "Block doc wraps.\n\nAgain.");
    }

    #[test]
    fn no_doc_is_empty() {
        assert_eq!(doc_of("#[doc(hidden)] struct S;"), "");
        assert_eq!(doc_of("///\n///   \nstruct S;"), "");
    }
}
