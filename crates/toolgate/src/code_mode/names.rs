//! Tool names as Python function names, and back. A tool's name may hold dots and
//! dashes (`github.create-issue`), be a keyword (`class`) or shadow a builtin
//! (`print`, which a program could then never call); each becomes a plain
//! identifier (`github_create_issue`, `class_`, `print_`), and a name two tools
//! would share gets a numbered suffix in catalog order. The map is kept both ways,
//! so a call by Python name reaches exactly one tool.

use std::collections::BTreeMap;

/// Python's keywords (and soft keywords a program may use as names, kept apart
/// so a stub reads unambiguously).
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "match", "case", "type", "_",
];

/// Builtins a tool name must not shadow: a program's lookup finds these first.
const BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "bytes",
    "callable",
    "chr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "hasattr",
    "hash",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "str",
    "sum",
    "super",
    "tuple",
    "vars",
    "zip",
    "exec",
    "eval",
    "compile",
    "globals",
    "locals",
    "breakpoint",
    "help",
    "exit",
    "quit",
    "__import__",
    "Exception",
    "BaseException",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "RuntimeError",
    "PermissionError",
    "TimeoutError",
    "NameError",
    "AttributeError",
    "StopIteration",
];

/// Tool names and the Python names a program calls them by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PythonNames {
    to_tool: BTreeMap<String, String>,
    to_python: BTreeMap<String, String>,
}

impl PythonNames {
    /// Names for `tools`, in the order given (earlier tools keep the plain name
    /// when two map to the same one).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a str>) -> Self {
        let mut names = PythonNames::default();
        for tool in tools {
            if names.to_python.contains_key(tool) {
                continue;
            }
            let base = identifier(tool);
            let mut python = base.clone();
            let mut n = 2;
            while names.to_tool.contains_key(&python) {
                python = format!("{base}_{n}");
                n += 1;
            }
            names.to_tool.insert(python.clone(), tool.to_owned());
            names.to_python.insert(tool.to_owned(), python);
        }
        names
    }

    /// The tool a Python name calls.
    pub fn tool(&self, python: &str) -> Option<&str> {
        self.to_tool.get(python).map(String::as_str)
    }

    /// The Python name of a tool.
    pub fn python(&self, tool: &str) -> Option<&str> {
        self.to_python.get(tool).map(String::as_str)
    }

    /// Every Python name, sorted.
    pub fn python_names(&self) -> impl Iterator<Item = &str> {
        self.to_tool.keys().map(String::as_str)
    }
}

/// `name` as a Python identifier: ASCII letters, digits and `_`, not starting with
/// a digit, not a keyword or builtin.
pub fn identifier(name: &str) -> String {
    let mut out: String = deunicode_ascii(name)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if KEYWORDS.contains(&out.as_str()) || BUILTINS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// Keeps ASCII as it is; other characters become `_` (then merged by the caller's
/// mapping, which keeps names distinct with suffixes).
fn deunicode_ascii(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dotted_dashed_and_reserved_names_become_identifiers() {
        assert_eq!(identifier("github.create-issue"), "github_create_issue");
        assert_eq!(identifier("class"), "class_");
        assert_eq!(identifier("print"), "print_");
        assert_eq!(identifier("3d_render"), "_3d_render");
        assert_eq!(identifier("lookup_order"), "lookup_order");
    }

    #[test]
    fn two_tools_that_map_alike_get_distinct_names() {
        let names = PythonNames::new(["a.b", "a-b", "a_b"]);
        assert_eq!(names.python("a.b"), Some("a_b"));
        assert_eq!(names.python("a-b"), Some("a_b_2"));
        assert_eq!(names.python("a_b"), Some("a_b_3"));
        assert_eq!(names.tool("a_b_2"), Some("a-b"));
    }

    proptest! {
        #[test]
        fn the_mapping_is_reversible_and_yields_identifiers(
            tools in proptest::collection::btree_set("[a-zA-Z0-9._-]{1,12}", 1..12)
        ) {
            let names = PythonNames::new(tools.iter().map(String::as_str));
            for tool in &tools {
                let python = names.python(tool).unwrap();
                prop_assert_eq!(names.tool(python), Some(tool.as_str()));
                prop_assert!(python.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                prop_assert!(!python.starts_with(|c: char| c.is_ascii_digit()));
                prop_assert!(!KEYWORDS.contains(&python) && !BUILTINS.contains(&python));
            }
        }
    }
}
