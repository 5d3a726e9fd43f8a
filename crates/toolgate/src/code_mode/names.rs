//! Tool names as Python names, and back. A namespaced tool (`github.create_issue`,
//! an upstream MCP server's tools under its prefix) reads as an attribute of its
//! namespace: `github.create_issue(...)`, the namespace being an object whose
//! attributes are the tool functions. Any other name that is not a plain identifier
//! — dots in a namespace that cannot be a Python name, dashes, a keyword (`class`),
//! a builtin it would shadow (`print`, which a program could then never call) —
//! becomes one (`github_create_issue`, `class_`, `print_`); an attribute only
//! avoids keywords (`github.list` stays). A name two tools would share gets a
//! numbered suffix in catalog order. The map is kept both ways, so a call by
//! Python name (dotted for a namespaced tool) reaches exactly one tool.

use std::collections::{BTreeMap, BTreeSet};

use monty_types::{MontyObject, MontyUuid};

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
    /// when two map to the same one). A tool `ns.rest` is `ns.<rest as an
    /// attribute>` when `ns` is a plain identifier that no tool without a dot
    /// also claims; otherwise its whole name is mapped to one identifier.
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a str>) -> Self {
        let tools: Vec<&str> = tools.into_iter().collect();
        let plain: BTreeSet<String> = tools
            .iter()
            .filter(|tool| !tool.contains('.'))
            .map(|tool| identifier(tool))
            .collect();
        let namespace_of = |tool: &str| -> Option<(String, String)> {
            let (namespace, rest) = tool.split_once('.')?;
            (!rest.is_empty() && identifier(namespace) == namespace && !plain.contains(namespace))
                .then(|| (namespace.to_owned(), attribute(rest)))
        };
        let namespaces: BTreeSet<String> = tools
            .iter()
            .filter_map(|tool| namespace_of(tool).map(|(namespace, _)| namespace))
            .collect();
        let mut names = PythonNames::default();
        for tool in tools {
            if names.to_python.contains_key(tool) {
                continue;
            }
            let (prefix, base) = match namespace_of(tool) {
                Some((namespace, member)) => (format!("{namespace}."), member),
                None => (String::new(), identifier(tool)),
            };
            let mut python = format!("{prefix}{base}");
            let mut n = 2;
            while names.to_tool.contains_key(&python) || namespaces.contains(&python) {
                python = format!("{prefix}{base}_{n}");
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

/// What a program's lookup of the global `name` finds among the Python names
/// `functions` (as [`PythonNames::python_names`] lists them): a tool function,
/// or a namespace — an object of a host class named for it whose attributes are
/// its tool functions, so that `github.create_issue(...)` calls the function
/// named `github.create_issue`. (A call of a name the namespace lacks reaches the
/// worker as a method call, which it refuses.)
pub(super) fn lookup(functions: &[String], name: &str) -> Option<MontyObject> {
    if functions.iter().any(|f| f == name) {
        return Some(function(name));
    }
    let prefix = format!("{name}.");
    let attrs: Vec<(MontyObject, MontyObject)> = functions
        .iter()
        .filter(|f| f.starts_with(&prefix))
        .map(|f| (MontyObject::string(&f[prefix.len()..]), function(f)))
        .collect();
    if attrs.is_empty() {
        return None;
    }
    let id = || MontyUuid::from_random_bytes(*uuid::Uuid::new_v4().as_bytes());
    let class = MontyObject::class_type(name, id(), true, false, []);
    Some(MontyObject::class_instance(class, id(), attrs))
}

fn function(name: &str) -> MontyObject {
    MontyObject::function(name, None)
}

/// The part of a tool's name after its namespace, as an attribute name: like
/// [`identifier`], but a builtin's name is fine (an attribute shadows nothing).
fn attribute(name: &str) -> String {
    let mut out = identifier(name);
    if out.ends_with('_') && BUILTINS.contains(&&out[..out.len() - 1]) && !name.ends_with('_') {
        out.pop();
    }
    out
}

/// Whether `name` can be a Python parameter as it is: an ASCII identifier that
/// is not a keyword. A builtin's name is fine (`id`, `type`, `filter`): a
/// parameter shadows it only inside its function.
pub(super) fn is_parameter_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
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
        let names = PythonNames::new(["a-b", "a_b", "a!b"]);
        assert_eq!(names.python("a-b"), Some("a_b"));
        assert_eq!(names.python("a_b"), Some("a_b_2"));
        assert_eq!(names.python("a!b"), Some("a_b_3"));
        assert_eq!(names.tool("a_b_2"), Some("a_b"));
    }

    #[test]
    fn a_namespaced_tool_is_an_attribute_of_its_namespace() {
        let names = PythonNames::new([
            "github.create_issue",
            "github.list-repos",
            "github.list",
            "github.class",
            "search.web.fetch",
        ]);
        assert_eq!(
            names.python("github.create_issue"),
            Some("github.create_issue")
        );
        assert_eq!(names.python("github.list-repos"), Some("github.list_repos"));
        assert_eq!(names.python("github.list"), Some("github.list"));
        assert_eq!(names.python("github.class"), Some("github.class_"));
        assert_eq!(names.python("search.web.fetch"), Some("search.web_fetch"));
        assert_eq!(names.tool("github.list_repos"), Some("github.list-repos"));
    }

    #[test]
    fn a_namespace_that_cannot_be_a_python_name_is_mapped_whole() {
        // `print` is a builtin, `my-server` is not an identifier, and `orders`
        // is also a plain tool's name: each namespaced tool gets one identifier.
        let names = PythonNames::new(["print.page", "my-server.ping", "orders", "orders.get"]);
        assert_eq!(names.python("print.page"), Some("print_page"));
        assert_eq!(names.python("my-server.ping"), Some("my_server_ping"));
        assert_eq!(names.python("orders"), Some("orders"));
        assert_eq!(names.python("orders.get"), Some("orders_get"));
    }

    #[test]
    fn a_namespace_is_found_as_an_object_whose_attributes_are_its_functions() {
        let functions = vec!["github.create_issue".to_owned(), "ping".to_owned()];
        let namespace = lookup(&functions, "github").expect("github is a namespace");
        assert_eq!(namespace.type_name(), "github");
        let attrs = namespace
            .as_ref()
            .pairs()
            .expect("a namespace has attributes");
        assert_eq!(attrs.len(), 1);
        assert_eq!(attrs[0].0.as_str(), Some("create_issue"));
        assert_eq!(attrs[0].1.to_owned(), function("github.create_issue"));
        assert_eq!(lookup(&functions, "ping"), Some(function("ping")));
        assert_eq!(lookup(&functions, "git"), None);
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
                let parts: Vec<&str> = python.split('.').collect();
                prop_assert!(parts.len() <= 2);
                for part in &parts {
                    prop_assert!(part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                    prop_assert!(!part.is_empty() && !part.starts_with(|c: char| c.is_ascii_digit()));
                    prop_assert!(!KEYWORDS.contains(part));
                }
                prop_assert!(!BUILTINS.contains(&parts[0]));
                if let [namespace, _] = parts[..] {
                    prop_assert!(names.tool(namespace).is_none(), "{} is a namespace and a function", namespace);
                }
            }
        }
    }
}
