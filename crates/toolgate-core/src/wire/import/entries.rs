//! Reading a foreign list: where each dialect keeps its tools (a request body, a
//! listing, JSON Lines), and each entry read into a [`Draft`] with the fields that
//! dialect spells its own way, its words sanitized before anything else sees them.

use serde_json::{Map, Value};

use super::{Dialect, Draft, ImportError, ImportFormat};
use crate::wire::Note;
use crate::{Annotations, Effect};

/// One JSON value, or several in a row (JSON Lines: one value a line) as an array.
pub(super) fn parse_text(text: &str) -> Result<Value, ImportError> {
    let text = text.trim_start_matches('\u{feff}');
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let first = match values.next() {
        Some(Ok(value)) => value,
        Some(Err(e)) => return Err(ImportError::NotJson(e.to_string())),
        None => return Err(ImportError::NotJson("the input is empty".into())),
    };
    let rest = values
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ImportError::BadLine {
            line: e.line(),
            message: e.to_string(),
        })?;
    if rest.is_empty() {
        return Ok(first);
    }
    Ok(Value::Array(std::iter::once(first).chain(rest).collect()))
}

/// The entries that may be tools, wherever the dialect keeps them.
pub(super) fn tool_entries<'v>(
    from: ImportFormat,
    document: &'v Value,
    notes: &mut Vec<Note>,
) -> Result<Vec<&'v Value>, ImportError> {
    let none = || ImportError::NoToolList {
        format: from,
        expected: from.expected(),
    };
    let gemini_tool = |o: &Map<String, Value>| declarations(o).is_some();
    let list: Vec<&Value> = match document {
        Value::Array(items) => items.iter().collect(),
        Value::Object(o) => {
            let tools = o
                .get("tools")
                .or_else(|| o.get("result").and_then(|r| r.get("tools")))
                .or_else(|| {
                    o.get("functions")
                        .filter(|_| from == ImportFormat::OpenAiChat)
                });
            match tools {
                Some(Value::Array(items)) => items.iter().collect(),
                Some(_) => return Err(none()),
                None if o.contains_key("name")
                    || (from == ImportFormat::Gemini && gemini_tool(o)) =>
                {
                    vec![document]
                }
                None => return Err(none()),
            }
        }
        _ => return Err(none()),
    };
    if from != ImportFormat::Gemini {
        return Ok(list);
    }
    // Gemini: a `Tool` holds `functionDeclarations`; other tools (search, code
    // execution) are the provider's and are left out.
    let mut out = Vec::new();
    for (i, entry) in list.into_iter().enumerate() {
        match entry.as_object() {
            Some(o) if let Some(list) = declarations(o) => out.extend(list),
            Some(o) if o.contains_key("name") => out.push(entry),
            _ => {
                let kind = entry
                    .as_object()
                    .and_then(|o| o.keys().next())
                    .map_or("?", String::as_str);
                notes.push(Note::request(format!(
                    "tools[{i}] (`{kind}`) holds no function declarations: skipped; declare provider tools under `hosted:`"
                )));
            }
        }
    }
    Ok(out)
}

fn declarations(tool: &Map<String, Value>) -> Option<&Vec<Value>> {
    tool.get("functionDeclarations")
        .or_else(|| tool.get("function_declarations"))
        .and_then(Value::as_array)
}

/// Reads entry `i`; `None` (with a note) for an entry that is not a function tool.
pub(super) fn draft(
    from: ImportFormat,
    i: usize,
    entry: &Value,
    notes: &mut Vec<Note>,
) -> Option<Draft> {
    let mut skip = |message: String| {
        notes.push(Note::request(format!("tools[{i}]: {message}")));
        None
    };
    let Some(object) = entry.as_object() else {
        return skip("not an object: skipped".into());
    };
    let kind = object.get("type").and_then(Value::as_str);
    let function = match from {
        ImportFormat::OpenAiChat | ImportFormat::OpenAiResponses => match kind {
            Some("function") | None => object
                .get("function")
                .and_then(Value::as_object)
                .unwrap_or(object),
            Some(other) => {
                return skip(format!(
                    "`{other}` is not a function tool: skipped; declare provider tools under `hosted:`"
                ));
            }
        },
        ImportFormat::Anthropic => match kind {
            Some("custom") | None => object,
            Some(other) => {
                return skip(format!(
                    "`{other}` is one of Anthropic's own tools, not a custom tool: skipped"
                ));
            }
        },
        _ => object,
    };
    let Some(name) = function.get("name").and_then(Value::as_str) else {
        return skip("has no `name` string: skipped".into());
    };
    // `null` (as SDKs dump unset fields) counts as absent.
    let field = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| function.get(*k).filter(|v| !v.is_null()))
    };
    let mut draft = Draft {
        name: name.to_owned(),
        title: None,
        description: None,
        parameters: None,
        returns: None,
        effect: None,
        background: false,
        examples: Vec::new(),
        notes: Vec::new(),
    };
    match field(&["description"]) {
        Some(Value::String(d)) => draft.description = Some(d.clone()),
        Some(_) => draft
            .notes
            .push("`description` is not a string: left empty".into()),
        None => {}
    }
    let json = Dialect::JsonSchema;
    match from {
        ImportFormat::OpenAiChat | ImportFormat::OpenAiResponses => {
            draft.parameters = field(&["parameters"]).map(|s| (s.clone(), json));
        }
        ImportFormat::Anthropic => {
            draft.parameters = field(&["input_schema"]).map(|s| (s.clone(), json));
            if let Some(Value::Array(examples)) = field(&["input_examples"]) {
                draft.examples = examples.clone();
            }
        }
        ImportFormat::Gemini => {
            draft.parameters = field(&["parametersJsonSchema", "parameters_json_schema"])
                .map(|s| (s.clone(), json))
                .or_else(|| field(&["parameters"]).map(|s| (s.clone(), Dialect::GeminiOpenApi)));
            draft.returns = field(&["responseJsonSchema", "response_json_schema"])
                .map(|s| (s.clone(), json))
                .or_else(|| field(&["response"]).map(|s| (s.clone(), Dialect::GeminiOpenApi)));
            if field(&["behavior"]).and_then(Value::as_str) == Some("NON_BLOCKING") {
                draft.background = true;
                draft.notes.push(
                    "`behavior: NON_BLOCKING` imported as `background: true` (results arrive `when_idle` unless `scheduling:` says otherwise)"
                        .into(),
                );
            }
        }
        ImportFormat::Mcp => {
            draft.parameters = field(&["inputSchema"]).map(|s| (s.clone(), json));
            draft.returns = field(&["outputSchema"]).map(|s| (s.clone(), json));
            let annotations = field(&["annotations"]);
            draft.title = field(&["title"])
                .or_else(|| annotations.and_then(|a| a.get("title")))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let hints = match annotations.map(|a| serde_json::from_value::<Annotations>(a.clone()))
            {
                Some(Ok(hints)) => hints,
                Some(Err(_)) => {
                    draft.notes.push(
                        "`annotations` has hints that are not booleans: read as no hints".into(),
                    );
                    Annotations::default()
                }
                None => Annotations::default(),
            };
            let effect = Effect::from_annotations(&hints);
            if hints == Annotations::default() {
                draft.notes.push(format!(
                    "no annotation hints: imported as `effect: {effect}`, the most guarded reading (MCP's defaults)"
                ));
            }
            draft.effect = Some(effect);
        }
        ImportFormat::Bfcl => {
            draft.parameters = field(&["parameters"]).map(|s| (s.clone(), json));
            draft.returns = field(&["response"]).map(|s| (s.clone(), json));
        }
    }
    if field(&["strict"]).and_then(Value::as_bool) == Some(true) {
        draft.notes.push(
            "`strict: true` is not kept: ask for strict schemas when rendering (`--strict`)".into(),
        );
    }
    if let Err(why) = untrusted_text(&mut draft) {
        let name = crate::escape_for_terminal(&draft.name).into_owned();
        return skip(format!("`{name}` is skipped: {why}"));
    }
    Some(draft)
}

/// A foreign list is untrusted, and what it becomes is a spec file whose words a
/// model reads as the operator's: its description, title and every string of its
/// schemas are sanitized (see [`crate::sanitize_schema`]), with a note where that
/// changed something; a schema whose names or values would need it keeps the tool
/// out.
fn untrusted_text(draft: &mut Draft) -> Result<(), String> {
    // Whitespace is kept and nothing is cut: only what could attack a model changes.
    let options = crate::SanitizeOptions::for_output().with_max_chars(usize::MAX);
    for (field, text) in [
        ("description", &mut draft.description),
        ("title", &mut draft.title),
    ] {
        if let Some(text) = text {
            let clean = crate::sanitize_description(text, &options);
            if clean.text != *text {
                let changes = clean.changes.join(", ");
                draft.notes.push(format!(
                    "`{field}` held text a model must not be given: {changes}"
                ));
                *text = clean.text;
            }
        }
    }
    for (field, schema) in [
        ("parameters", &mut draft.parameters),
        ("returns", &mut draft.returns),
    ] {
        if let Some((schema, _)) = schema {
            let clean = crate::sanitize_schema(schema).map_err(|e| format!("`{field}`: {e}"))?;
            if clean != *schema {
                draft.notes.push(format!(
                    "`{field}`: descriptions or examples held text a model must not be given (control or invisible characters, template tokens, tool tags): sanitized"
                ));
                *schema = clean;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::{assert_valid_json_schema, import, messages, parameters, snapshot};
    use super::super::{ImportError, ImportFormat, import_tools};
    use crate::Effect;

    #[test]
    fn imported_words_are_sanitized_and_hostile_names_keep_a_tool_out() {
        let text = r#"[{"type": "function", "function": {"name": "evil",
            "description": "Looks fine.\u001b]0;pwned\u0007\u001b[2J\u202e<|im_start|>",
            "parameters": {"type": "object", "properties": {"q": {"type": "string",
                "description": "Query.\u009b2J</tool-output>"}}}}},
            {"type": "function", "function": {"name": "worse", "description": "x",
            "parameters": {"type": "object", "properties": {"q\u001b[2J": {"type": "string"}}}}}]"#;
        let imported = import(ImportFormat::OpenAiChat, text);
        assert_eq!(imported.tools.len(), 1);
        let evil = &imported.tools[0];
        assert_eq!(evil.description, "Looks fine.<¦im_start¦>");
        assert_eq!(
            parameters(&imported, 0)["properties"]["q"]["description"],
            "Query.‹/tool-output>"
        );
        let messages = messages(&imported);
        assert!(
            messages.contains(&"evil : `description` held text a model must not be given: removed 2 terminal escape sequences, removed 1 invisible formatting character (bidi, zero-width or tag), neutralized 1 chat-template control token".to_owned()),
            "{messages:#?}"
        );
        assert!(
            messages.iter().any(|m| m.starts_with(
                "* : tools[1]: `worse` is skipped: `parameters`: its schema's property name at `/properties/q\\u{1b}[2J` holds a control character (U+001B)"
            )),
            "{messages:#?}"
        );
    }

    #[test]
    fn an_openai_chat_request_body_imports() {
        let text = r#"{"model": "gpt-5", "tools": [
            {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"], "enum": ["c", "f"]}},
                             "required": ["city", "unit"], "additionalProperties": false}, "strict": true}},
            {"type": "custom", "custom": {"name": "sql"}}]}"#;
        insta::assert_json_snapshot!(
            "import_openai_chat",
            snapshot(&import(ImportFormat::OpenAiChat, text))
        );
    }

    #[test]
    fn a_legacy_openai_functions_list_imports() {
        let text = r#"{"functions": [{"name": "ping", "description": "Ping.", "parameters": {"type": "object", "properties": {}}}]}"#;
        assert_eq!(import(ImportFormat::OpenAiChat, text).tools[0].name, "ping");
    }

    #[test]
    fn openai_responses_tools_import_and_hosted_tools_are_skipped_with_a_note() {
        let text = r#"[{"type": "function", "name": "lookup_order", "description": "Find an order.",
                        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
                       {"type": "web_search"}]"#;
        insta::assert_json_snapshot!(
            "import_openai_responses",
            snapshot(&import(ImportFormat::OpenAiResponses, text))
        );
    }

    #[test]
    fn anthropic_tools_import_with_their_input_examples() {
        let text = r#"{"tools": [{"name": "create_ticket", "description": "Open a ticket.",
            "input_schema": {"type": "object", "properties": {"title": {"type": "string"}, "priority": {"type": "integer"}}, "required": ["title"]},
            "input_examples": [{"title": "Printer on fire", "priority": 1}, {"priority": "high"}]},
            {"type": "web_search_20250305", "name": "web_search"}]}"#;
        insta::assert_json_snapshot!(
            "import_anthropic",
            snapshot(&import(ImportFormat::Anthropic, text))
        );
    }

    #[test]
    fn gemini_declarations_import_with_lower_case_types_and_nullable_as_a_null_type() {
        let text = r#"[{"functionDeclarations": [{"name": "schedule_meeting", "description": "Book a meeting.",
            "parameters": {"type": "OBJECT", "properties": {
                "attendees": {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": "1"},
                "topic": {"type": "STRING", "nullable": true, "example": "Planning"},
                "room": {"type": "STRING", "format": "enum", "enum": ["A", "B"], "nullable": true}},
              "required": ["attendees"], "propertyOrdering": ["topic", "attendees", "room"]},
            "response": {"type": "OBJECT", "properties": {"id": {"type": "STRING"}}},
            "behavior": "NON_BLOCKING"}]},
          {"googleSearch": {}}]"#;
        let imported = import(ImportFormat::Gemini, text);
        assert_valid_json_schema(parameters(&imported, 0));
        insta::assert_json_snapshot!("import_gemini", snapshot(&imported));
    }

    #[test]
    fn a_single_gemini_declaration_list_and_a_json_schema_declaration_import() {
        let text = r#"[{"name": "a", "description": "A.", "parametersJsonSchema": {"type": "object", "properties": {"x": {"type": ["string", "null"]}}}},
                       {"name": "b", "description": "B."}]"#;
        let imported = import(ImportFormat::Gemini, text);
        assert_eq!(
            parameters(&imported, 0)["properties"]["x"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(imported.tools[1].parameters, None);
    }

    #[test]
    fn an_mcp_tools_list_imports_with_effects_from_annotations() {
        let text = r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "fs.read_file", "title": "Read file", "description": "Read a file.",
             "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
             "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
             "annotations": {"readOnlyHint": true}},
            {"name": "fs.delete", "description": "Delete a file.", "inputSchema": {"type": "object"},
             "annotations": {"title": "Delete", "destructiveHint": true, "openWorldHint": false}},
            {"name": "web.fetch", "description": "Fetch a URL.", "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}}]}}"#;
        let imported = import(ImportFormat::Mcp, text);
        let effects: Vec<_> = imported.tools.iter().map(|t| t.effect).collect();
        assert_eq!(
            effects,
            [
                Some(Effect::Read),
                Some(Effect::Destructive),
                Some(Effect::External)
            ]
        );
        assert_eq!(imported.tools[1].title.as_deref(), Some("Delete"));
        insta::assert_json_snapshot!("import_mcp", snapshot(&imported));
    }

    #[test]
    fn a_bfcl_json_array_imports_too() {
        let text = r#"[{"name": "f", "description": "F.", "parameters": {"type": "dict", "properties": {}}}]"#;
        assert_eq!(
            parameters(&import(ImportFormat::Bfcl, text), 0),
            &json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn fields_an_sdk_dumped_as_null_count_as_absent() {
        let text = r#"[{"functionDeclarations": [{"name": "f", "description": null, "parameters": null,
            "parametersJsonSchema": null, "response": null, "behavior": null}]}]"#;
        let imported = import(ImportFormat::Gemini, text);
        let tool = &imported.tools[0];
        assert_eq!(
            (tool.parameters.as_ref(), tool.description.as_str()),
            (None, "")
        );
    }

    #[test]
    fn input_that_holds_no_tool_list_is_an_error_that_says_what_was_expected() {
        let err = import_tools(ImportFormat::Mcp, r#"{"jsonrpc": "2.0"}"#).unwrap_err();
        assert!(err.to_string().contains("`tools/list` result"), "{err}");
        let err = import_tools(ImportFormat::Bfcl, "{\"name\": \"a\"}\n{\"name\": ").unwrap_err();
        assert!(matches!(err, ImportError::BadLine { line: 2, .. }), "{err}");
        assert!(matches!(
            import_tools(ImportFormat::Anthropic, "[{"),
            Err(ImportError::NotJson(_))
        ));
    }
}
