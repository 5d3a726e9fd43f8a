//! Whole REST APIs as gated tools: an OpenAPI description (3.1, 3.0 or Swagger
//! 2.0, JSON or YAML) imported as spec tools, one per operation, each bound to its
//! HTTP request.
//!
//! Not to be confused with [`crate::wire`]'s `import` (other model APIs' tool
//! lists) or its `openapi` transform (JSON Schema written as Gemini's OpenAPI
//! subset): this module reads the description of an HTTP API.
//!
//! One step a file: `document` reads the text and the version, `refs` resolves
//! `$ref`s (local, and files beside the document through [`Sources`]), `operations`
//! (with `swagger2`) reads every operation into one model, `schema` makes each
//! schema self-contained JSON Schema 2020-12, `arguments` merges parameters and body
//! into one arguments schema, `tools` names and describes the tool, `select` filters
//! operations and assigns effects, and `summary` tells what was imported, left out
//! and noted.

mod arguments;
mod binding;
mod document;
mod operations;
mod refs;
mod request;
mod returns;
mod schema;
mod security;
mod select;
mod servers;
mod summary;
mod swagger2;
mod tools;

use std::collections::HashSet;

use serde_json::Value;

pub use document::{MAX_DOCUMENT_BYTES, OpenApiVersion};
pub use refs::Sources;
pub use select::{BadPattern, EffectsError, OperationPattern, parse_effects};

use crate::spec::{SpecFile, ToolSpec};
use crate::{Effect, ToolUsage};
use request::BodyChoice;
use schema::{Converter, Direction};

/// What to import and how.
#[derive(Debug, Clone, Default)]
pub struct RestImportOptions {
    /// Keep only operations with one of these tags.
    pub tags: Vec<String>,
    /// Keep only operations one of these patterns matches.
    pub include: Vec<OperationPattern>,
    /// Leave out operations one of these patterns matches.
    pub exclude: Vec<OperationPattern>,
    /// The server: an absolute URL, or the index of one the document lists.
    pub server: Option<String>,
    /// Effects by pattern (the last match wins), over the method's and the document's.
    pub effects: Vec<(OperationPattern, Effect)>,
    /// Import deprecated operations too.
    pub include_deprecated: bool,
    /// `network.allow` entries the operator passed (`--allow`): hosts that are not
    /// public which the imported tools may reach. Others the description names are
    /// left out of `network:`.
    pub allow: Vec<String>,
}

/// What a note is about, for the summary's grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NoteKind {
    /// A parameter or body field renamed: a collision, or a name a placeholder cannot spell.
    Argument,
    /// A tool name made unique.
    Name,
    /// A `$ref` that could not be followed.
    Reference,
    /// A recursive schema kept under `$defs`, or one cut for depth.
    Recursion,
    /// `readOnly`/`writeOnly` properties left out.
    ReadWrite,
    /// Return value schemas cut to their shape.
    Returns,
    /// Authentication read from the environment.
    Security,
    /// The server URL.
    Server,
    /// An effect that could not be read.
    Effect,
    /// A request or response shape toolgate sends or reads in part only.
    Binding,
}

impl NoteKind {
    /// The heading the summary groups these notes under.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::Argument => "arguments renamed",
            NoteKind::Name => "tool names made unique",
            NoteKind::Reference => "references not followed",
            NoteKind::Recursion => "recursive schemas",
            NoteKind::ReadWrite => "read-only and write-only fields",
            NoteKind::Returns => "return values",
            NoteKind::Security => "authentication",
            NoteKind::Server => "server",
            NoteKind::Effect => "effects",
            NoteKind::Binding => "requests",
        }
    }
}

/// Something the import changed, chose or could not do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestNote {
    /// What it is about.
    pub kind: NoteKind,
    /// The tool it concerns; `None` for the whole import.
    pub tool: Option<String>,
    /// What happened, in words for the operator.
    pub message: String,
}

/// An operation that was not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// `GET /pets/{id}` (and its operation id).
    pub operation: String,
    /// Why it was left out.
    pub reason: String,
}

/// The imported API.
#[derive(Debug, Clone)]
pub struct RestImported {
    /// The version the description is written in.
    pub version: OpenApiVersion,
    /// `info.title`.
    pub title: String,
    /// `info.version`, the API's own version.
    pub api_version: String,
    /// How many operations the document has.
    pub operations: usize,
    /// The spec file the import makes: one tool per operation imported.
    pub spec: SpecFile,
    /// The operations not imported, in document order.
    pub left_out: Vec<LeftOut>,
    /// What the import changed, chose or could not do.
    pub notes: Vec<RestNote>,
    /// What the operator should act on: hosts that are not public, named by the
    /// description and not allowed.
    pub warnings: Vec<String>,
}

/// A description that cannot be imported at all. (Operations that cannot be
/// imported are left out with a reason instead.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestImportError {
    /// A file (the description or one it refers to) could not be read.
    #[error("cannot read {file}: {message}")]
    Read {
        /// The file's path.
        file: String,
        /// Why, as the reader said.
        message: String,
    },
    /// The file is larger than [`MAX_DOCUMENT_BYTES`].
    #[error("{file} is {bytes} bytes, more than the {MAX_DOCUMENT_BYTES} read")]
    TooLarge {
        /// The file's path.
        file: String,
        /// Its size in bytes.
        bytes: usize,
    },
    /// The file parses as neither JSON nor YAML.
    #[error("{file} is not JSON or YAML: {message}")]
    Syntax {
        /// The file's path.
        file: String,
        /// The first line of the YAML parser's message.
        message: String,
    },
    /// The file parses, but is not an OpenAPI or Swagger document.
    #[error(
        "{file} is not an OpenAPI description: {why}; give an OpenAPI 3.x or Swagger 2.0 document"
    )]
    NotOpenApi {
        /// The file's path.
        file: String,
        /// What it lacks.
        why: String,
    },
    /// The document declares a version toolgate does not read.
    #[error(
        "{file} is written in OpenAPI {version}, which toolgate does not read; it reads 3.1, 3.0 and Swagger 2.0"
    )]
    Version {
        /// The file's path.
        file: String,
        /// The version it declares.
        version: String,
    },
    /// No usable server: `--server` names none the document lists, or the URL
    /// is not absolute http(s). The message says what to pass.
    #[error("{0}")]
    Server(String),
}

/// Imports the description at `root` (a path `sources` reads).
pub fn import_openapi(
    root: &str,
    sources: &dyn Sources,
    options: &RestImportOptions,
) -> Result<RestImported, RestImportError> {
    let text = sources
        .read(root)
        .map_err(|message| RestImportError::Read {
            file: root.to_owned(),
            message,
        })?;
    let document = document::parse(root, &text)?;
    drop(text);
    let version = document::version(root, &document)?;
    let info = |key: &str| {
        document
            .get("info")
            .and_then(|i| i.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (title, api_version) = (info("title"), info("version"));
    let server = servers::server_url(&document, version, options.server.as_deref())?;
    let schemes = match version {
        OpenApiVersion::Swagger2 => swagger2::security_schemes(&document),
        _ => document
            .pointer("/components/securitySchemes")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    };
    let requirements = document
        .get("security")
        .and_then(Value::as_array)
        .map(|alts| alts.iter().filter_map(Value::as_object).cloned().collect())
        .unwrap_or_default();
    let mut security = security::Security::new(schemes, requirements, &title);
    let mut resolver = refs::Resolver::new(sources, root, document.clone());
    let mut notes = Vec::new();
    let (operations, problems) = operations::operations(&mut resolver, version, &document);
    notes.extend(problems.into_iter().map(|message| RestNote {
        kind: NoteKind::Reference,
        tool: None,
        message,
    }));
    let mut tools = Vec::new();
    let mut left_out = Vec::new();
    let mut used = HashSet::new();
    let count = operations.len();
    let mut cut_returns = 0;
    for op in operations {
        let label = match &op.id {
            Some(id) => format!("{} ({id})", op.label()),
            None => op.label(),
        };
        if let Some(reason) = select::refusal(
            &op,
            &options.tags,
            &options.include,
            &options.exclude,
            options.include_deprecated,
        ) {
            left_out.push(LeftOut {
                operation: label,
                reason,
            });
            continue;
        }
        if op.method == "trace" {
            left_out.push(LeftOut {
                operation: label,
                reason: "TRACE is not a method HTTP bindings send".into(),
            });
            continue;
        }
        if let BodyChoice::Unsupported(types) = &op.body {
            left_out.push(LeftOut {
                operation: label,
                reason: format!(
                    "its request body is {}, which toolgate does not send (it sends JSON, form-urlencoded, multipart form fields and text)",
                    types.join(", ")
                ),
            });
            continue;
        }
        let base = tools::base_name(&op);
        let name = tools::unique_name(base.clone(), &mut used);
        let mut note = |kind: NoteKind, message: String| {
            notes.push(RestNote {
                kind,
                tool: Some(name.clone()),
                message,
            })
        };
        if name != base {
            note(
                NoteKind::Name,
                format!(
                    "another operation is named `{base}`: {} is `{name}`",
                    op.label()
                ),
            );
        }
        for problem in &op.problems {
            note(NoteKind::Reference, problem.clone());
        }
        let args = arguments::arguments(&mut resolver, version, &op);
        for message in &args.renames {
            note(NoteKind::Argument, message.clone());
        }
        let op_server = match (
            &options.server,
            op.servers.first().and_then(servers::filled),
        ) {
            (None, Some(own)) if own.starts_with("http://") || own.starts_with("https://") => {
                own.trim_end_matches('/').to_owned()
            }
            _ => server.clone(),
        };
        let auth = security.auth(op.security.as_deref());
        let (http, binding_notes) = binding::binding(&op, &args, &op_server, auth);
        for message in binding_notes {
            note(NoteKind::Binding, message);
        }
        schema_notes(&args.schema_notes, "arguments", &mut note);
        let returns = op.returns.as_ref().map(|(schema, base)| {
            let mut converter = Converter::new(&mut resolver, version, Direction::Output);
            let out = converter.convert(schema, base);
            converter.finish(out)
        });
        let returns = returns.map(|(mut schema, n)| {
            schema_notes(&n, "return value", &mut note);
            if returns::cut_returns(&mut schema) {
                cut_returns += 1;
            }
            schema
        });
        let mut effect = select::method_effect(op.method);
        match tools::extension_effect(op.effect_extension.as_ref()) {
            Ok(Some(e)) => effect = e,
            Ok(None) => {}
            Err(why) => note(
                NoteKind::Effect,
                format!("{why}: the effect is `{effect}`, from the method"),
            ),
        }
        if let Some((_, e)) = options.effects.iter().rev().find(|(p, _)| p.matches(&op)) {
            effect = *e;
        }
        tools.push(ToolSpec {
            name: name.clone(),
            title: None,
            description: tools::description(&op),
            parameters: Some(args.schema),
            returns,
            response: None,
            set_state: Default::default(),
            save_response_as: None,
            http: Some(http),
            mcp: None,
            background: false,
            scheduling: None,
            effect: Some(effect),
            usage: ToolUsage::default(),
            examples: Vec::new(),
            tags: op.tags.clone(),
            always_loaded: false,
            timeout: None,
            output: None,
            sends: false,
            cost: None,
            inject: Default::default(),
        });
    }
    if cut_returns > 0 {
        notes.push(RestNote {
            kind: NoteKind::Returns,
            tool: None,
            message: format!(
                "the return values of {cut_returns} tools keep {} level(s) of properties, deeper ones only their types: the model reads their shape (the whole response still reaches it)",
                returns::RETURNS_DEPTH
            ),
        });
    }
    for message in security.used.into_values() {
        notes.push(RestNote {
            kind: NoteKind::Security,
            tool: None,
            message,
        });
    }
    let urls: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.http.as_ref())
        .map(|h| h.url.as_str())
        .collect();
    let (network, server_notes, warnings) = servers::network_section(&server, &urls, options);
    notes.extend(server_notes);
    Ok(RestImported {
        version,
        title,
        api_version,
        operations: count,
        spec: SpecFile {
            tools,
            network,
            ..SpecFile::default()
        },
        left_out,
        notes,
        warnings,
    })
}

fn schema_notes(n: &schema::SchemaNotes, what: &str, note: &mut impl FnMut(NoteKind, String)) {
    for why in &n.broken {
        note(
            NoteKind::Reference,
            format!("in the {what}: {why}; that part accepts any value"),
        );
    }
    if !n.recursive.is_empty() {
        let names: Vec<String> = n.recursive.iter().map(|r| format!("`{r}`")).collect();
        note(
            NoteKind::Recursion,
            format!(
                "the {what} schema refers to itself through {}: kept under `$defs`",
                names.join(", ")
            ),
        );
    }
    if n.cut {
        note(
            NoteKind::Recursion,
            format!("the {what} schema nests too deep: cut there to any value"),
        );
    }
    if n.left_out > 0 {
        let (flag, why) = match what {
            "arguments" => ("readOnly", "the server sets them"),
            _ => ("writeOnly", "the server never returns them"),
        };
        note(
            NoteKind::ReadWrite,
            format!(
                "{} `{flag}` propert{} left out of the {what}: {why}",
                n.left_out,
                if n.left_out == 1 { "y" } else { "ies" }
            ),
        );
    }
}

#[cfg(test)]
mod tests;
