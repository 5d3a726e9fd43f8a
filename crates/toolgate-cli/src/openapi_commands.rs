//! `toolgate import --from openapi`: an HTTP API's OpenAPI description written as a
//! spec file of HTTP-bound tools, with a summary of what was imported, left out and
//! noted.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use toolgate::rest_import::{
    MAX_DOCUMENT_BYTES, OperationPattern, RestImportError, RestImportOptions, RestImported,
    Sources, import_openapi, parse_effects,
};
use toolgate::spec::{AllowEntry, NetworkSection};
use toolgate::{http::FetchError, http::FetchLimits, http::fetch_document};

use crate::context::CommandResult;

/// Options of an OpenAPI import.
#[derive(clap::Args, Clone, Default)]
pub struct OpenApiArgs {
    /// Import only operations with one of these tags (comma-separated).
    #[arg(long, value_name = "TAGS", value_delimiter = ',')]
    tags: Vec<String>,
    /// Import only operations whose id or path matches one of these globs (`repos/*`, `/pets/*`).
    #[arg(long, value_name = "GLOB")]
    include: Vec<OperationPattern>,
    /// Leave out operations whose id or path matches one of these globs (`DELETE /admin/*`).
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<OperationPattern>,
    /// The server: a URL, or the index of a server the description lists (default: its first).
    #[arg(long, value_name = "URL|INDEX")]
    server: Option<String>,
    /// A YAML or JSON file mapping operation globs to effects (`'repos/delete*': destructive`).
    #[arg(long, value_name = "FILE")]
    effects: Option<PathBuf>,
    /// Import deprecated operations too.
    #[arg(long)]
    include_deprecated: bool,
    /// Write the spec file here instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// A host, address or CIDR range that is not public (`127.0.0.1:8443`,
    /// `api.internal`), as a spec file's `network.allow` entry (repeatable): the
    /// description may be fetched from it, and a server of the description it covers
    /// is written to `network.allow`. Without it such a server is left out, with a
    /// warning.
    #[arg(long = "allow", value_name = "HOST[:PORT]")]
    allow: Vec<String>,
}

impl OpenApiArgs {
    /// Whether any OpenAPI-only option was given (they mean nothing for tool lists).
    pub fn any(&self) -> bool {
        !self.tags.is_empty()
            || !self.include.is_empty()
            || !self.exclude.is_empty()
            || self.server.is_some()
            || self.effects.is_some()
            || self.include_deprecated
            || self.output.is_some()
            || !self.allow.is_empty()
    }
}

/// The description's files, read from the directory that holds it.
struct Directory {
    dir: PathBuf,
    root: String,
}

impl Sources for Directory {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "-" && self.root == "-" {
            let mut text = String::new();
            std::io::stdin()
                .take(MAX_DOCUMENT_BYTES as u64 + 1)
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
            return Ok(text);
        }
        let full = self.dir.join(path);
        let size = std::fs::metadata(&full).map_err(|e| e.to_string())?.len();
        if size > MAX_DOCUMENT_BYTES as u64 {
            return Err(format!(
                "it is {size} bytes, more than the {MAX_DOCUMENT_BYTES} read"
            ));
        }
        toolgate::files::read_regular_file(&full).map_err(|e| e.to_string())
    }
}

/// The description's files, fetched by URL under the network policy of HTTP
/// bindings: public addresses, and what `--allow` lists.
struct Remote {
    runtime: tokio::runtime::Runtime,
    network: NetworkSection,
    limits: FetchLimits,
}

impl Sources for Remote {
    fn read(&self, url: &str) -> Result<String, String> {
        let fetched = self
            .runtime
            .block_on(fetch_document(&self.network, url, &self.limits));
        match fetched {
            Ok(fetched) => Ok(fetched.text),
            Err(FetchError::Refused { reason, allow, .. }) => Err(format!(
                "{reason}, which is fetched only when allowed; pass `--allow {allow}` if it is meant"
            )),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn is_url(input: &str) -> bool {
    let lower = input.get(..8).unwrap_or(input).to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

pub fn import(input: &str, args: &OpenApiArgs) -> CommandResult {
    let effects = match &args.effects {
        Some(path) => {
            let text = toolgate::files::read_regular_file(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            parse_effects(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let options = RestImportOptions {
        tags: args.tags.clone(),
        include: args.include.clone(),
        exclude: args.exclude.clone(),
        server: args.server.clone(),
        effects,
        include_deprecated: args.include_deprecated,
        allow: args.allow.clone(),
    };
    for entry in &args.allow {
        AllowEntry::parse(entry).map_err(|e| format!("--allow {entry}: {e}"))?;
    }
    if is_url(input) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        let network = NetworkSection {
            allow: args.allow.clone(),
            allow_public: true,
        };
        let sources = Remote {
            runtime,
            network,
            limits: FetchLimits {
                max_bytes: MAX_DOCUMENT_BYTES as u64,
                ..FetchLimits::default()
            },
        };
        return write(input, args, import_openapi(input, &sources, &options));
    }
    let (dir, root) = if input == "-" {
        (PathBuf::from("."), "-".to_owned())
    } else {
        let path = Path::new(input);
        let root = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| format!("{input} names no file"))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        (dir, root)
    };
    let sources = Directory {
        dir,
        root: root.clone(),
    };
    write(input, args, import_openapi(&root, &sources, &options))
}

/// Writes the imported spec file, or the error, and the summary.
fn write(
    input: &str,
    args: &OpenApiArgs,
    imported: Result<RestImported, RestImportError>,
) -> CommandResult {
    let imported = imported.map_err(|e| e.to_string())?;
    let yaml =
        serde_saphyr::to_string(&imported.spec).map_err(|e| format!("cannot write YAML: {e}"))?;
    let header = format!(
        "# Tools imported from {input} ({}, {} {}) by `toolgate import --from openapi`.\n\
         # Each tool is one operation: edit effects, descriptions and policy as needed.\n",
        imported.version.as_str(),
        imported.title,
        imported.api_version
    );
    match &args.output {
        Some(path) => std::fs::write(path, format!("{header}{yaml}"))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => say!("{header}{yaml}"),
    }
    for line in imported.summary() {
        tellln!("{line}");
    }
    for warning in &imported.warnings {
        tellln!("warning: {warning}");
    }
    Ok(ExitCode::SUCCESS)
}
