//! The sound part of a spec file with structural problems, so that the semantic
//! checks still run on everything a structural mistake leaves intact: one misspelt
//! key hides no duplicate name, placeholder or bad duration elsewhere in its tool.
//!
//! Each offending value is cut out of its tool (an unknown key, a value of the
//! wrong type, a mapping that lacks a required key); what remains is checked. A
//! tool key that had to be cut is *unsound*, and the checks that would read its
//! absence as a fact (a mock's default response, a name) are skipped for it.

use std::collections::BTreeSet;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::diagnostic::Diagnostic;
use super::document::Document;
use super::model::{SpecFile, ToolSpec};

/// A salvaged tool: where it stands in the file, and which of its keys were cut.
#[derive(Debug, Clone, Default)]
pub(super) struct Placed {
    /// Its index under `/tools`.
    pub index: usize,
    /// Its keys that held a structural problem (`name`, `http`, ...), whose values
    /// the checks did not see.
    pub unsound: BTreeSet<String>,
}

impl Placed {
    /// A tool without structural problems.
    pub(crate) fn sound(index: usize) -> Self {
        Placed {
            index,
            unsound: BTreeSet::new(),
        }
    }

    /// Whether `key` of the tool held a structural problem.
    pub(crate) fn is_unsound(&self, key: &str) -> bool {
        self.unsound.contains(key)
    }
}

/// What the semantic checks may look at in a file with structural problems.
pub(super) struct Salvaged {
    /// The sound sections and the salvaged tools.
    pub spec: SpecFile,
    /// `spec.tools[k]` is the tool at `/tools/{placed[k].index}`.
    pub placed: Vec<Placed>,
    /// Whether `state:` is sound; when not, every check of state keys is skipped.
    pub state_sound: bool,
}

/// The parts of `doc` that the structural problems leave checkable; `None` when the
/// file as a whole is unsound (not a mapping, or `tools:` not a list).
pub(super) fn salvage(doc: &Document, structural: &[Diagnostic]) -> Option<Salvaged> {
    let touches = |at: &str| structural.iter().any(|d| under(&d.path, at));
    if structural.iter().any(|d| d.path.is_empty()) || !doc.value.is_object() {
        return None;
    }
    let mut spec = SpecFile::default();
    let mut placed = Vec::new();
    let mut every_tool = true;
    if structural.iter().any(|d| d.path == "/tools") {
        every_tool = false;
    } else {
        let all = doc.value.get("tools").and_then(Value::as_array);
        for (i, tool) in all.into_iter().flatten().enumerate() {
            let at = format!("/tools/{i}");
            let problems: Vec<&str> = structural
                .iter()
                .filter(|d| under(&d.path, &at))
                .map(|d| &d.path[at.len()..])
                .collect();
            match salvage_tool(tool, &problems) {
                Some((tool, unsound)) => {
                    every_tool &= !unsound.contains("name");
                    spec.tools.push(tool);
                    placed.push(Placed { index: i, unsound });
                }
                None => every_tool = false,
            }
        }
    }
    let section = |key: &str| (!touches(&format!("/{key}"))).then(|| doc.value.get(key));
    fn read<T: DeserializeOwned + Default>(value: Option<Option<&Value>>) -> Option<T> {
        match value? {
            Some(v) => serde_json::from_value(v.clone()).ok(),
            None => Some(T::default()),
        }
    }
    let state = read(section("state"));
    let state_sound = state.is_some();
    spec.state = state.unwrap_or_default();
    spec.network = read(section("network")).unwrap_or_default();
    spec.limits = read(section("limits")).unwrap_or_default();
    spec.hosted = read(section("hosted")).unwrap_or_default();
    spec.policy = read(section("policy")).unwrap_or_default();
    spec.principals = read(section("principals")).unwrap_or_default();
    spec.mcp_servers = read(section("mcp_servers")).unwrap_or_default();
    spec.skills = read(section("skills")).unwrap_or_default();
    // A flow names tools and state keys: checked only when all of them are known.
    if every_tool && state_sound {
        spec.flow = read::<Option<crate::flow::Flow>>(section("flow")).flatten();
        spec.tests = read(section("tests")).unwrap_or_default();
    }
    Some(Salvaged {
        spec,
        placed,
        state_sound,
    })
}

/// Whether the pointer `path` is `at` or inside it.
fn under(path: &str, at: &str) -> bool {
    path.strip_prefix(at)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The tool with every offending value cut out (pointers relative to the tool), and
/// the tool keys that were unsound; `None` when nothing checkable remains.
fn salvage_tool(tool: &Value, problems: &[&str]) -> Option<(ToolSpec, BTreeSet<String>)> {
    let mut value = tool.clone();
    value.as_object()?;
    let mut unsound = BTreeSet::new();
    for pointer in problems {
        if pointer.is_empty() {
            // The tool itself lacks a required key: filled in below.
            continue;
        }
        let cut = cut_point(&value, pointer);
        if let Some(top) = top_key(&cut)
            && cut.matches('/').count() == 1
        {
            unsound.insert(top);
        }
        remove(&mut value, &cut);
    }
    fill_required(&mut value, &mut unsound);
    if let Ok(spec) = serde_json::from_value::<ToolSpec>(value) {
        return Some((spec, unsound));
    }
    // A problem the pointers did not isolate: cut every key that holds one.
    let mut value = tool.clone();
    for top in problems.iter().filter_map(|p| top_key(p)) {
        if let Some(map) = value.as_object_mut() {
            map.remove(&top);
        }
        unsound.insert(top);
    }
    fill_required(&mut value, &mut unsound);
    serde_json::from_value::<ToolSpec>(value)
        .ok()
        .map(|spec| (spec, unsound))
}

/// A tool's required keys, when missing or unusable, as empty strings marked unsound
/// (each is already reported).
fn fill_required(value: &mut Value, unsound: &mut BTreeSet<String>) {
    let Some(map) = value.as_object_mut() else {
        return;
    };
    for key in ["name", "description"] {
        if !map.get(key).is_some_and(Value::is_string) {
            map.insert(key.into(), Value::String(String::new()));
            unsound.insert(key.into());
        }
    }
}

/// Where to cut for a problem at `pointer`: the pointer itself, or the nearest
/// mapping entry above it (cutting a list item would shift the positions of the
/// items after it, which later checks use to point into the text).
fn cut_point(value: &Value, pointer: &str) -> String {
    let mut at = pointer.to_owned();
    loop {
        let Some((parent, _)) = at.rsplit_once('/') else {
            return at;
        };
        let parent_is_list = value.pointer(parent).is_some_and(Value::is_array);
        if !parent_is_list || parent.is_empty() {
            return at;
        }
        at = parent.to_owned();
    }
}

/// The first key of a pointer relative to a tool, unescaped.
fn top_key(pointer: &str) -> Option<String> {
    let first = pointer.strip_prefix('/')?.split('/').next()?;
    Some(first.replace("~1", "/").replace("~0", "~"))
}

/// Removes the mapping entry at `pointer`, if there is one.
fn remove(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    if let Some(map) = value.pointer_mut(parent).and_then(Value::as_object_mut) {
        map.remove(&key);
    }
}
