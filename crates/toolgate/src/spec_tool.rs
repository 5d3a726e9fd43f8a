//! A tool declared in a spec file, and what runs it.
//!
//! The declaration is what a model sees; the implementation behind it follows the
//! precedence native → MCP → HTTP → mock, so a mock can be swapped for a real
//! binding without touching the declaration.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use toolgate_core::spec::{BindingKind, SpecFile, ToolSpec, inject, template};
use toolgate_core::{
    Catalog, CatalogError, DynTool, ToolCtx, ToolDescriptor, ToolError, ToolSource,
};

/// A spec tool: its declaration and the implementation that runs it.
pub struct SpecTool {
    spec: ToolSpec,
    descriptor: ToolDescriptor,
    native: Option<Arc<dyn DynTool>>,
    /// Runs the `http:` binding; a default runtime (public addresses only) when unset.
    #[cfg(feature = "http")]
    http: Option<Arc<crate::http::HttpRuntime>>,
    /// Runs the `mcp:` binding; its server starts on the first call.
    #[cfg(feature = "mcp")]
    mcp: Option<crate::mcp::client::McpBindingRunner>,
}

impl SpecTool {
    /// The declared tool, run by its binding (or its mock).
    pub fn new(spec: ToolSpec, file: &str) -> Self {
        let mut descriptor = ToolDescriptor::new(
            spec.name.clone(),
            spec.description.clone(),
            spec.input_schema(),
            spec.effect(),
            ToolSource::Spec {
                file: file.to_owned(),
            },
        );
        descriptor.title = spec.title.clone();
        descriptor.output_schema = spec.returns.clone();
        descriptor.usage = spec.usage.clone();
        descriptor.input_examples = spec.examples.clone();
        descriptor.tags = spec.tags.clone();
        descriptor.background = spec.background_scheduling();
        descriptor.output = spec.output_labels();
        descriptor.sends = spec.sends;
        descriptor.cost = spec.cost.clone();
        hide_injected(&mut descriptor, &spec.inject);
        #[cfg(feature = "mcp")]
        let mcp = crate::mcp::client::McpBindingRunner::new(&spec, file);
        SpecTool {
            spec,
            descriptor,
            native: None,
            #[cfg(feature = "http")]
            http: None,
            #[cfg(feature = "mcp")]
            mcp,
        }
    }

    /// Runs the `http:` binding with `runtime` (its network policy and environment).
    #[cfg(feature = "http")]
    pub fn with_http(mut self, runtime: Arc<crate::http::HttpRuntime>) -> Self {
        self.http = Some(runtime);
        self
    }

    /// Puts the `mcp:` binding's server under `network` (the spec file's `network:`
    /// section) instead of the default policy, public addresses only. (`http:`
    /// bindings take theirs from the [`crate::http::HttpRuntime`].)
    pub fn with_network(
        #[cfg_attr(not(feature = "mcp"), allow(unused_mut))] mut self,
        #[cfg_attr(not(feature = "mcp"), allow(unused_variables))]
        network: &toolgate_core::spec::NetworkSection,
    ) -> Self {
        #[cfg(feature = "mcp")]
        if let Some(runner) = &mut self.mcp {
            runner.set_network(Arc::new(toolgate_core::spec::NetworkPolicy::new(network)));
        }
        self
    }

    /// Runs the declaration with a native implementation instead of its binding.
    /// A declaration without `parameters` (or `returns`) takes the native tool's schema.
    pub fn with_native(mut self, native: Arc<dyn DynTool>) -> Self {
        if self.spec.parameters.is_none() {
            self.descriptor.input_schema = native.input_schema().clone();
            hide_injected(&mut self.descriptor, &self.spec.inject);
        }
        if self.spec.returns.is_none() {
            self.descriptor.output_schema = native.output_schema().cloned();
        }
        self.native = Some(native);
        self
    }

    /// The declaration the tool was made from, as the spec file wrote it.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// What runs this tool when it is called.
    pub fn binding_kind(&self) -> BindingKind {
        if self.native.is_some() {
            BindingKind::Native
        } else {
            self.spec.binding_kind()
        }
    }
}

impl DynTool for SpecTool {
    fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            match (&self.native, self.spec.binding_kind()) {
                (Some(native), _) => native.call(ctx, input).await,
                (None, BindingKind::Mock | BindingKind::Native) => Ok(template::render(
                    &self.spec.canned_response(),
                    &input,
                    ctx.state_map(),
                )),
                #[cfg(feature = "http")]
                (None, BindingKind::Http) => {
                    let runtime = match &self.http {
                        Some(runtime) => runtime.clone(),
                        None => default_http_runtime(),
                    };
                    runtime.call(&self.spec, ctx, &input).await
                }
                #[cfg(feature = "mcp")]
                (None, BindingKind::Mcp) => match &self.mcp {
                    Some(runner) => runner.call(ctx, input).await,
                    None => Err(ToolError::permanent(format!(
                        "tool `{}` has no `mcp:` binding to run",
                        self.spec.name
                    ))),
                },
                // Reached only in builds without the `mcp` or `http` feature.
                #[allow(unreachable_patterns)]
                (None, kind) => Err(ToolError::permanent(format!(
                    "tool `{}` is bound to {}, which this build of toolgate cannot run yet; \
                     remove the `{}:` binding to use the tool's mock response",
                    self.spec.name,
                    kind.as_str().to_uppercase(),
                    kind.as_str()
                ))),
            }
        })
    }

    fn trusted(&self) -> bool {
        match &self.native {
            Some(native) => native.trusted(),
            None => self.spec.binding_kind() == BindingKind::Mock,
        }
    }

    fn idempotency_key(&self, input: &Value) -> Option<String> {
        self.native
            .as_ref()
            .and_then(|native| native.idempotency_key(input))
    }

    fn passes_idempotency_key(&self) -> bool {
        match (&self.native, &self.spec.http) {
            (Some(native), _) => native.passes_idempotency_key(),
            (None, Some(http)) => http.idempotency_header.is_some(),
            (None, None) => true,
        }
    }

    fn injected(&self) -> Option<&indexmap::IndexMap<String, String>> {
        (!self.spec.inject.is_empty()).then_some(&self.spec.inject)
    }
}

/// Cuts the injected parameters out of what the model is shown, and names
/// those the MCP host sends (`secureInputSchema`).
fn hide_injected(descriptor: &mut ToolDescriptor, inject: &indexmap::IndexMap<String, String>) {
    if inject.is_empty() {
        return;
    }
    let full = &descriptor.input_schema;
    descriptor.secure_input_schema = inject::secure_input_schema(full, inject);
    descriptor.input_schema = inject::without_params(full, inject.keys());
}

/// The runtime of a [`SpecTool`] built without one: the default network policy.
#[cfg(feature = "http")]
fn default_http_runtime() -> Arc<crate::http::HttpRuntime> {
    static DEFAULT: std::sync::OnceLock<Arc<crate::http::HttpRuntime>> = std::sync::OnceLock::new();
    DEFAULT.get_or_init(Default::default).clone()
}

/// Builds the catalog a spec file declares. A tool in `natives` with the same name
/// as a declared tool implements that declaration; other natives are added as they are.
/// HTTP bindings run under the file's `network:` section.
pub fn spec_catalog(
    spec: &SpecFile,
    file: &str,
    natives: &Catalog,
) -> Result<Catalog, CatalogError> {
    #[cfg(feature = "http")]
    {
        let runtime = Arc::new(crate::http::HttpRuntime::new(&spec.network));
        spec_catalog_with_http(spec, file, natives, runtime)
    }
    #[cfg(not(feature = "http"))]
    build_catalog(spec, file, natives, |tool| tool)
}

/// [`spec_catalog`] with HTTP bindings run by `runtime` (shared, or reading the
/// environment from elsewhere) instead of one made from the file's `network:`.
#[cfg(feature = "http")]
pub fn spec_catalog_with_http(
    spec: &SpecFile,
    file: &str,
    natives: &Catalog,
    runtime: Arc<crate::http::HttpRuntime>,
) -> Result<Catalog, CatalogError> {
    build_catalog(spec, file, natives, |tool| tool.with_http(runtime.clone()))
}

fn build_catalog(
    spec: &SpecFile,
    file: &str,
    natives: &Catalog,
    prepare: impl Fn(SpecTool) -> SpecTool,
) -> Result<Catalog, CatalogError> {
    let mut catalog = Catalog::new();
    for tool in &spec.tools {
        let mut declared = prepare(SpecTool::new(tool.clone(), file).with_network(&spec.network));
        if let Ok(native) = natives.get(&tool.name) {
            declared = declared.with_native(native.clone());
        }
        catalog.register(Arc::new(declared))?;
    }
    for native in natives.iter() {
        if !catalog.contains(native.name()) {
            catalog.register(native.clone())?;
        }
    }
    Ok(catalog)
}

impl crate::Gate {
    /// A gate over the tools a spec file declares (with `natives` implementing any
    /// declaration of the same name), its state effects, defaults and policy.
    pub fn from_spec(
        spec: &toolgate_core::spec::SpecFile,
        file: &str,
        natives: &toolgate_core::Catalog,
        store: std::sync::Arc<dyn crate::store::GateStore>,
    ) -> Result<Self, toolgate_core::CatalogError> {
        Ok(crate::Gate::builder(spec_catalog(spec, file, natives)?)
            .spec(spec)
            .store(store)
            .build())
    }
}
