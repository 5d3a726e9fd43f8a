//! The notes of an import: each tool's own, and the mechanical rewrites counted
//! across the whole import so that one rewrite made a thousand times is one note.

use indexmap::IndexMap;

use crate::wire::Note;

/// Notes for one tool. Mechanical rewrites (a type's spelling, `nullable`,
/// `optional`) go to the import-wide [`Rewrites`] instead.
pub(super) struct Sink<'n> {
    tool: &'n str,
    notes: Vec<Note>,
    rewrites: &'n mut Rewrites,
}

impl<'n> Sink<'n> {
    pub(super) fn new(tool: &'n str, rewrites: &'n mut Rewrites) -> Self {
        Sink {
            tool,
            notes: Vec::new(),
            rewrites,
        }
    }

    pub(super) fn at(&mut self, path: &str, message: String) {
        self.notes.push(Note::at(self.tool, path, message));
    }

    pub(super) fn group(&mut self, path: &str, message: String) {
        self.rewrites.count(self.tool, path, message);
    }

    pub(super) fn finish(self) -> Vec<Note> {
        self.notes
    }
}

/// Mechanical rewrites counted across the whole import, so `dict` written
/// `object` in a thousand tools is one note, not a thousand.
#[derive(Default)]
pub(super) struct Rewrites(IndexMap<String, Rewrite>);

/// Where a rewrite was first made, and how often.
struct Rewrite {
    tool: String,
    path: String,
    places: usize,
    tools: usize,
    last_tool: String,
}

impl Rewrites {
    fn count(&mut self, tool: &str, path: &str, message: String) {
        let rewrite = self.0.entry(message).or_insert_with(|| Rewrite {
            tool: tool.to_owned(),
            path: path.to_owned(),
            places: 0,
            tools: 0,
            last_tool: String::new(),
        });
        rewrite.places += 1;
        if rewrite.last_tool != tool {
            rewrite.tools += 1;
            rewrite.last_tool = tool.to_owned();
        }
    }

    /// A note per rewrite: on the tool when one tool had it, else for the request.
    pub(super) fn notes(self) -> impl Iterator<Item = Note> {
        self.0
            .into_iter()
            .map(|(message, r)| match (r.tools, r.places) {
                (1, 1) => Note::at(&r.tool, r.path, message),
                (1, places) => Note::at(&r.tool, r.path, format!("{message} ({places} places)")),
                (tools, places) => Note::request(format!(
                    "{message}: {places} places in {tools} tools, the first in `{}` at {}",
                    r.tool, r.path
                )),
            })
    }
}
