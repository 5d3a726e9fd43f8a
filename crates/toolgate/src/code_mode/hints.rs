//! What a model needs to fix its program when the interpreter's own message
//! would mislead it: a hint appended to the exceptions of features this Python
//! lacks, and the list of modules a program can import.

/// The modules a program can import: the interpreter's own and the pure-Python
/// ones served with the program ([`super::rewrite`]).
pub(super) fn importable() -> Vec<&'static str> {
    let mut modules = monty::builtin_module_names();
    modules.extend(super::rewrite::served_modules());
    modules.retain(|m| !m.starts_with('_'));
    modules.sort_unstable();
    modules.dedup();
    modules
}

/// The message of a `ModuleNotFoundError` for `module`.
pub(super) fn no_such_module(module: &str) -> String {
    format!(
        "No module named '{module}'; programs can import: {}",
        importable().join(", ")
    )
}

/// A hint for an exception whose message alone would send a model the wrong
/// way, if there is one.
pub(super) fn hint(exception: &str, message: &str) -> Option<&'static str> {
    let hint = match exception {
        "AttributeError"
            if message.starts_with("type object '")
                || message.ends_with("has no attribute 'get'") =>
        {
            "a method taken as a value (key=d.get, key=str.lower, map(str.strip, xs)) is not supported here; wrap it in a lambda: key=lambda k: d.get(k)"
        }
        "AttributeError"
            if message.contains("'__cause__'") || message.contains("'__context__'") =>
        {
            "exception chaining (__cause__, __context__) is not kept here; put what you need in the new exception's message"
        }
        "TypeError" if message.contains("is not an iterator") => {
            "generator expressions are evaluated into lists here; call iter(...) on one before next(), or index the list"
        }
        "NotImplementedError" if message.contains("class inheritance") => {
            "classes cannot have base classes here; use a plain class or a dict, and raise ValueError or RuntimeError instead of your own exception class"
        }
        "NotImplementedError" if message.contains("yield") => {
            "yield is supported only as a statement of its own (`yield x`, `yield from xs`); build a list and return it"
        }
        "NotImplementedError" if message.contains("method decorators") => {
            "@classmethod is not supported here; use a module-level function"
        }
        "NameError" if message.contains("'globals'") || message.contains("'locals'") => {
            "globals() and locals() are not available here; keep values in a dict of your own"
        }
        _ => return None,
    };
    Some(hint)
}
