//! `toolgate skills`: the skills a spec file offers — its own and its MCP
//! servers' — and one skill whole, as a principal sees them with `--as`.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Value, json};
use toolgate::skills::{SKILL_MD, Skill, SkillEntry, SkillOrigin, Skills};

use crate::context::{CommandResult, SpecArgs, load, principal};
use crate::output::print_json;

/// What `toolgate skills` does; without one, it lists the skills.
#[derive(Subcommand)]
pub enum SkillAction {
    /// One line per skill: name, where it comes from, its files, what it is for.
    List,
    /// One skill: its description, its files with their digests, and its instructions.
    Show {
        /// The skill's name, e.g. `refund-dispute`.
        name: String,
    },
}

/// Runs one `toolgate skills` action for `caller` (the operator by default).
pub fn run(args: &SpecArgs, caller: Option<&str>, action: Option<SkillAction>) -> CommandResult {
    let (spec, source) = load(args)?;
    let principal = principal(&spec, caller)?;
    let skills = crate::wire_commands::all_skills(&spec, &source)?;
    let seen: Vec<SkillEntry> = skills
        .entries()
        .iter()
        .filter(|e| principal.has_scope_for(&e.skill.name))
        .cloned()
        .collect();
    match action {
        None | Some(SkillAction::List) => list(args, &seen, skills.entries().len(), &principal.id),
        Some(SkillAction::Show { name }) => show(args, &skills, &principal, &name),
    }
}

fn list(args: &SpecArgs, seen: &[SkillEntry], all: usize, who: &str) -> CommandResult {
    if args.json {
        let rows: Vec<Value> = seen.iter().map(row).collect();
        print_json(&rows);
        return Ok(ExitCode::SUCCESS);
    }
    if seen.is_empty() && all > 0 {
        sayln!("{who} sees none of the {all} skill(s): its scopes admit none of their names");
        return Ok(ExitCode::SUCCESS);
    }
    if seen.is_empty() {
        sayln!(
            "no skills; name skill folders under `skills:` in {} (e.g. `skills: {{dir: ./skills}}`)",
            args.file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let width = seen.iter().map(|e| e.skill.name.len()).max().unwrap_or(0);
    for entry in seen {
        let skill = &entry.skill;
        let status = match &entry.quarantine {
            Some(reason) => format!("  QUARANTINED: {reason}"),
            None => String::new(),
        };
        sayln!(
            "{:width$}  {}  {} file{}, {} bytes  {}{status}",
            skill.name,
            origin(skill),
            skill.files.len(),
            if skill.files.len() == 1 { "" } else { "s" },
            skill.files.iter().map(|f| f.size).sum::<u64>(),
            crate::output::first_line(&skill.description, 80),
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(
    args: &SpecArgs,
    skills: &Skills,
    principal: &toolgate::Principal,
    name: &str,
) -> CommandResult {
    let entry = skills.find(principal, name).map_err(|e| e.to_string())?;
    let skill = &entry.skill;
    if args.json {
        let mut out = row(&entry);
        out["instructions"] = json!(skill.instructions);
        print_json(&out);
        return Ok(ExitCode::SUCCESS);
    }
    sayln!("{} ({})", skill.name, origin(skill));
    sayln!("{}", skill.description);
    sayln!("\nfiles:");
    for file in &skill.files {
        sayln!("  {}  {} bytes  {}", file.path, file.size, file.digest);
    }
    sayln!("\n{SKILL_MD}:\n{}", skill.body().trim());
    Ok(ExitCode::SUCCESS)
}

fn row(entry: &SkillEntry) -> Value {
    let skill = &entry.skill;
    json!({
        "name": skill.name,
        "description": skill.description,
        "origin": skill.origin,
        "files": skill.files,
        "quarantine": entry.quarantine,
    })
}

fn origin(skill: &Skill) -> String {
    match &skill.origin {
        SkillOrigin::Local { dir } => dir.clone(),
        SkillOrigin::Upstream { server, .. } => format!("from MCP server `{server}`"),
    }
}
