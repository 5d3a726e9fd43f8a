//! The gate: the one path every call takes — resolve, validate, run, apply state.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolgate_core::spec::{SpecFile, template};
use toolgate_core::{Catalog, CatalogError, Principal, ToolCtx, ToolError};

use crate::spec_tool::spec_catalog;
use crate::store::{StateStore, StoreError};

/// A call as a model (or any caller) makes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// One way the arguments break the tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgumentProblem {
    /// JSON pointer into the arguments (`""` is the whole object).
    pub path: String,
    /// The schema keyword broken, e.g. `required` or `type`.
    pub rule: String,
    pub message: String,
}

/// Why a call did not produce a value. The variant says who must act.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The model named a tool that does not exist.
    #[error(transparent)]
    UnknownTool(#[from] CatalogError),
    /// The model's arguments do not fit the tool's schema; nothing ran.
    #[error("{}", invalid_arguments_message(tool, problems))]
    InvalidArguments {
        tool: String,
        problems: Vec<ArgumentProblem>,
    },
    /// The tool ran and failed.
    #[error("tool `{tool}` failed: {error}")]
    Tool { tool: String, error: ToolError },
    /// The state store failed; the operator must look.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn invalid_arguments_message(tool: &str, problems: &[ArgumentProblem]) -> String {
    let mut message =
        format!("the arguments for `{tool}` are invalid; nothing ran. Fix these and call again:");
    for p in problems {
        let at = if p.path.is_empty() {
            "(the arguments)".to_owned()
        } else {
            format!("`{}`", p.path)
        };
        message.push_str(&format!("\n- at {at}: {} [{}]", p.message, p.rule));
    }
    message
}

/// What a tool writes to state after it succeeds.
#[derive(Debug, Clone, Default)]
struct StateEffects {
    set_state: Vec<(String, Value)>,
    save_response_as: Option<String>,
}

/// Runs calls against a catalog: resolves the tool, validates the arguments against
/// its input schema, runs it with the conversation's state, and applies its state
/// effects in one transaction.
pub struct Gate {
    catalog: Catalog,
    validators: HashMap<String, Result<jsonschema::Validator, String>>,
    effects: HashMap<String, StateEffects>,
    defaults: Map<String, Value>,
    store: Arc<dyn StateStore>,
}

impl Gate {
    /// A gate over `catalog`, keeping conversation state in `store`.
    pub fn new(catalog: Catalog, store: Arc<dyn StateStore>) -> Self {
        let validators = catalog
            .iter()
            .map(|tool| {
                let compiled =
                    jsonschema::draft202012::new(tool.input_schema()).map_err(|e| e.to_string());
                (tool.name().to_owned(), compiled)
            })
            .collect();
        Gate {
            catalog,
            validators,
            effects: HashMap::new(),
            defaults: Map::new(),
            store,
        }
    }

    /// A gate over the tools a spec file declares (with `natives` implementing any
    /// declaration of the same name), their state effects and state defaults.
    pub fn from_spec(
        spec: &SpecFile,
        file: &str,
        natives: &Catalog,
        store: Arc<dyn StateStore>,
    ) -> Result<Self, CatalogError> {
        let mut gate = Gate::new(spec_catalog(spec, file, natives)?, store);
        for tool in &spec.tools {
            let effects = StateEffects {
                set_state: tool
                    .set_state
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                save_response_as: tool.save_response_as.clone(),
            };
            gate.effects.insert(tool.name.clone(), effects);
        }
        gate.defaults = spec
            .state
            .iter()
            .filter_map(|(key, declared)| Some((key.clone(), declared.default.clone()?)))
            .collect();
        Ok(gate)
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// A conversation's state: what was written, over the declared defaults.
    pub fn state(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        let mut state = self.defaults.clone();
        state.extend(self.store.load(session)?);
        Ok(state)
    }

    /// Runs one call in conversation `session` on behalf of `principal`.
    pub async fn call(
        &self,
        session: &str,
        call: ToolCall,
        principal: &Principal,
    ) -> Result<Value, CallError> {
        let tool = self.catalog.get(&call.name)?;
        self.validate(&call)?;
        let state = self.state(session)?;
        let ctx =
            ToolCtx::new(call.id.clone(), principal.clone()).with_state(Arc::new(state.clone()));
        let ctx = match tool.idempotency_key(&call.arguments) {
            Some(key) => ctx.with_idempotency_key(key),
            None => ctx,
        };
        let value = tool
            .call(&ctx, call.arguments.clone())
            .await
            .map_err(|error| CallError::Tool {
                tool: call.name.clone(),
                error,
            })?;
        if let Some(effects) = self.effects.get(&call.name) {
            let mut writes: Vec<(String, Value)> = effects
                .set_state
                .iter()
                .map(|(key, template)| {
                    (
                        key.clone(),
                        template::render(template, &call.arguments, &state),
                    )
                })
                .collect();
            if let Some(key) = &effects.save_response_as {
                writes.push((key.clone(), value.clone()));
            }
            if !writes.is_empty() {
                self.store.apply(session, &writes)?;
            }
        }
        Ok(value)
    }

    fn validate(&self, call: &ToolCall) -> Result<(), CallError> {
        let invalid = |problems| CallError::InvalidArguments {
            tool: call.name.clone(),
            problems,
        };
        match self.validators.get(&call.name) {
            Some(Ok(validator)) => {
                let problems: Vec<ArgumentProblem> = validator
                    .iter_errors(&call.arguments)
                    .map(|e| ArgumentProblem {
                        path: e.instance_path().as_str().to_owned(),
                        rule: e.kind().keyword().to_owned(),
                        message: e.to_string(),
                    })
                    .collect();
                if problems.is_empty() {
                    Ok(())
                } else {
                    Err(invalid(problems))
                }
            }
            Some(Err(schema_error)) => Err(invalid(vec![ArgumentProblem {
                path: String::new(),
                rule: "schema".into(),
                message: format!(
                    "the tool's own input schema is broken ({schema_error}); tell the operator"
                ),
            }])),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("catalog", &self.catalog)
            .finish_non_exhaustive()
    }
}
