//! `$ref`s: a reference read as a document and a JSON pointer, the documents it
//! names loaded once each.
//!
//! A reference is local (`#/components/schemas/Pet`) or names a file relative to the
//! document that holds it (`pet.yaml`, `schemas/common.json#/Error`). Files are read
//! through [`Sources`], so this module does no I/O itself; a file outside the root
//! document's directory (`../secret.yaml`) and references by URL are refused. When
//! the root is an http(s) URL, files are URLs on its origin, resolved against it.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use super::document::parse;

/// Reads the files a description is made of, by path relative to the root
/// document's directory (`/`-separated, never starting with `/` or `..`), or, for a
/// root that is an http(s) URL, by URL on that URL's origin.
pub trait Sources {
    /// The text of `path`, or why it cannot be read.
    fn read(&self, path: &str) -> Result<String, String>;
}

/// A place in one of the documents: the document's path and a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Place {
    pub doc: Rc<str>,
    pub pointer: String,
}

/// How many `$ref` hops lead to one non-schema object at most.
const MAX_HOPS: usize = 32;

/// The documents of one description, loaded as references reach them.
pub(super) struct Resolver<'s> {
    sources: &'s dyn Sources,
    docs: HashMap<Rc<str>, Result<Rc<Value>, String>>,
    root: Rc<str>,
}

impl<'s> Resolver<'s> {
    pub(crate) fn new(sources: &'s dyn Sources, root_path: &str, root: Value) -> Self {
        let mut docs = HashMap::new();
        let root_path: Rc<str> = Rc::from(root_path);
        docs.insert(root_path.clone(), Ok(Rc::new(root)));
        Resolver {
            sources,
            docs,
            root: root_path,
        }
    }

    /// The document at `path`, loading it the first time.
    pub(crate) fn doc(&mut self, path: &Rc<str>) -> Result<Rc<Value>, String> {
        if let Some(doc) = self.docs.get(path) {
            return doc.clone();
        }
        let loaded = self
            .sources
            .read(path)
            .and_then(|text| parse(path, &text).map_err(|e| e.to_string()))
            .map(Rc::new);
        self.docs.insert(path.clone(), loaded.clone());
        loaded
    }

    /// Where `reference`, written in document `base`, points.
    pub(crate) fn place(&self, base: &Rc<str>, reference: &str) -> Result<Place, String> {
        let (file, fragment) = match reference.split_once('#') {
            Some((file, fragment)) => (file, fragment),
            None => (reference, ""),
        };
        if file.contains("://") || file.starts_with("//") {
            return Err(format!(
                "`{reference}` is a reference by URL; save the file beside the description and refer to it by a relative path"
            ));
        }
        let doc: Rc<str> = if file.is_empty() {
            base.clone()
        } else {
            Rc::from(join(base, file).ok_or_else(|| {
                format!(
                    "`{reference}` leaves the description's directory; only files beside it (or below) are read"
                )
            })?)
        };
        let pointer = crate::wire::pointer::percent_decode(fragment);
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(format!(
                "`{reference}` is not a JSON pointer (`#/components/...`); anchors are not supported"
            ));
        }
        Ok(Place { doc, pointer })
    }

    /// The value at `place`.
    pub(crate) fn get(&mut self, place: &Place) -> Result<Value, String> {
        let doc = self.doc(&place.doc)?;
        doc.pointer(&place.pointer).cloned().ok_or_else(|| {
            format!(
                "`{}#{}` points nowhere",
                if &*place.doc == self.root_name() {
                    ""
                } else {
                    &place.doc
                },
                place.pointer
            )
        })
    }

    fn root_name(&self) -> &str {
        &self.root
    }

    /// The root document's path.
    pub(crate) fn root(&self) -> Rc<str> {
        self.root.clone()
    }

    /// Follows `value`'s `$ref` chain (for parameters, bodies, responses and path
    /// items): the object it ends at and the document that holds it.
    pub(crate) fn follow(
        &mut self,
        base: &Rc<str>,
        value: &Value,
    ) -> Result<(Rc<str>, Value), String> {
        let mut base = base.clone();
        let mut value = value.clone();
        for _ in 0..MAX_HOPS {
            let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
                return Ok((base, value));
            };
            let place = self.place(&base, reference)?;
            value = self.get(&place)?;
            base = place.doc;
        }
        Err(format!(
            "more than {MAX_HOPS} `$ref`s in a row; is there a loop?"
        ))
    }
}

/// `file` relative to the directory of `base`, normalized; `None` when it climbs
/// out of the root directory. A `base` that is an http(s) URL keeps its origin: the
/// file resolves against its path (a path from the root, `/x.yaml`, too) and may
/// climb to the origin's root, never to another host.
fn join(base: &str, file: &str) -> Option<String> {
    if let Some((origin, path)) = url_parts(base) {
        if file.contains('\\') {
            return None;
        }
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let (path, file) = match file.strip_prefix('/') {
            Some(from_root) => ("", from_root),
            None => (path.trim_start_matches('/'), file),
        };
        return Some(format!("{origin}/{}", join_path(path, file)?));
    }
    if file.starts_with('/') || file.contains('\\') {
        return None;
    }
    join_path(base, file)
}

/// An http(s) URL as its `scheme://authority` and the rest.
fn url_parts(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http") {
        return None;
    }
    let end = scheme.len() + 3 + rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(url.split_at(end))
}

/// `file` relative to the directory of the `/`-separated `base`.
fn join_path(base: &str, file: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for part in file.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The last segment of a pointer, unescaped: a name for what it points at.
pub(super) fn last_segment(pointer: &str) -> String {
    crate::wire::pointer::unescape(pointer.rsplit('/').next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_files_resolve_beside_the_referring_document_and_never_above_the_root() {
        assert_eq!(join("api.yaml", "pet.yaml").as_deref(), Some("pet.yaml"));
        assert_eq!(
            join("specs/a/b.yaml", "../c.yaml").as_deref(),
            Some("specs/c.yaml")
        );
        assert_eq!(join("api.yaml", "../etc/passwd"), None);
        assert_eq!(join("api.yaml", "/etc/passwd"), None);
    }

    #[test]
    fn relative_files_of_a_url_resolve_against_it_and_never_leave_its_origin() {
        let base = "https://h.example:8443/specs/v1/api.yaml?raw=1";
        assert_eq!(
            join(base, "pet.yaml").as_deref(),
            Some("https://h.example:8443/specs/v1/pet.yaml")
        );
        assert_eq!(
            join(base, "../common/e.json").as_deref(),
            Some("https://h.example:8443/specs/common/e.json")
        );
        assert_eq!(
            join(base, "/other/x.yaml").as_deref(),
            Some("https://h.example:8443/other/x.yaml")
        );
        assert_eq!(join(base, "../../../evil.example/x.yaml"), None);
        assert_eq!(
            join("http://h.example", "a.yaml").as_deref(),
            Some("http://h.example/a.yaml")
        );
    }
}
