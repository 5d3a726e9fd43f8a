//! One spec tool per operation: its canonical unique name, description, tags,
//! effect and return value.

use std::collections::HashSet;

use serde_json::Value;

use super::operations::Operation;
use crate::MAX_NAME_LEN;

/// The canonical name of an operation: its `operationId` (`/` becomes `.`, other
/// characters a name cannot hold `_`), or its method and path
/// (`get_pets_petId`).
pub(super) fn base_name(op: &Operation) -> String {
    let raw = match &op.id {
        Some(id) if !id.trim().is_empty() => id.replace('/', "."),
        _ => {
            let mut name = op.method.to_owned();
            for segment in op.path.split('/').filter(|s| !s.is_empty()) {
                name.push('_');
                name.push_str(segment.trim_matches(['{', '}']));
            }
            name
        }
    };
    let mut out = String::with_capacity(raw.len());
    for c in raw.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let mut out = out
        .split('.')
        .map(|s| s.trim_matches('_'))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(".");
    out.truncate(MAX_NAME_LEN);
    let out = out.trim_end_matches('.').to_owned();
    if out.is_empty() {
        format!("{}_root", op.method)
    } else {
        out
    }
}

/// Makes `name` unique among `used` with a `_2`, `_3`... suffix.
pub(super) fn unique_name(name: String, used: &mut HashSet<String>) -> String {
    if used.insert(name.clone()) {
        return name;
    }
    let chosen = (2..)
        .map(|k| {
            let suffix = format!("_{k}");
            let stem = &name[..name.len().min(MAX_NAME_LEN - suffix.len())];
            format!("{}{suffix}", stem.trim_end_matches('.'))
        })
        .find(|c| !used.contains(c))
        .unwrap_or(name);
    used.insert(chosen.clone());
    chosen
}

/// The description: the summary, then the description, each once.
pub(super) fn description(op: &Operation) -> String {
    match (&op.summary, &op.description) {
        (Some(s), Some(d)) if d.starts_with(s.trim_end_matches('.')) => d.clone(),
        (Some(s), Some(d)) => format!("{s}\n\n{d}"),
        (Some(s), None) => s.clone(),
        (None, Some(d)) => d.clone(),
        (None, None) => op.label(),
    }
}

/// An `x-toolgate-effect` value, when it names an effect.
pub(super) fn extension_effect(value: Option<&Value>) -> Result<Option<crate::Effect>, String> {
    match value {
        None => Ok(None),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|e: crate::UnknownName| e.to_string()),
        Some(other) => Err(format!(
            "`x-toolgate-effect: {other}` is not an effect name"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest_import::request::BodyChoice;

    fn op(method: &'static str, path: &str, id: Option<&str>) -> Operation {
        Operation {
            method,
            path: path.into(),
            id: id.map(str::to_owned),
            summary: None,
            description: None,
            tags: vec![],
            deprecated: false,
            params: vec![],
            body: BodyChoice::None,
            returns: None,
            produces: vec![],
            security: None,
            servers: vec![],
            effect_extension: None,
            problems: vec![],
        }
    }

    #[test]
    fn names_come_from_the_operation_id_or_the_method_and_path() {
        assert_eq!(
            base_name(&op("get", "/x", Some("repos/get-content"))),
            "repos.get-content"
        );
        assert_eq!(
            base_name(&op("get", "/pets/{petId}", None)),
            "get_pets_petId"
        );
        assert_eq!(base_name(&op("get", "/", None)), "get");
        assert_eq!(
            base_name(&op("post", "/a", Some("créer une/chose"))),
            "cr_er_une.chose"
        );
        assert_eq!(base_name(&op("post", "/a", Some("///"))), "post_root");
        let mut used = HashSet::new();
        assert_eq!(unique_name("a".into(), &mut used), "a");
        assert_eq!(unique_name("a".into(), &mut used), "a_2");
        for id in ["a".repeat(200), "..".into(), "a..b".into()] {
            assert!(
                crate::validate_name(&base_name(&op("get", "/", Some(&id)))).is_ok(),
                "{id}"
            );
        }
    }
}
