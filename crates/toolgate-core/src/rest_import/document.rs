//! Reading a description: its text as JSON or YAML, and which OpenAPI it is.
//!
//! JSON is read by serde_json (fast, for large descriptions such as GitHub's);
//! anything else by serde-saphyr under a node and depth budget, so a hostile
//! document cannot exhaust memory or the stack.

use serde_json::Value;

use super::RestImportError;

/// The largest description, or file it references, read: 64 MiB.
pub const MAX_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;
/// Nesting deeper than this is refused when parsing YAML.
const MAX_DEPTH: usize = 200;
/// Nodes in one YAML document at most.
const MAX_NODES: usize = 20_000_000;

/// Which OpenAPI a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpenApiVersion {
    /// Swagger 2.0.
    Swagger2,
    /// OpenAPI 3.0.x: schemas are the OpenAPI 3.0 dialect (`nullable`, boolean exclusive bounds).
    V3_0,
    /// OpenAPI 3.1.x: schemas are JSON Schema 2020-12.
    V3_1,
}

impl OpenApiVersion {
    /// The version's name, for messages and the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenApiVersion::Swagger2 => "Swagger 2.0",
            OpenApiVersion::V3_0 => "OpenAPI 3.0",
            OpenApiVersion::V3_1 => "OpenAPI 3.1",
        }
    }
}

/// Parses `text` (the file `name`) as JSON when it reads as JSON, else as YAML.
pub(super) fn parse(name: &str, text: &str) -> Result<Value, RestImportError> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(RestImportError::TooLarge {
            file: name.to_owned(),
            bytes: text.len(),
        });
    }
    let text = text.trim_start_matches('\u{feff}');
    if text.trim_start().starts_with(['{', '[']) {
        let mut de = serde_json::Deserializer::from_str(text);
        if let Ok(value) = serde::Deserialize::deserialize(&mut de)
            && de.end().is_ok()
        {
            return Ok(value);
        }
    }
    let parse = || {
        let options = serde_saphyr::options! {
            with_snippet: false,
            strict_booleans: true,
            budget: serde_saphyr::budget! {
                max_depth: MAX_DEPTH,
                max_nodes: MAX_NODES,
                max_aliases: 10_000,
            },
        };
        serde_saphyr::from_str_with_options::<Value>(text, options)
    };
    // The parser recurses once per level: it runs on a thread whose stack fits
    // `MAX_DEPTH` levels, whatever the caller's stack.
    let parsed = std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .stack_size(64 * 1024 * 1024)
            .spawn_scoped(scope, parse)
        {
            Ok(parser) => parser.join().ok(),
            Err(_) => Some(parse()),
        }
    });
    match parsed {
        Some(Ok(value)) => Ok(value),
        Some(Err(e)) => Err(RestImportError::Syntax {
            file: name.to_owned(),
            message: first_line(&e.to_string()),
        }),
        None => Err(RestImportError::Syntax {
            file: name.to_owned(),
            message: "the parser gave up on it".into(),
        }),
    }
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or(message).trim().to_owned()
}

/// The version the root document declares (`openapi: 3.x.y` or `swagger: "2.0"`).
pub(super) fn version(name: &str, root: &Value) -> Result<OpenApiVersion, RestImportError> {
    let not = |why: &str| RestImportError::NotOpenApi {
        file: name.to_owned(),
        why: why.to_owned(),
    };
    let Some(object) = root.as_object() else {
        return Err(not("the document is not a mapping"));
    };
    let declared = match (object.get("openapi"), object.get("swagger")) {
        (Some(v), _) | (None, Some(v)) => match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => {
                return Err(not(
                    "its `openapi` (or `swagger`) field is not a version string",
                ));
            }
        },
        (None, None) => return Err(not("it has neither an `openapi` nor a `swagger` field")),
    };
    let version = if object.contains_key("openapi") {
        if declared.starts_with("3.1") || declared.starts_with("3.2") {
            OpenApiVersion::V3_1
        } else if declared.starts_with("3.0") {
            OpenApiVersion::V3_0
        } else {
            return Err(RestImportError::Version {
                file: name.to_owned(),
                version: declared,
            });
        }
    } else if declared == "2.0" || declared == "2" {
        OpenApiVersion::Swagger2
    } else {
        return Err(RestImportError::Version {
            file: name.to_owned(),
            version: declared,
        });
    };
    match object.get("paths") {
        Some(Value::Object(_)) => Ok(version),
        None if version == OpenApiVersion::V3_1 => Ok(version),
        None => Err(not("it has no `paths`")),
        Some(_) => Err(not("its `paths` is not a mapping of paths to operations")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_and_yaml_read_alike() {
        let yaml = parse("a.yaml", "openapi: 3.0.3\npaths: {}\n").unwrap();
        let json = parse("a.json", r#"{"openapi": "3.0.3", "paths": {}}"#).unwrap();
        assert_eq!(yaml, json);
        assert_eq!(version("a", &yaml).unwrap(), OpenApiVersion::V3_0);
    }

    #[test]
    fn every_version_is_told_apart_and_others_are_refused() {
        let v = |doc: Value| version("f", &doc);
        assert_eq!(
            v(json!({"swagger": "2.0", "paths": {}})).unwrap(),
            OpenApiVersion::Swagger2
        );
        assert_eq!(
            v(json!({"openapi": "3.1.0", "webhooks": {}})).unwrap(),
            OpenApiVersion::V3_1
        );
        let err = v(json!({"openapi": "4.0.0", "paths": {}})).unwrap_err();
        assert!(err.to_string().contains("4.0.0"), "{err}");
        let err = v(json!({"info": {}})).unwrap_err();
        assert!(err.to_string().contains("neither"), "{err}");
        let err = parse("bad.yaml", "openapi: [\n").unwrap_err();
        assert!(
            err.to_string().starts_with("bad.yaml is not JSON or YAML"),
            "{err}"
        );
    }
}
