//! The files a skill's instructions refer to: the relative targets of its
//! Markdown links and images (`[form](forms/refund.md)`). `toolgate check`
//! refuses a skill whose links point at files it does not hold, since a model
//! following them would ask for what is not there.

/// The relative paths `body` links to, in order, each once, without `./`,
/// fragment or query. Links with a scheme (`https:`, `mailto:`) and links to
/// an anchor in the same file are left out; a path that climbs out (`../x`) is
/// kept as written, so the caller can refuse it.
///
/// ```
/// use toolgate_core::skill::referenced_files;
/// let body = "See [the form](./forms/refund.md#top), ![chart](img/a.png) and [docs](https://x.dev).";
/// assert_eq!(referenced_files(body), ["forms/refund.md", "img/a.png"]);
/// ```
pub fn referenced_files(body: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find([')', '\n']).unwrap_or(rest.len());
        let target = rest[..end].trim();
        // `[x](<path with spaces>)` and `[x](path "title")`.
        let target = match target.strip_prefix('<') {
            Some(inner) => inner.split('>').next().unwrap_or_default(),
            None => target.split_whitespace().next().unwrap_or_default(),
        };
        if let Some(path) = relative_path(target)
            && !found.contains(&path)
        {
            found.push(path);
        }
    }
    found
}

fn relative_path(target: &str) -> Option<String> {
    let path = target.split(['#', '?']).next()?;
    if path.is_empty() || path.starts_with('/') || has_scheme(path) {
        return None;
    }
    let path = path.trim_start_matches("./");
    (!path.is_empty()).then(|| path.to_owned())
}

/// `scheme:` as RFC 3986 spells it: a letter, then letters, digits, `+-.`.
fn has_scheme(target: &str) -> bool {
    let Some((scheme, _)) = target.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_with_titles_angle_brackets_and_anchors_are_read() {
        let body = "[a](forms/a.md \"A form\") [b](<forms/b c.md>) [c](#steps) [d](mailto:x@y) \
                    [e](../outside.md) [a again](forms/a.md)";
        assert_eq!(
            referenced_files(body),
            ["forms/a.md", "forms/b c.md", "../outside.md"]
        );
    }

    #[test]
    fn text_without_links_refers_to_nothing() {
        assert!(referenced_files("Run `scripts/x.py` (then wait).").is_empty());
    }
}
