//! Reading the spec again while `toolgate serve` runs: on `SIGHUP`, and with
//! `--watch` when the spec file's content changes.
//!
//! A new spec without errors that changes only what a running server can take
//! on (tools, policy, principals, flows, limits, budgets, state) serves every
//! call from then on; calls in flight finish under the gate they started
//! with, and sessions, conversations, approvals, grants, tasks and paused
//! programs carry over, as do `once` and turns (the new gate succeeds the
//! old). Anything else changes nothing: the old spec keeps serving and the
//! reason goes to the log, `/readyz`, the console's Catalog and
//! `toolgate_spec_reloads_total`. Each
//! reload, taken or refused, is a `reload` record in the audit log, with the
//! file's SHA-256.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate::audit::{AuditEntry, RecordKind, sha256_hex};
use toolgate::mcp::client::Upstreams;
use toolgate::mcp::server::McpServer;
use toolgate::serve::SpecStatus;
use toolgate::spec::{SpecFile, SpecSource};
use toolgate::store::ServedStore;

use crate::context::{Searching, open_served_gate, principal};

/// How often `--watch` reads the spec file. Reading its content (not its
/// modification time) sees an editor's rename-on-save and a Kubernetes
/// ConfigMap's `..data` symlink swap alike.
pub(crate) const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The spec serving now, shared with whatever else rebuilds the gate (an
/// upstream server's tools changing). Each holds it while it builds and swaps
/// in a gate, so neither serves a gate of an older spec over the other's.
pub(crate) type CurrentSpec = Arc<tokio::sync::Mutex<Arc<SpecFile>>>;

/// What a reload needs to build and serve a new gate.
pub(crate) struct Reloader {
    pub(crate) path: PathBuf,
    /// The spec file's name as the gate shows it.
    pub(crate) file: String,
    /// `serve --as`.
    pub(crate) caller: Option<String>,
    /// `serve --max-argument-bytes`, which outranks the file's.
    pub(crate) max_argument_bytes: Option<u64>,
    pub(crate) spec: CurrentSpec,
    pub(crate) server: McpServer,
    pub(crate) store: Arc<dyn ServedStore>,
    pub(crate) upstreams: Option<Arc<Upstreams>>,
    pub(crate) search: Option<Searching>,
    /// The skills served: the spec's own are replaced by the reloaded spec's.
    pub(crate) skills: Arc<toolgate::skills::Skills>,
    /// The spec's own skills serving now.
    pub(crate) local_skills: Vec<toolgate::skills::LocalSkill>,
    /// Where the spec last read keeps its skills, and what `--watch` last saw
    /// of those folders.
    pub(crate) local_skills_section: Option<toolgate::spec::SkillsSection>,
    pub(crate) skills_seen: String,
    pub(crate) code_mode: bool,
    pub(crate) status: Arc<SpecStatus>,
    /// The web console, whose approvers come from the spec.
    pub(crate) console: Option<toolgate::console::Console>,
    /// The SHA-256 of the file's content last read, so `--watch` tries a
    /// changed file once rather than every second.
    pub(crate) seen: String,
}

/// What `--watch` compares of the skill folders of the spec at `path`.
pub(crate) fn skills_fingerprint(
    path: &std::path::Path,
    section: Option<&toolgate::spec::SkillsSection>,
) -> String {
    let base = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    section
        .map(|s| toolgate::skills::skills_fingerprint(s, base))
        .unwrap_or_default()
}

/// Why a reload changed nothing.
struct Refused {
    /// Said without names, for `/readyz`.
    reason: String,
    /// The whole story, for the log.
    detail: String,
}

impl Refused {
    fn plain(reason: String) -> Self {
        Refused {
            detail: reason.clone(),
            reason,
        }
    }
}

impl Reloader {
    /// Reloads on every `hangup` and, with `watch`, whenever the file changes,
    /// until the runtime stops.
    pub(crate) async fn run(mut self, mut hangup: tokio::signal::unix::Signal, watch: bool) {
        let mut tick = tokio::time::interval(WATCH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                heard = hangup.recv() => match heard {
                    Some(()) => self.reload("SIGHUP").await,
                    None => return,
                },
                _ = tick.tick(), if watch => {
                    if self.changed() {
                        self.reload("the file changed").await;
                    }
                }
            }
        }
    }

    /// Whether the file's content, or a skill folder it names, differs from
    /// what was last read.
    fn changed(&self) -> bool {
        std::fs::read(&self.path).is_ok_and(|bytes| sha256_hex(&bytes) != self.seen)
            || self.skills_seen
                != skills_fingerprint(&self.path, self.local_skills_section.as_ref())
    }

    /// Reads the file and serves it, or says why not; records either.
    async fn reload(&mut self, trigger: &str) {
        let source = SpecSource::read(&self.path);
        let sha256 = match &source {
            Ok(source) => sha256_hex(source.text.as_bytes()),
            Err(_) => String::new(),
        };
        self.seen = sha256.clone();
        self.local_skills_section = source
            .as_ref()
            .ok()
            .and_then(|s| s.checked.spec.as_ref()?.skills.clone());
        self.skills_seen = skills_fingerprint(&self.path, self.local_skills_section.as_ref());
        let outcome = match source {
            Ok(source) => self.serve(source).await,
            Err(e) => Err(Refused::plain(format!("cannot read the spec file: {e}"))),
        };
        let at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let reason = match &outcome {
            Ok(tools) => {
                tellln!(
                    "toolgate: reloaded {} ({trigger}): serving {tools} tool{}",
                    self.path.display(),
                    if *tools == 1 { "" } else { "s" }
                );
                format!("the spec was reloaded ({trigger}); {tools} tools served")
            }
            Err(refused) => {
                tellln!(
                    "warning: reloading {} ({trigger}) changed nothing, the old spec still serves: {}",
                    self.path.display(),
                    refused.detail
                );
                format!("the reload ({trigger}) was refused: {}", refused.reason)
            }
        };
        let refused = outcome.err().map(|r| r.reason);
        self.status.reloaded(at.clone(), &sha256, refused.clone());
        self.record(at, &sha256, refused.is_none(), reason).await;
    }

    /// Builds a gate for `source` and serves it; returns how many tools a new
    /// session is offered.
    async fn serve(&mut self, source: SpecSource) -> Result<usize, Refused> {
        let Some(mut spec) = source
            .checked
            .spec
            .clone()
            .filter(|_| source.checked.is_ok())
        else {
            let errors = source
                .checked
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .count()
                .max(1);
            return Err(Refused {
                reason: format!(
                    "{errors} error{} in the spec file",
                    if errors == 1 { "" } else { "s" }
                ),
                detail: source.render_diagnostics(),
            });
        };
        if self.max_argument_bytes.is_some() {
            spec.limits.max_argument_bytes = self.max_argument_bytes;
        }
        let mut serving = self.spec.clone().lock_owned().await;
        if let Some(section) = needs_restart(&serving, &spec, self.code_mode, self.search.is_some())
        {
            return Err(Refused::plain(format!(
                "`{section}` changed, which takes a restart"
            )));
        }
        let served = principal(&spec, self.caller.as_deref()).map_err(Refused::plain)?;
        // The new gate describes the reloaded spec's skills; a refused build
        // puts the serving ones back.
        let serving_skills = std::mem::replace(&mut self.local_skills, source.skills.clone());
        self.skills.set_local(self.local_skills.clone());
        let build = {
            let (spec, file) = (spec.clone(), self.file.clone());
            let (upstreams, store) = (self.upstreams.clone(), self.store.clone());
            let (search, previous) = (self.search.clone(), self.server.gate());
            let skills = self.skills.clone();
            move || {
                open_served_gate(
                    &spec,
                    &file,
                    upstreams.as_deref(),
                    &store,
                    search.as_ref(),
                    Some(&skills),
                    Some(&previous),
                )
            }
        };
        let (gate, withheld) = match crate::semantic_search::off_the_workers(build).await {
            Ok(built) => built,
            Err(e) => {
                self.skills.set_local(serving_skills.clone());
                self.local_skills = serving_skills;
                return Err(Refused::plain(format!(
                    "the new catalog cannot be served: {e}"
                )));
            }
        };
        let declared = spec
            .principals
            .iter()
            .map(|(id, declared)| declared.to_principal(id))
            .collect::<Vec<_>>();
        self.server
            .reload(Arc::new(gate), withheld, served, declared);
        if let Some(console) = &self.console {
            console.reload(&spec);
        }
        *serving = Arc::new(spec);
        Ok(self.server.tool_names().len())
    }

    /// Appends the reload's record to the audit log (on a blocking thread: a
    /// store may wait for its lock).
    async fn record(&self, at: String, sha256: &str, ok: bool, reason: String) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        let id = format!(
            "reload-{}-{}",
            std::process::id(),
            now.map_or(0, |d| d.as_millis())
        );
        let mut entry = AuditEntry::new(at, RecordKind::Reload, &id, &id, "", "operator", "");
        entry.arguments = json!({"file": self.path.display().to_string(), "sha256": sha256});
        entry.outcome = Some(if ok { "ok" } else { "refused" }.into());
        entry.reason = Some(reason);
        let store = self.store.clone();
        let appended = tokio::task::spawn_blocking(move || store.append(entry)).await;
        if let Ok(Err(e)) = appended {
            tellln!("warning: the reload could not be recorded in the audit log: {e}");
        }
    }
}

/// The first section of the spec a running server cannot take on that differs
/// between `serving` and `new`: who may connect (`auth`), the upstream servers
/// it is connected to, the store it writes, telemetry set up at start, and
/// code mode's and search's settings when the server offers them.
fn needs_restart(
    serving: &SpecFile,
    new: &SpecFile,
    code_mode: bool,
    search: bool,
) -> Option<&'static str> {
    [
        ("auth", serving.auth != new.auth),
        ("mcp_servers", serving.mcp_servers != new.mcp_servers),
        ("store", serving.store != new.store),
        ("telemetry", serving.telemetry != new.telemetry),
        ("code_mode", code_mode && serving.code_mode != new.code_mode),
        ("search", search && serving.search != new.search),
    ]
    .into_iter()
    .find_map(|(section, changed)| changed.then_some(section))
}
