//! The catalog: every tool known to a gate, under its canonical name.

use std::sync::Arc;

use indexmap::IndexMap;

use crate::{
    DynTool, MAX_NAME_LEN, NameError, Native, ToolDescriptor, ToolHandler, ToolSource, clip_text,
    closest_names, validate_name,
};

/// Why a tool could not be registered or found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// A tool to register has a name that is not canonical.
    #[error("cannot register a tool from {source_}: {error}")]
    InvalidName {
        /// Where the tool comes from.
        source_: ToolSource,
        /// What is wrong with its name.
        #[source]
        error: NameError,
    },
    /// A tool to register has the name of one already registered.
    #[error("tool `{name}` is defined twice: by {existing} and by {new}; rename one of them")]
    Duplicate {
        /// The name both claim.
        name: String,
        /// Where the tool registered first comes from.
        existing: ToolSource,
        /// Where the tool refused comes from.
        new: ToolSource,
    },
    /// No tool has the name asked for.
    #[error("{}", unknown_message(name, suggestions))]
    Unknown {
        /// The name asked for, clipped when longer than any tool name may be.
        name: String,
        /// Up to three names of tools the caller may know, closest first.
        suggestions: Vec<String>,
    },
}

fn unknown_message(name: &str, suggestions: &[String]) -> String {
    match suggestions {
        [] => format!("no tool is named `{name}`"),
        [one] => format!("no tool is named `{name}`; did you mean `{one}`?"),
        many => {
            let list = many
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ");
            format!("no tool is named `{name}`; did you mean one of {list}?")
        }
    }
}

/// Tools in registration order, looked up by canonical name.
#[derive(Clone, Default)]
pub struct Catalog {
    tools: IndexMap<String, Arc<dyn DynTool>>,
}

impl Catalog {
    /// A catalog with no tools.
    pub fn new() -> Self {
        Catalog::default()
    }

    /// Registers a type-erased tool. Its name must be canonical and not taken.
    pub fn register(&mut self, tool: Arc<dyn DynTool>) -> Result<(), CatalogError> {
        let descriptor = tool.descriptor();
        validate_name(&descriptor.name).map_err(|error| CatalogError::InvalidName {
            source_: descriptor.source.clone(),
            error,
        })?;
        if let Some(existing) = self.tools.get(&descriptor.name) {
            return Err(CatalogError::Duplicate {
                name: descriptor.name.clone(),
                existing: existing.descriptor().source.clone(),
                new: descriptor.source.clone(),
            });
        }
        self.tools.insert(descriptor.name.clone(), tool);
        Ok(())
    }

    /// Registers a typed tool.
    pub fn register_native<T: ToolHandler>(&mut self, tool: T) -> Result<(), CatalogError> {
        self.register(Arc::new(Native::new(tool)))
    }

    /// Builder form of [`Catalog::register_native`].
    pub fn with_native<T: ToolHandler>(mut self, tool: T) -> Result<Self, CatalogError> {
        self.register_native(tool)?;
        Ok(self)
    }

    /// Removes a tool, returning it if it was there.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn DynTool>> {
        self.tools.shift_remove(name)
    }

    /// The tool named `name`, or an error suggesting the closest names.
    pub fn get(&self, name: &str) -> Result<&Arc<dyn DynTool>, CatalogError> {
        self.tools
            .get(name)
            .ok_or_else(|| self.unknown(name, |_| true))
    }

    /// The tool named `name`, if there is one (no suggestions are looked for).
    pub fn find(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools.get(name)
    }

    /// The error for a call to `name` by a caller that may know only the tools
    /// `visible` admits: the closest of those names are suggested, no other. A
    /// name longer than any tool may have is like none, and is not compared.
    pub fn unknown(&self, name: &str, visible: impl Fn(&ToolDescriptor) -> bool) -> CatalogError {
        let suggestions = if name.len() > MAX_NAME_LEN {
            Vec::new()
        } else {
            let names = self
                .tools
                .iter()
                .filter(|(_, tool)| visible(tool.descriptor()))
                .map(|(name, _)| name.as_str());
            closest_names(name, names)
        };
        CatalogError::Unknown {
            name: clip_text(name, MAX_NAME_LEN).into_owned(),
            suggestions,
        }
    }

    /// Whether a tool has exactly this name (no suggestions are looked for).
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Names in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Tools in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn DynTool>> {
        self.tools.values()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use serde_json::{Value, json};

    use super::*;
    use crate::{Effect, ToolCtx, ToolDescriptor, ToolError};

    struct Fixed(ToolDescriptor);

    impl DynTool for Fixed {
        fn descriptor(&self) -> &ToolDescriptor {
            &self.0
        }
        fn call<'a>(
            &'a self,
            _ctx: &'a ToolCtx,
            input: Value,
        ) -> BoxFuture<'a, Result<Value, ToolError>> {
            Box::pin(async move { Ok(input) })
        }
    }

    fn tool(name: &str, source: ToolSource) -> Arc<dyn DynTool> {
        Arc::new(Fixed(ToolDescriptor::new(
            name,
            "A test tool.",
            json!({"type": "object"}),
            Effect::Read,
            source,
        )))
    }

    fn spec(file: &str) -> ToolSource {
        ToolSource::Spec { file: file.into() }
    }

    #[test]
    fn tools_keep_registration_order() {
        let mut catalog = Catalog::new();
        for name in ["zeta", "alpha", "github.create_issue"] {
            catalog.register(tool(name, ToolSource::Builtin)).unwrap();
        }
        assert_eq!(
            catalog.names().collect::<Vec<_>>(),
            ["zeta", "alpha", "github.create_issue"]
        );
        catalog.remove("alpha");
        assert_eq!(
            catalog.names().collect::<Vec<_>>(),
            ["zeta", "github.create_issue"]
        );
    }

    #[test]
    fn a_duplicate_name_is_refused_naming_both_sources() {
        let mut catalog = Catalog::new();
        catalog
            .register(tool("lookup_order", spec("helpdesk.yaml")))
            .unwrap();
        let err = catalog
            .register(tool(
                "lookup_order",
                ToolSource::Mcp {
                    server: "orders".into(),
                },
            ))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool `lookup_order` is defined twice: by spec file helpdesk.yaml and by MCP server `orders`; rename one of them"
        );
        assert_eq!(catalog.len(), 1);
    }

    #[test]
    fn a_bad_name_is_refused_naming_its_source() {
        let err = Catalog::new()
            .register(tool("refund order", spec("a.yaml")))
            .unwrap_err();
        assert!(matches!(
            err,
            CatalogError::InvalidName {
                error: NameError::BadCharacter { found: ' ', .. },
                ..
            }
        ));
        assert!(
            err.to_string()
                .starts_with("cannot register a tool from spec file a.yaml: "),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_name_suggests_the_closest() {
        let mut catalog = Catalog::new();
        for name in ["lookup_order", "refund_order", "create_ticket"] {
            catalog.register(tool(name, ToolSource::Builtin)).unwrap();
        }
        let err = catalog.get("lookup_ordr").err().unwrap();
        assert_eq!(
            err.to_string(),
            "no tool is named `lookup_ordr`; did you mean `lookup_order`?"
        );
        let err = catalog.get("weather").err().unwrap();
        assert_eq!(err.to_string(), "no tool is named `weather`");
    }

    #[test]
    fn an_unknown_name_suggests_only_visible_tools() {
        let mut catalog = Catalog::new();
        for name in ["lookup_order", "lookup_orders_admin"] {
            catalog.register(tool(name, ToolSource::Builtin)).unwrap();
        }
        let err = catalog.unknown("lookup_ordr", |d| d.name != "lookup_order");
        assert_eq!(
            err.to_string(),
            "no tool is named `lookup_ordr`; did you mean `lookup_orders_admin`?"
        );
        let err = catalog.unknown("lookup_ordr", |_| false);
        assert_eq!(err.to_string(), "no tool is named `lookup_ordr`");
    }
}
