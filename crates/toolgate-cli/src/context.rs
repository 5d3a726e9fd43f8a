//! What every command shares: the spec-file and state arguments, loading the
//! spec, choosing and opening its store, the principal `--as` names, and the one
//! way a command opens a gate; the access `serve` and `console` take from the
//! spec's `auth:`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use toolgate::auth::{ApiKeys, HttpAccess, OAuth, key_file_path};
use toolgate::mcp::client::Upstreams;
use toolgate::search::Exclusion;
use toolgate::skills::Skills;
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, DynTool, Gate, Principal, ToolError, search::SearchTools, spec::SpecSource,
    spec::spec_catalog, store::OpenOptions, store::ServedStore, store::StoreChoice,
    store::resolve_state_dir,
};
use toolgate::{SqliteStore, store::STATE_DB_FILE};

/// Options shared by every command that reads a spec file.
#[derive(clap::Args, Clone)]
pub struct SpecArgs {
    /// The spec file.
    #[arg(short = 'f', long = "file", default_value = toolgate::spec::DEFAULT_SPEC_FILE, global = true)]
    pub file: PathBuf,
    /// Print data as JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Options of commands that read or write conversation state.
#[derive(clap::Args, Clone)]
pub struct StateArgs {
    /// The conversation whose state to use.
    #[arg(long, default_value = "default", global = true)]
    pub session: String,
    /// Where the state database lives (default: $TOOLGATE_STATE_DIR, else .toolgate/ beside the spec file).
    #[arg(long, global = true)]
    pub state_dir: Option<PathBuf>,
    /// Keep the store in this PostgreSQL database, shared with other instances: postgres://USER:PASSWORD@HOST:PORT/DB, a password as ${env.NAME} (default: $TOOLGATE_STORE, else the spec's `store:`, else the SQLite file in the state directory).
    #[arg(long, global = true, value_name = "URL")]
    pub store: Option<String>,
    /// Connections in a PostgreSQL store's pool (default: 16).
    #[arg(long, global = true, value_name = "N")]
    pub store_pool: Option<usize>,
}

/// Reads and checks the spec file; a file with errors stops the command.
pub(crate) fn load(args: &SpecArgs) -> Result<(SpecFile, SpecSource), String> {
    let source = SpecSource::read(&args.file).map_err(|e| e.to_string())?;
    match (&source.checked.spec, source.checked.is_ok()) {
        (Some(spec), true) => Ok((spec.clone(), source)),
        _ => {
            tell!("{}", source.render_diagnostics());
            Err(format!(
                "{} has errors; fix them first (`toolgate check` lists them)",
                args.file.display()
            ))
        }
    }
}

/// The store `--store`, `TOOLGATE_STORE` or the spec's `store:` names, else the
/// SQLite file in the state directory.
pub(crate) fn store_choice(args: &SpecArgs, state: &StateArgs) -> Result<StoreChoice, String> {
    let dir = resolve_state_dir(state.state_dir.as_deref(), &args.file);
    // A spec file that cannot be read names no store; the command reports it.
    let spec_store = SpecSource::read(&args.file)
        .ok()
        .and_then(|source| source.checked.spec)
        .and_then(|spec| spec.store);
    toolgate::store::choose_store(
        state.store.as_deref(),
        spec_store.as_deref(),
        &dir,
        |name| std::env::var(name).ok(),
    )
    .map_err(|e| e.to_string())
}

/// Opens the chosen store (see [`store_choice`]).
pub(crate) fn open_store(
    args: &SpecArgs,
    state: &StateArgs,
) -> Result<Arc<dyn ServedStore>, String> {
    let choice = store_choice(args, state)?;
    open_chosen(&choice, args, state)
}

/// Opens `choice`; a PostgreSQL store keeps its code-run key in the state directory.
pub(crate) fn open_chosen(
    choice: &StoreChoice,
    args: &SpecArgs,
    state: &StateArgs,
) -> Result<Arc<dyn ServedStore>, String> {
    let dir = resolve_state_dir(state.state_dir.as_deref(), &args.file);
    let options = OpenOptions {
        pool_size: state.store_pool,
    };
    toolgate::store::open_store(choice, &options, &dir).map_err(|e| e.to_string())
}

/// The principal named by `--as`, as the spec file declares it; the operator by default.
pub(crate) fn principal(spec: &SpecFile, caller: Option<&str>) -> Result<Principal, String> {
    let Some(id) = caller else {
        return Ok(Principal::operator());
    };
    match spec.principals.get(id) {
        Some(declared) => Ok(declared.to_principal(id)),
        None if id == "operator" => Ok(Principal::operator()),
        None => {
            let hint =
                toolgate::tool::closest_names(id, spec.principals.keys().map(String::as_str))
                    .into_iter()
                    .next()
                    .map(|h| format!("; did you mean `{h}`?"))
                    .unwrap_or_else(|| "; declare it under `principals:` in the spec file".into());
            Err(format!("no principal is named `{id}`{hint}"))
        }
    }
}

/// The gate of `spec` (read from `source`) over `store` (in memory when
/// `None`: a render that runs nothing), its spec tools bound and `natives` (the
/// upstream servers' tools, or none) beside them: how every command but `serve`
/// and `console` opens one.
pub(crate) fn open_gate(
    spec: &SpecFile,
    source: &SpecSource,
    natives: &Catalog,
    store: Option<Arc<dyn ServedStore>>,
) -> Result<Gate, String> {
    open_gate_with(spec, source, natives, store, &spec_skills(source))
}

/// [`open_gate`] offering `skills` (the spec's and upstream servers').
pub(crate) fn open_gate_with(
    spec: &SpecFile,
    source: &SpecSource,
    natives: &Catalog,
    store: Option<Arc<dyn ServedStore>>,
    skills: &Arc<Skills>,
) -> Result<Gate, String> {
    let file = source.path.display().to_string();
    let catalog = spec_catalog(spec, &file, natives).map_err(|e| e.to_string())?;
    let builder = with_skills(Gate::builder(catalog).spec(spec), Some(skills));
    Ok(match store {
        Some(store) => builder.store(store),
        None => builder,
    }
    .build())
}

/// How `serve --search` searches: by words, and by meaning when a model is configured.
/// The scorer outlives each gate, so a catalog change re-embeds only what changed.
#[derive(Clone)]
pub(crate) struct Searching {
    pub(crate) scorer: Option<Arc<dyn toolgate::search::CatalogScorer>>,
}

/// The gate `serve` and `console` run calls through (every other command
/// opens its gate with [`open_gate`], which is this without upstream servers'
/// quarantine or search): the spec file's tools, the upstream servers'
/// and, with `search`, `search_tools` over all of them; and the quarantined tools to
/// withhold from `tools/list`. A gate that replaces the `previous` one takes turns
/// with it in each conversation.
pub(crate) fn open_served_gate(
    spec: &SpecFile,
    file: &str,
    upstreams: Option<&Upstreams>,
    store: &Arc<dyn ServedStore>,
    search: Option<&Searching>,
    skills: Option<&Arc<Skills>>,
    previous: Option<&Gate>,
) -> Result<(Gate, Vec<String>), String> {
    let natives = upstreams.map(Upstreams::catalog).unwrap_or_default();
    let mut catalog = spec_catalog(spec, file, &natives).map_err(|e| e.to_string())?;
    let mut withheld: Vec<String> = upstreams
        .map(|u| u.withheld().into_iter().map(|w| w.tool).collect())
        .unwrap_or_default();
    if let Some(searching) = search {
        // Searches leave out what cannot run now: quarantined tools, and upstream
        // tools behind an open circuit or gone from their server's list.
        let quarantined = withheld.clone();
        let tools: HashMap<String, Arc<dyn DynTool>> = catalog
            .iter()
            .map(|tool| (tool.name().to_owned(), tool.clone()))
            .collect();
        let mut search = SearchTools::new(&catalog).with_policy(spec.policy.clone());
        if let Some(scorer) = &searching.scorer {
            search = search.with_scorer(scorer.clone());
        }
        let search = search.with_filter(move |_, tool| {
            if quarantined.contains(&tool.name) {
                return Some(Exclusion::Quarantined);
            }
            match tools.get(&tool.name)?.available() {
                Ok(()) => None,
                Err(ToolError::Retryable { .. }) => Some(Exclusion::BreakerOpen),
                Err(e) => Some(Exclusion::Other(e.to_string())),
            }
        });
        catalog
            .register(Arc::new(search))
            .map_err(|e| e.to_string())?;
    }
    let mut builder = with_skills(Gate::builder(catalog).spec(spec), skills).store(store.clone());
    if let Some(previous) = previous {
        builder = builder.succeeding(previous);
    }
    let gate = builder.build();
    if gate.skills().is_some() {
        // MCP clients get skills through the skills extension; `read_skill`
        // stays callable (code mode's programs read skills with it).
        withheld.push(toolgate::skills::READ_SKILL.to_owned());
    }
    Ok((gate, withheld))
}

/// The skills a spec file's `skills:` section names, as its source read them.
pub(crate) fn spec_skills(source: &SpecSource) -> Arc<Skills> {
    Arc::new(Skills::new(source.skills.clone()))
}

/// `builder` offering `skills` (and `read_skill`) when there are any.
fn with_skills(
    builder: toolgate::GateBuilder,
    skills: Option<&Arc<Skills>>,
) -> toolgate::GateBuilder {
    match skills {
        Some(skills) if !skills.is_empty() => builder.skills(skills.clone()),
        _ => builder,
    }
}

/// What a command ends with: its exit code, or the message that says why it failed.
pub type CommandResult = Result<ExitCode, String>;

/// The value of `--max-argument-bytes`: a byte count the spec file's
/// `limits.max_argument_bytes` could hold.
pub(crate) fn parse_max_argument_bytes(text: &str) -> Result<u64, String> {
    let bytes: u64 = text.trim().parse().map_err(|_| {
        format!("`{text}` is not a number of bytes; write one such as `65536` (64 KiB)")
    })?;
    toolgate::spec::check_max_argument_bytes(bytes)
        .map_err(|(problem, help)| format!("{problem}; {help}"))?;
    Ok(bytes)
}

/// `access` that also takes the credentials the spec's `auth:` declares: its
/// API keys and OAuth access tokens.
pub(crate) fn with_spec_auth(
    access: HttpAccess,
    spec: &SpecFile,
    spec_args: &SpecArgs,
    state: &StateArgs,
) -> Result<HttpAccess, String> {
    let access = match &spec.auth.api_keys {
        None => access,
        Some(_) => {
            let dir = resolve_state_dir(state.state_dir.as_deref(), &spec_args.file);
            let path = key_file_path(spec, &spec_args.file, &dir);
            access.with_keys(ApiKeys::open(&path).map_err(|e| e.to_string())?)
        }
    };
    match &spec.auth.oauth {
        None => Ok(access),
        Some(section) => {
            let base = spec_args
                .file
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let principals = spec
                .principals
                .iter()
                .map(|(id, p)| (id.clone(), p.clone()));
            let oauth = OAuth::new(section, principals, base)
                .and_then(|oauth| oauth.with_network(&spec.network))
                .map_err(|e| e.to_string())?;
            Ok(access.with_oauth(oauth))
        }
    }
}

/// Where the SQLite store of the spec file lives.
pub(crate) fn db_path(args: &SpecArgs, state: &StateArgs) -> PathBuf {
    resolve_state_dir(state.state_dir.as_deref(), &args.file).join(STATE_DB_FILE)
}

/// The store holding the audit log, or `None` when there is no state file yet.
pub(crate) fn open_existing_store(
    args: &SpecArgs,
    state: &StateArgs,
) -> Result<Option<Arc<dyn ServedStore>>, String> {
    let choice = store_choice(args, state)?;
    if choice.is_shared() {
        return open_chosen(&choice, args, state).map(Some);
    }
    let path = db_path(args, state);
    // A link in its place is the store's to refuse, dangling or not.
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    SqliteStore::open(&path)
        .map(|store| Some(Arc::new(store) as Arc<dyn ServedStore>))
        .map_err(|e| e.to_string())
}
