//! `render`, `parse` and `import`: the wire layer on the command line.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::skills::Skills;
use toolgate::spec::{SpecFile, SpecSource};
use toolgate::wire::{self, CallReader, Note, RenderOptions, Rendered, Target};
use toolgate::{Catalog, ToolDescriptor};

use crate::SpecArgs;
use crate::context::CommandResult;
use crate::context::load;
use crate::output::print_json;

/// The descriptors a spec file declares, in file order, then the tools of its MCP
/// servers that a model may be shown.
pub fn descriptors(spec: &SpecFile, file: &Path) -> Result<Vec<ToolDescriptor>, String> {
    offered(spec, file, None)
}

/// [`descriptors`], the skills of the MCP servers listed into `skills` on the
/// way (beside the spec's own already there).
pub fn offered(
    spec: &SpecFile,
    file: &Path,
    skills: Option<Arc<Skills>>,
) -> Result<Vec<ToolDescriptor>, String> {
    let catalog = toolgate::spec::spec_catalog(spec, &file.display().to_string(), &Catalog::new())
        .map_err(|e| e.to_string())?;
    let mut tools: Vec<ToolDescriptor> = catalog
        .iter()
        .map(|tool| tool.descriptor().clone())
        .collect();
    tools.extend(crate::upstreams::Upstream::listing(spec, file, skills)?.offered());
    Ok(tools)
}

/// Every skill `source` offers: its spec's own, and its MCP servers'.
pub fn all_skills(spec: &SpecFile, source: &SpecSource) -> Result<Arc<Skills>, String> {
    let skills = crate::context::spec_skills(source);
    if !spec.mcp_servers.is_empty() {
        crate::upstreams::Upstream::listing(spec, &source.path, Some(skills.clone()))?;
    }
    Ok(skills)
}

/// The spec's tools and its MCP servers', with `read_skill` over every skill
/// when `skills` (an error when there are none).
fn tools_for(
    spec: &SpecFile,
    source: &SpecSource,
    skills: bool,
) -> Result<Vec<ToolDescriptor>, String> {
    if !skills {
        return descriptors(spec, &source.path);
    }
    let catalog = crate::context::spec_skills(source);
    let mut tools = offered(spec, &source.path, Some(catalog.clone()))?;
    if catalog.offered(&toolgate::Principal::operator()).is_empty() {
        return Err(format!(
            "{} offers no skills; --skills offers those its `skills:` section names (e.g. `skills: {{dir: ./skills}}`) and its MCP servers'",
            source.path.display()
        ));
    }
    tools.push(catalog.read_skill_descriptor());
    Ok(tools)
}

fn rendered(
    args: &SpecArgs,
    target: Target,
    options: RenderOptions,
    skills: bool,
) -> Result<Rendered, String> {
    let (spec, source) = load(args)?;
    let tools = tools_for(&spec, &source, skills)?;
    Ok(wire::render(target, &tools, &spec.hosted, options))
}

/// The spec file's tools with only the always-loaded ones (`always_loaded: true`,
/// plus `also_loaded`) up front and the rest behind tool search.
fn rendered_deferred(
    args: &SpecArgs,
    target: Target,
    options: RenderOptions,
    also_loaded: &[String],
    skills: bool,
) -> Result<Rendered, String> {
    let (spec, source) = load(args)?;
    let tools = tools_for(&spec, &source, skills)?;
    for name in also_loaded {
        if !tools.iter().any(|t| &t.name == name) {
            let hint = toolgate::tool::closest_names(name, tools.iter().map(|t| t.name.as_str()))
                .into_iter()
                .next()
                .map(|h| format!("; did you mean `{h}`?"))
                .unwrap_or_default();
            return Err(format!("--always-loaded: no tool is named `{name}`{hint}"));
        }
    }
    let mut defer = wire::DeferSet::from_spec(&spec);
    defer.load(also_loaded.iter().cloned());
    // Skills load progressively already: their reader stays up front.
    if skills {
        defer.load([toolgate::skills::READ_SKILL.to_owned()]);
    }
    Ok(wire::render_deferred(
        target,
        &tools,
        &spec.hosted,
        options,
        &defer,
    ))
}

/// `render`; with `defer`, only the always-loaded tools (and those named) are loaded
/// up front.
pub fn render(
    args: &SpecArgs,
    target: Target,
    options: RenderOptions,
    explain: bool,
    defer: Option<&[String]>,
    skills: bool,
) -> CommandResult {
    let rendered = match defer {
        Some(also_loaded) => rendered_deferred(args, target, options, also_loaded, skills)?,
        None => rendered(args, target, options, skills)?,
    };
    if explain {
        say!("{}", explain_notes(&rendered));
    } else {
        print_json(&json!({ "tools": rendered.tools }));
    }
    for problem in &rendered.problems {
        tellln!("error: {}", note_line(problem));
    }
    Ok(if rendered.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Changes and problems, grouped by tool, for `render --explain`.
fn explain_notes(rendered: &Rendered) -> String {
    let mut out = String::new();
    let mut groups: Vec<(Option<&str>, Vec<String>)> = Vec::new();
    for (kind, note) in rendered
        .changes
        .iter()
        .map(|n| ("changed", n))
        .chain(rendered.problems.iter().map(|n| ("problem", n)))
    {
        let key = note.tool.as_deref();
        let line = if note.path.is_empty() {
            format!("  {kind}: {}", note.message)
        } else {
            format!("  {kind}: at {}: {}", note.path, note.message)
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, lines)) => lines.push(line),
            None => groups.push((key, vec![line])),
        }
    }
    if groups.is_empty() {
        out.push_str(&format!(
            "{}: every tool renders as declared\n",
            rendered.target
        ));
    }
    for (tool, lines) in groups {
        out.push_str(&format!("{}\n", tool.unwrap_or("(request)")));
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

fn note_line(note: &Note) -> String {
    match (&note.tool, note.path.is_empty()) {
        (Some(tool), true) => format!("{tool}: {}", note.message),
        (Some(tool), false) => format!("{tool}: at {}: {}", note.path, note.message),
        (None, _) => note.message.clone(),
    }
}

pub fn parse(
    args: &SpecArgs,
    target: Target,
    options: RenderOptions,
    input: &str,
    stream: bool,
    defer: Option<&[String]>,
    skills: bool,
) -> CommandResult {
    let text = read_input(input)?;
    // Read with the names of the render that made the request.
    let reader: CallReader = match defer {
        Some(also_loaded) => rendered_deferred(args, target, options, also_loaded, skills)?.reader,
        None => rendered(args, target, options, skills)?.reader,
    };
    let calls = if stream {
        let mut parser = wire::stream_parser(target);
        for event in stream_events(&text)? {
            parser.feed(&event).map_err(|e| e.to_string())?;
        }
        parser.finish(&reader)
    } else {
        let response: Value =
            serde_json::from_str(&text).map_err(|e| format!("the response is not JSON: {e}"))?;
        wire::parse_response(target, &response, &reader).map_err(|e| e.to_string())?
    };
    print_json(&calls);
    Ok(ExitCode::SUCCESS)
}

/// The events of a stream: server-sent events (any line endings), a JSON array, or
/// JSON Lines. An SSE event's data may hold several JSON values; each is an event.
fn stream_events(text: &str) -> Result<Vec<Value>, String> {
    let parse = |line: &str, n: usize| {
        serde_json::from_str::<Value>(line).map_err(|e| format!("event {n} is not JSON: {e}"))
    };
    if wire::is_sse(text) {
        let mut events = Vec::new();
        for (n, event) in wire::sse_events(text).into_iter().enumerate() {
            let data = event.data.trim();
            if data.is_empty() || data == "[DONE]" {
                continue;
            }
            for value in serde_json::Deserializer::from_str(data).into_iter::<Value>() {
                events.push(value.map_err(|e| format!("event {} is not JSON: {e}", n + 1))?);
            }
        }
        return Ok(events);
    }
    if let Ok(Value::Array(events)) = serde_json::from_str::<Value>(text) {
        return Ok(events);
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(n, l)| parse(l, n + 1))
        .collect()
}

fn read_input(input: &str) -> Result<String, String> {
    if input == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        Ok(text)
    } else {
        toolgate::files::read_regular_file(Path::new(input)).map_err(|e| match e {
            toolgate::files::OpenFileError::NotAFile { .. } => format!(
                "cannot read {input}: {e}; to read from a pipe, give `-` and send the text on standard input"
            ),
            e => format!("cannot read {input}: {e}"),
        })
    }
}

/// What `import --from` reads: an OpenAPI description, or a tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFrom {
    OpenApi,
    Tools(wire::ImportFormat),
}

impl std::str::FromStr for ImportFrom {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "openapi" {
            return Ok(ImportFrom::OpenApi);
        }
        s.parse().map(ImportFrom::Tools).map_err(|_| {
            format!(
                "unknown import format `{s}`: expected one of openapi, openai-chat, openai-responses, anthropic, gemini, mcp, bfcl"
            )
        })
    }
}

pub fn import(
    from: ImportFrom,
    input: &str,
    openapi: &crate::openapi_commands::OpenApiArgs,
) -> CommandResult {
    let from = match from {
        ImportFrom::OpenApi => return crate::openapi_commands::import(input, openapi),
        ImportFrom::Tools(_) if openapi.any() => {
            return Err(
                "--tags, --include, --exclude, --server, --effects, --include-deprecated and --output are for `--from openapi`".into(),
            );
        }
        ImportFrom::Tools(from) => from,
    };
    let text = read_input(input)?;
    let imported = wire::import_tools(from, &text).map_err(|e| e.to_string())?;
    for note in &imported.notes {
        tellln!("note: {}", note_line(note));
    }
    let spec = SpecFile {
        tools: imported.tools,
        ..SpecFile::default()
    };
    let yaml = serde_saphyr::to_string(&spec).map_err(|e| format!("cannot write YAML: {e}"))?;
    say!("{yaml}");
    Ok(ExitCode::SUCCESS)
}
