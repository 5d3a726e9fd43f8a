//! An upstream tool as its server lists it, read into the catalog's terms:
//! `namespace.tool`, with the server's schemas (sanitized), title and
//! annotations, and an effect the operator may override. Pure: nothing here
//! talks to the server.

use indexmap::IndexMap;
use serde_json::{Map, Value};
use toolgate_core::{
    Annotations, Effect, SanitizeOptions, ToolDescriptor, ToolSource, sanitize_description,
    sanitize_schema, validate_name,
};

/// One tool of an upstream server, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    /// Its name on the server.
    pub name: String,
    /// The parts a pin covers, as the server sent them.
    pub definition: Value,
    /// Its descriptor in the catalog.
    pub descriptor: ToolDescriptor,
}

/// Reads one entry of a `tools/list` result. The error says why the tool cannot be
/// offered (its name does not make a catalog name, or its schema holds a name or
/// value a model could not send back safely).
pub fn remote_tool(
    namespace: &str,
    tool: &Value,
    effects: &IndexMap<String, Effect>,
) -> Result<RemoteTool, String> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| "it has no name".to_owned())?;
    let catalog_name = format!("{namespace}.{name}");
    validate_name(&catalog_name)
        .map_err(|e| format!("`{catalog_name}` is not a tool name: {e}"))?;
    let definition: Map<String, Value> = crate::store::PINNED_FIELDS
        .iter()
        .filter_map(|(key, _)| Some(((*key).to_owned(), tool.get(*key)?.clone())))
        .collect();
    let annotations = tool.get("annotations");
    let hints: Annotations = annotations
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .unwrap_or_default();
    let effect = effects
        .get(name)
        .copied()
        .unwrap_or_else(|| Effect::from_annotations(&hints));
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Every string of the schemas a model reads is sanitized once, here; a string
    // it must send back exactly (a property name, an enum value) that would need
    // it keeps the tool out. MCP's own keywords (`x-mcp-header`) go too: rmcp's
    // HTTP client reads them from the tool list as the server sent it, and adds the
    // `Mcp-Param-*` headers to calls itself. The tool's `_meta` is not read at all.
    let input_schema = match tool.get("inputSchema") {
        Some(schema @ Value::Object(_)) => {
            sanitize_schema(schema).map_err(|e| format!("`inputSchema`: {e}"))?
        }
        _ => serde_json::json!({"type": "object"}),
    };
    let output_schema = match tool.get("outputSchema").filter(|s| s.is_object()) {
        Some(schema) => Some(sanitize_schema(schema).map_err(|e| format!("`outputSchema`: {e}"))?),
        None => None,
    };
    let mut descriptor = ToolDescriptor::new(
        catalog_name,
        sanitize_description(description, &SanitizeOptions::for_description()).text,
        input_schema,
        effect,
        ToolSource::Mcp {
            server: namespace.to_owned(),
        },
    );
    descriptor.title = tool
        .get("title")
        .or_else(|| annotations.and_then(|a| a.get("title")))
        .and_then(Value::as_str)
        .map(|t| sanitize_description(t, &SanitizeOptions::for_description()).text);
    descriptor.output_schema = output_schema;
    Ok(RemoteTool {
        name: name.to_owned(),
        definition: Value::Object(definition),
        descriptor,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_listed_tool_becomes_a_namespaced_descriptor() {
        let listed = json!({
            "name": "get-sum",
            "title": "Get Sum Tool",
            "description": "Returns the sum\u{200b} of two numbers",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
            "execution": {"taskSupport": "forbidden"}
        });
        let tool = remote_tool("everything", &listed, &IndexMap::new()).unwrap();
        assert_eq!(tool.name, "get-sum");
        let d = &tool.descriptor;
        assert_eq!(d.name, "everything.get-sum");
        assert_eq!(d.title.as_deref(), Some("Get Sum Tool"));
        assert_eq!(d.description, "Returns the sum of two numbers");
        assert_eq!(d.effect, Effect::Read);
        assert_eq!(d.output_schema, Some(json!({"type": "object"})));
        assert_eq!(
            d.source,
            ToolSource::Mcp {
                server: "everything".into()
            }
        );
        // The pin covers what the server sent, hidden characters included, and not
        // fields outside the definition.
        assert_eq!(
            tool.definition["description"],
            "Returns the sum\u{200b} of two numbers"
        );
        assert!(tool.definition.get("execution").is_none());
    }

    #[test]
    fn protocol_metadata_and_mcp_keywords_stay_out_of_the_descriptor() {
        let listed = json!({
            "name": "regional",
            "description": "Say which region.",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            }},
            "_meta": {"io.modelcontextprotocol/ui": {"resourceUri": "ui://r"}, "com.example/owner": "ops"}
        });
        let tool = remote_tool("fx", &listed, &IndexMap::new()).unwrap();
        let descriptor = serde_json::to_string(&tool.descriptor).unwrap();
        for protocol in [
            "x-mcp-header",
            "_meta",
            "io.modelcontextprotocol",
            "com.example",
        ] {
            assert!(!descriptor.contains(protocol), "{descriptor}");
        }
        assert_eq!(
            tool.descriptor.input_schema,
            json!({"type": "object", "properties": {"region": {"type": "string"}}})
        );
        // The pin covers the schema as the server sent it.
        assert_eq!(
            tool.definition["inputSchema"]["properties"]["region"]["x-mcp-header"],
            "Region"
        );
    }

    #[test]
    fn no_hints_read_as_external_and_the_operator_overrides() {
        let listed = json!({"name": "write_file", "inputSchema": {"type": "object"}});
        let tool = remote_tool("fs", &listed, &IndexMap::new()).unwrap();
        assert_eq!(tool.descriptor.effect, Effect::External);
        let effects: IndexMap<String, Effect> = [("write_file".to_owned(), Effect::Write)]
            .into_iter()
            .collect();
        let tool = remote_tool("fs", &listed, &effects).unwrap();
        assert_eq!(tool.descriptor.effect, Effect::Write);
    }

    #[test]
    fn a_name_that_makes_no_catalog_name_is_refused_with_the_reason() {
        let err = remote_tool("fs", &json!({"name": "read file"}), &IndexMap::new()).unwrap_err();
        assert!(
            err.starts_with("`fs.read file` is not a tool name"),
            "{err}"
        );
    }
}
