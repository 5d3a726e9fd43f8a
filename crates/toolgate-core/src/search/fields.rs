//! The fields a tool is searched by, what text each holds, and how much each counts.

use serde::Serialize;
use serde_json::Value;

use super::tokenize::for_each_term_and_pair;
use crate::ToolDescriptor;

/// A part of a tool's descriptor that search reads.
///
/// `usage.when_not_to` is no field: it says when the tool is the *wrong* choice,
/// so words in it must never make the tool match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// The name, split into words (`github.create_issue` is `github create issue`).
    Name,
    /// The human title.
    Title,
    /// The description.
    Description,
    /// Usage guidance: `when_to_use` and `example`.
    Usage,
    /// Free-form labels.
    Tags,
    /// Parameter names, nested ones included, split into words.
    ParamNames,
    /// Parameter descriptions, titles and enumerated string values.
    ParamText,
}

/// How many fields there are.
pub const FIELD_COUNT: usize = 7;

impl Field {
    /// Every field, in the order [`FieldWeights`]' arrays are indexed by.
    pub const ALL: [Field; FIELD_COUNT] = [
        Field::Name,
        Field::Title,
        Field::Description,
        Field::Usage,
        Field::Tags,
        Field::ParamNames,
        Field::ParamText,
    ];

    /// The field's name, for explaining a match.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Title => "title",
            Field::Description => "description",
            Field::Usage => "usage",
            Field::Tags => "tags",
            Field::ParamNames => "param_names",
            Field::ParamText => "param_text",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// BM25F's parameters: a weight and a length normalization per field, the
/// term-frequency saturation `k1` shared by all, and what a pair of neighbouring
/// terms counts for.
///
/// The defaults follow the reasoning below, and were checked against the BFCL
/// development set as a whole (`toolgate eval search`), never query by query:
///
/// - **Name 3.0.** A tool's name is its shortest, most deliberate summary; a query
///   word found there is the strongest evidence. Not higher, because names are
///   terse (`math.hypot`) and the description must still be able to win.
/// - **Title 2.0, tags 2.0.** Short, written for people choosing a tool.
/// - **Description 1.0.** The reference every other weight is relative to.
/// - **Usage 1.0.** Guidance is description written for a planner.
/// - **Parameter names 1.0.** They say what a tool works on (`city`, `order_id`),
///   and questions name those things.
/// - **Parameter text 0.5.** Parameter descriptions repeat generic words
///   ("value", "number of", "default") across thousands of tools; half weight lets
///   them break ties without outvoting the description.
/// - **b 1.0** (full length normalization) for the name, title, description and
///   parameters: every word of a name is topic, so matching two of two words is a
///   closer fit than two of five; and a long description or parameter list mentions
///   more words by chance. **0.75** (BM25's usual value) for usage guidance, prose
///   of mixed relevance; **0.5** for tags, a list whose length says little.
/// - **k1 1.2**, BM25's usual saturation: a word's fourth repeat adds little.
/// - **Pairs 0.25.** A pair of neighbouring terms is rare, so its idf is high; at a
///   quarter of it a shared phrase decides between tools that share the same
///   words, without outweighing a word only one of them has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeights {
    /// Per field, in [`Field::ALL`] order.
    pub weight: [f32; FIELD_COUNT],
    /// Per field length normalization, 0 (none) to 1 (full).
    pub b: [f32; FIELD_COUNT],
    /// BM25's term-frequency saturation: how little each repeat of a word adds.
    pub k1: f32,
    /// The share of its idf a matched pair of neighbouring terms scores; 0 ignores pairs.
    pub pair: f32,
}

impl Default for FieldWeights {
    fn default() -> Self {
        FieldWeights {
            weight: [3.0, 2.0, 1.0, 1.0, 2.0, 1.0, 0.5],
            b: [1.0, 1.0, 1.0, 0.75, 0.5, 1.0, 1.0],
            k1: 1.2,
            pair: 0.25,
        }
    }
}

impl FieldWeights {
    /// The weight of `field`.
    pub fn of(&self, field: Field) -> f32 {
        self.weight[field.index()]
    }

    /// Returns the weights with `field` weighing `weight`.
    pub fn with(mut self, field: Field, weight: f32) -> Self {
        self.weight[field.index()] = weight;
        self
    }
}

/// The deepest a parameter schema is read; deeper properties are not searched.
const MAX_SCHEMA_DEPTH: usize = 8;
/// The most terms one field of one tool contributes; the rest are not searched.
pub(crate) const MAX_FIELD_TERMS: usize = 4096;

/// Calls `f(field, term)` for every term of every searched field of `tool`.
pub(crate) fn for_each_field_term(tool: &ToolDescriptor, mut f: impl FnMut(Field, String)) {
    let text = |field: Field, s: &str, f: &mut dyn FnMut(Field, String)| {
        for_each_term_and_pair(s, |t| f(field, t));
    };
    text(Field::Name, &tool.name, &mut f);
    if let Some(title) = &tool.title {
        text(Field::Title, title, &mut f);
    }
    text(Field::Description, &tool.description, &mut f);
    for s in [&tool.usage.when_to_use, &tool.usage.example]
        .into_iter()
        .flatten()
    {
        text(Field::Usage, s, &mut f);
    }
    for tag in &tool.tags {
        text(Field::Tags, tag, &mut f);
    }
    schema_terms(&tool.input_schema, 0, &mut |field, s| {
        text(field, s, &mut f)
    });
}

/// Parameter names, descriptions, titles and string enum values of `schema`,
/// nested objects, array items and union branches included.
fn schema_terms(schema: &Value, depth: usize, f: &mut dyn FnMut(Field, &str)) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(object) = schema.as_object() else {
        return;
    };
    if depth > 0 {
        for key in ["description", "title"] {
            if let Some(s) = object.get(key).and_then(Value::as_str) {
                f(Field::ParamText, s);
            }
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            for s in values.iter().filter_map(Value::as_str) {
                f(Field::ParamText, s);
            }
        }
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            f(Field::ParamNames, name);
            schema_terms(property, depth + 1, f);
        }
    }
    match object.get("items") {
        Some(items @ Value::Object(_)) => schema_terms(items, depth + 1, f),
        Some(Value::Array(items)) => items.iter().for_each(|i| schema_terms(i, depth + 1, f)),
        _ => {}
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(branches) = object.get(key).and_then(Value::as_array) {
            for branch in branches {
                schema_terms(branch, depth + 1, f);
            }
        }
    }
}
