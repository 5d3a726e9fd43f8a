//! `toolgate audit anchor`, and the anchors `toolgate audit verify --anchor` holds the
//! log to: the log's head, copied to where whoever can rewrite the state directory
//! cannot, so that a log cut short, emptied or rewritten no longer verifies.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use serde_json::json;
use toolgate::{audit::Anchor, audit::VerifyReport};

use crate::context::CommandResult;
use crate::context::open_existing_store;
use crate::context::{SpecArgs, StateArgs};
use crate::output::print_json;

/// `toolgate audit anchor [--append FILE]`: prints the head as `SEQ:HASH`, and
/// appends it to `FILE` with the time it was taken.
pub fn anchor(args: &SpecArgs, state: &StateArgs, append: Option<&Path>) -> CommandResult {
    let report = match open_existing_store(args, state)? {
        Some(store) => store.verify().map_err(|e| e.to_string())?,
        None => toolgate::audit::verify_chain(Vec::<toolgate::audit::AuditRecord>::new()),
    };
    let anchor = match report {
        VerifyReport::Ok { records, head } => Anchor { seq: records, head },
        VerifyReport::Broken { at, .. } => {
            return Err(format!(
                "the audit log does not verify ({at}), so it gets no anchor: an anchor would vouch for a log that was altered; see `toolgate audit verify`"
            ));
        }
    };
    if let Some(file) = append {
        let taken = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        append_line(file, &anchor.to_line(&taken)).map_err(|e| {
            format!(
                "cannot append the anchor to {}: {e}; nothing was written there",
                file.display()
            )
        })?;
    }
    if args.json {
        print_json(&json!({"seq": anchor.seq, "head": anchor.head}));
    } else {
        sayln!("{anchor}");
    }
    if let Some(file) = append {
        tellln!(
            "appended to {}; keep that file where whoever can write the state directory cannot, and check with `toolgate audit verify --anchor {}`",
            file.display(),
            file.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Appends `line` to `file` (created readable by its owner only) and syncs it, so
/// the anchor is on disk when the command says so.
fn append_line(file: &Path, line: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut out = options.open(file)?;
    out.write_all(line.as_bytes())?;
    out.sync_all()
}

/// The anchors named by `--anchor`: each value is an anchor (`SEQ:HASH`) or a file
/// of them, one a line, as `toolgate audit anchor --append` writes.
pub fn read_anchors(values: &[String]) -> Result<Vec<Anchor>, String> {
    let mut anchors = Vec::new();
    for value in values {
        let path = Path::new(value);
        if path.is_file() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the anchor file {value}: {e}"))?;
            let found = Anchor::parse_file(&text).map_err(|e| format!("{value}: {e}"))?;
            if found.is_empty() {
                return Err(format!(
                    "the anchor file {value} holds no anchors; `toolgate audit anchor --append {value}` adds one"
                ));
            }
            anchors.extend(found);
            continue;
        }
        match value.parse::<Anchor>() {
            Ok(anchor) => anchors.push(anchor),
            Err(e) if value.contains(':') => return Err(e.to_string()),
            Err(_) => {
                return Err(format!(
                    "`{value}` is neither a file nor an anchor: pass the file `toolgate audit anchor --append FILE` writes, or the SEQ:HASH it prints"
                ));
            }
        }
    }
    Ok(anchors)
}

/// What `verify` adds to its verdict on an intact log checked against anchors.
pub fn held_line(anchors: &[Anchor]) -> Option<String> {
    let latest = anchors.iter().map(|a| a.seq).max()?;
    let n = anchors.len();
    Some(format!(
        "it holds {n} anchor{}, the latest at record {latest}",
        if n == 1 { "" } else { "s" }
    ))
}
