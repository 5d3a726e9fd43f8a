//! Upstream MCP servers for the commands that show or call tools: connected only
//! when the spec file has `mcp_servers:`, reported on stderr when something is
//! wrong, and stopped (with their children) when the command ends.

use std::path::Path;
use std::sync::Arc;

use std::process::ExitCode;

use serde_json::{Value, json};
use toolgate::mcp::client::{ServerState, UpstreamOptions, Upstreams};
use toolgate::skills::{READ_SKILL, Skills, skill_pin_key};
use toolgate::spec::{McpBinding, SpecFile, ToolSpec, returns_shape};
use toolgate::{
    Catalog, SqliteStore, ToolDescriptor, store::PinStore, store::resolve_state_dir,
    tool::ToolSource,
};

use crate::SpecArgs;
use crate::context::CommandResult;
use crate::output::{describe_tool, print_json};

/// The spec file's upstream servers, connected, and the runtime they run on.
pub struct Upstream {
    // Dropped before the runtime: stopping the servers needs no runtime, but their
    // supervisors live on it.
    upstreams: Option<Upstreams>,
    runtime: tokio::runtime::Runtime,
}

/// One upstream tool as `toolgate list` shows it.
pub struct ListRow {
    pub descriptor: ToolDescriptor,
    /// `quarantined` or `unavailable`, when it is either.
    pub status: Option<&'static str>,
}

impl ListRow {
    pub fn json(&self) -> Value {
        let server = match &self.descriptor.source {
            ToolSource::Mcp { server } => server.as_str(),
            _ => "",
        };
        json!({
            "name": self.descriptor.name,
            "effect": self.descriptor.effect,
            "binding": "mcp",
            "server": server,
            "status": self.status.unwrap_or("ok"),
            "description": self.descriptor.description,
        })
    }
}

impl Upstream {
    /// Connects the servers of `spec` (only the namespace of `tool`, when given),
    /// with pins in `store`. A spec without `mcp_servers:` connects nothing and
    /// opens no store.
    pub fn connect(
        spec: &SpecFile,
        spec_path: &Path,
        store: impl FnOnce() -> Result<Arc<dyn PinStore>, String>,
        tool: Option<&str>,
    ) -> Result<Upstream, String> {
        Self::connect_with(spec, spec_path, store, tool, None)
    }

    /// As [`Upstream::connect`], the servers' skills listed into `skills`
    /// (every server is connected for `read_skill`, whose skill may be any one's).
    pub fn connect_with(
        spec: &SpecFile,
        spec_path: &Path,
        store: impl FnOnce() -> Result<Arc<dyn PinStore>, String>,
        tool: Option<&str>,
        skills: Option<Arc<Skills>>,
    ) -> Result<Upstream, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let tool = tool.filter(|t| !(skills.is_some() && *t == READ_SKILL));
        let only: Option<Vec<String>> = tool.map(|t| {
            t.split_once('.')
                .map(|(ns, _)| vec![ns.to_owned()])
                .unwrap_or_default()
        });
        let wanted = match &only {
            Some(only) => spec.mcp_servers.keys().any(|ns| only.contains(ns)),
            None => !spec.mcp_servers.is_empty(),
        };
        if !wanted {
            return Ok(Upstream {
                upstreams: None,
                runtime,
            });
        }
        let options = UpstreamOptions {
            base_dir: spec_path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf),
            only,
            skills: skills.clone(),
            ..UpstreamOptions::default()
        };
        let pins = store()?;
        let upstreams = runtime.block_on(Upstreams::connect(spec, pins, options));
        let upstream = Upstream {
            upstreams: Some(upstreams),
            runtime,
        };
        upstream.report(skills.as_deref());
        Ok(upstream)
    }

    /// As [`Upstream::connect`], with pins in the state directory beside the spec
    /// file (or `$TOOLGATE_STATE_DIR`): for commands without `--state-dir`.
    pub fn for_listing(spec: &SpecFile, spec_path: &Path) -> Result<Upstream, String> {
        Self::listing(spec, spec_path, None)
    }

    /// As [`Upstream::for_listing`], the servers' skills listed into `skills`.
    pub fn listing(
        spec: &SpecFile,
        spec_path: &Path,
        skills: Option<Arc<Skills>>,
    ) -> Result<Upstream, String> {
        Self::connect_with(
            spec,
            spec_path,
            || {
                let dir = resolve_state_dir(None, spec_path);
                let store = SqliteStore::open_in_dir(&dir).map_err(|e| e.to_string())?;
                Ok(Arc::new(store) as Arc<dyn PinStore>)
            },
            None,
            skills,
        )
    }

    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }

    /// Every upstream tool, for the gate: quarantined and unavailable ones answer
    /// why they cannot run.
    pub fn catalog(&self) -> Catalog {
        self.upstreams
            .as_ref()
            .map(Upstreams::catalog)
            .unwrap_or_default()
    }

    /// The upstream tools a model may be shown.
    pub fn offered(&self) -> Vec<ToolDescriptor> {
        self.upstreams
            .as_ref()
            .map(|u| u.offered().iter().map(|t| t.descriptor().clone()).collect())
            .unwrap_or_default()
    }

    /// Every upstream tool with its standing, for `toolgate list`.
    pub fn rows(&self) -> Vec<ListRow> {
        let Some(upstreams) = &self.upstreams else {
            return Vec::new();
        };
        let status = upstreams.status();
        upstreams
            .tools()
            .iter()
            .map(|tool| {
                let descriptor = tool.descriptor().clone();
                let server = status.iter().find(|s| {
                    matches!(&descriptor.source, ToolSource::Mcp { server } if *server == s.namespace)
                });
                let status = if upstreams.is_withheld(&descriptor.name) {
                    Some("quarantined")
                } else if server.is_some_and(|s| !s.state.is_available()) {
                    Some("unavailable")
                } else {
                    None
                };
                ListRow { descriptor, status }
            })
            .collect()
    }

    /// Why `tool`, in a server's namespace, is not in the catalog at all: its server
    /// never connected, or does not list it.
    pub fn missing(&self, tool: &str) -> Option<String> {
        let upstreams = self.upstreams.as_ref()?;
        let (namespace, _) = tool.split_once('.')?;
        let status = upstreams
            .status()
            .into_iter()
            .find(|s| s.namespace == namespace)?;
        if status.tools.iter().any(|t| t == tool) {
            return None;
        }
        Some(match (&status.state, status.reason) {
            (ServerState::Ready, _) => {
                let close =
                    toolgate::tool::closest_names(tool, status.tools.iter().map(String::as_str));
                let hint = match (close.first(), status.tools.len()) {
                    (Some(best), _) => format!("; did you mean `{best}`?"),
                    (None, 0) => "; it offers no tools".to_owned(),
                    (None, n) => format!("; `toolgate list` shows its {n} tools"),
                };
                format!("MCP server `{namespace}` offers no tool `{tool}`{hint}")
            }
            (_, Some(reason)) => format!("`{tool}` cannot be reached: {reason}"),
            (state, None) => format!("MCP server `{namespace}` is {}", state.as_str()),
        })
    }

    /// Servers that are not ready, quarantined tools and skills and those left
    /// out, on stderr.
    fn report(&self, skills: Option<&Skills>) {
        if let Some(upstreams) = &self.upstreams {
            report(upstreams, skills, false);
        }
    }
}

/// What `serve` (`serving`: with the revision each server speaks) and the
/// other commands say on stderr of the upstream servers: those not ready,
/// tools and skills left out, and those quarantined.
pub fn report(upstreams: &Upstreams, skills: Option<&Skills>, serving: bool) {
    let withheld = if serving { " and not served" } else { "" };
    for status in upstreams.status() {
        if let (true, ServerState::Ready, Some(revision)) =
            (serving, &status.state, &status.revision)
        {
            let server = status
                .server
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            tellln!(
                "toolgate: MCP server `{}`{server} speaks MCP {revision}",
                status.namespace
            );
        }
        if let Some(reason) = &status.reason {
            tellln!(
                "warning: MCP server `{}` is not ready ({}): {reason}",
                status.namespace,
                status.state.as_str()
            );
        }
        for skipped in &status.skipped {
            tellln!(
                "warning: `{}` of MCP server `{}` is left out: {}",
                skipped.name,
                status.namespace,
                skipped.reason
            );
        }
        for skipped in &status.skipped_skills {
            tellln!(
                "warning: the skill `{}` of MCP server `{}` is left out: {}",
                skipped.name,
                status.namespace,
                skipped.reason
            );
        }
    }
    for tool in upstreams.withheld() {
        tellln!(
            "warning: `{}` is quarantined{withheld}: {}; review it with `toolgate pins diff {}`",
            tool.tool,
            tool.reason,
            tool.tool
        );
    }
    let entries = skills.map(|s| s.entries()).unwrap_or_default();
    for entry in entries.iter().filter(|e| e.quarantine.is_some()) {
        let key = skill_pin_key(&entry.skill.name);
        tellln!(
            "warning: the skill `{}` is quarantined{withheld}: {}; review it with `toolgate pins diff {key}`",
            entry.skill.name,
            entry.quarantine.as_deref().unwrap_or_default()
        );
    }
}

/// Whether `name` is in the namespace of one of the spec file's MCP servers (and
/// not a declared tool).
pub fn is_upstream_name(spec: &SpecFile, name: &str) -> bool {
    !spec.tools.iter().any(|t| t.name == name)
        && name
            .split_once('.')
            .is_some_and(|(ns, _)| spec.mcp_servers.contains_key(ns))
}

/// `toolgate describe` for an upstream tool.
pub fn describe(args: &SpecArgs, spec: &SpecFile, spec_path: &Path, name: &str) -> CommandResult {
    let upstream = Upstream::connect(
        spec,
        spec_path,
        || {
            let dir = resolve_state_dir(None, spec_path);
            let store = SqliteStore::open_in_dir(&dir).map_err(|e| e.to_string())?;
            Ok(Arc::new(store) as Arc<dyn PinStore>)
        },
        Some(name),
    )?;
    if let Some(why) = upstream.missing(name) {
        return Err(why);
    }
    let catalog = upstream.catalog();
    let descriptor = catalog.get(name).map_err(|e| e.to_string())?.descriptor();
    let status = upstream
        .rows()
        .into_iter()
        .find(|r| r.descriptor.name == name)
        .and_then(|r| r.status);
    let namespace = name.split_once('.').map_or("", |(ns, _)| ns);
    // The declaration this tool would have in a spec file, for the shared layout.
    let as_spec = ToolSpec {
        name: descriptor.name.clone(),
        title: descriptor.title.clone(),
        description: descriptor.description.clone(),
        parameters: Some(descriptor.input_schema.clone()),
        // Without an output schema, a server may return any text or content.
        returns: Some(
            descriptor
                .output_schema
                .clone()
                .unwrap_or_else(|| json!({})),
        ),
        effect: Some(descriptor.effect),
        mcp: Some(McpBinding::Short(format!("server `{namespace}`"))),
        ..serde_json::from_value(json!({"name": name, "description": ""}))
            .map_err(|e| e.to_string())?
    };
    if args.json {
        print_json(&json!({
            "descriptor": descriptor,
            "binding": "mcp",
            "server": namespace,
            "status": status.unwrap_or("ok"),
            "returns_shape": returns_shape(&as_spec),
        }));
    } else {
        say!("{}", describe_tool(&as_spec, descriptor));
        if let Some(status) = status {
            sayln!(
                "
status      {status}"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
