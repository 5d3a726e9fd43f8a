//! The program as the interpreter gets it: a prelude, then the model's own source
//! with the constructs this Python lacks written as ones it has. A line map
//! keeps every line number the model sees its own.
//!
//! - `asyncio` and `json` are there without an import, as in peers' runtimes
//!   (imported for a program that names them).
//! - Modules the interpreter lacks (`statistics`, `operator`, `heapq`, `pprint`,
//!   `string`, `textwrap`, `io`) are served in pure Python (`served/*.py`): the
//!   prelude defines each one a program imports, and its `import` becomes an
//!   assignment ([`statements`]).
//! - `asyncio.gather(..., return_exceptions=True)`, `create_task`, `Semaphore`
//!   with `async with`, `del x[k]`, `raise ... from ...`, `key=str.lower`,
//!   `key=d.get` and `next(x for x in ...)` become what they mean here, and
//!   `round(x, n)` rounds as CPython's does ([`statements`], [`calls`]).
//! - Generators become functions that return an iterator over what they would
//!   yield; `@staticmethod` and `@property` become a callable attribute and a
//!   method call; a class's base class defined in the program is copied into
//!   it ([`classes`]).
//!
//! Only code is rewritten: string literals and comments are masked first.

mod calls;
mod classes;
mod source;
mod statements;

use std::collections::BTreeSet;

pub(crate) use source::LineMap;
use source::{Edits, mask};

/// The modules served in pure Python, each with its source.
const SERVED: &[(&str, &str)] = &[
    ("statistics", include_str!("served/statistics.py")),
    ("operator", include_str!("served/operator.py")),
    ("heapq", include_str!("served/heapq.py")),
    ("pprint", include_str!("served/pprint.py")),
    ("string", include_str!("served/string.py")),
    ("textwrap", include_str!("served/textwrap.py")),
    ("io", include_str!("served/io.py")),
];

/// What `asyncio` lacks here, defined when a program uses it.
const ASYNCIO_EXTRAS: &str = include_str!("served/asyncio_extras.py");

/// `round(x, n)` correctly rounded, defined when a program calls `round`.
const ROUND: &str = include_str!("served/round.py");

/// `@staticmethod` as a callable class attribute, defined when a program uses it.
const STATICMETHOD: &str = include_str!("served/staticmethod.py");

/// Imported for every program that names them, as peers' runtimes import them.
const ALWAYS: &[&str] = &["asyncio", "json"];

/// The names of the modules served in pure Python.
pub(super) fn served_modules() -> impl Iterator<Item = &'static str> {
    SERVED.iter().map(|(name, _)| *name)
}

/// Whether a program uses `await` outside strings and comments: then its tool
/// calls are coroutines, as Python's async functions are.
pub(super) fn uses_await(code: &str) -> bool {
    !source::word_positions(&mask(code), "await").is_empty()
}

/// A program ready for the interpreter.
#[derive(Debug)]
pub(super) struct Rewritten {
    /// The prelude and the rewritten program.
    pub code: String,
    pub lines: LineMap,
}

/// What the rewrites found the program needs in its prelude.
#[derive(Default)]
struct Needs {
    modules: BTreeSet<&'static str>,
    asyncio_extras: bool,
    staticmethod: bool,
    round: bool,
}

/// The program with its prelude, rewritten for the interpreter.
pub(super) fn rewrite(code: &str) -> Rewritten {
    let mask = mask(code);
    let mut edits = Edits::default();
    let mut needs = Needs::default();
    statements::rewrite(code, &mask, &mut edits, &mut needs);
    calls::rewrite(code, &mask, &mut edits, &mut needs);
    classes::rewrite(code, &mask, &mut edits, &mut needs);
    // Named anywhere, strings included: an f-string may call `json.dumps`.
    let mut prelude = String::new();
    for module in ALWAYS {
        if !source::word_positions(code, module).is_empty() {
            prelude.push_str(&format!("import {module}\n"));
        }
    }
    if needs.asyncio_extras {
        prelude.push_str(ASYNCIO_EXTRAS);
    }
    if needs.staticmethod {
        prelude.push_str(STATICMETHOD);
    }
    if needs.round {
        prelude.push_str(ROUND);
    }
    for (name, source) in SERVED {
        if needs.modules.contains(name) {
            prelude.push_str(source);
        }
    }
    let (program, program_lines) = edits.apply(code);
    let mut lines = vec![0; prelude.lines().count()];
    lines.extend(program_lines);
    prelude.push_str(&program);
    Rewritten {
        code: prelude,
        lines: LineMap(lines),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The program part of a rewrite, without the prelude.
    fn body(code: &str) -> String {
        let rewritten = rewrite(code);
        rewritten
            .code
            .lines()
            .skip(rewritten.lines.0.iter().take_while(|l| **l == 0).count())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_served_module_import_becomes_assignments_on_the_same_line() {
        let code =
            "import statistics as st, json\nfrom heapq import nlargest, heappush as push\nx = 1";
        assert_eq!(
            body(code),
            "st = statistics; import json\nnlargest = heapq.nlargest; push = heapq.heappush\nx = 1"
        );
        let rewritten = rewrite(code);
        assert!(rewritten.code.contains("class statistics:"));
        assert!(rewritten.code.contains("class heapq:"));
        assert!(!rewritten.code.contains("class pprint:"));
    }

    #[test]
    fn a_program_is_asynchronous_when_it_uses_await_outside_strings_and_comments() {
        assert!(uses_await("x = await lookup(id=1)"));
        assert!(uses_await(
            "import asyncio\na, b = await asyncio.gather(f(), g())"
        ));
        assert!(!uses_await("x = lookup(id=1)  # no await here"));
        assert!(!uses_await("print('await me')\ns = \"\"\"await\"\"\""));
        assert!(!uses_await("awaiting = 1\nnot_await = 2"));
    }

    #[test]
    fn strings_and_comments_are_never_rewritten() {
        let code = "s = 'del x[1]'  # import statistics\nprint(\"key=str.lower\")";
        assert_eq!(body(code), code);
    }

    #[test]
    fn del_gather_keywords_tasks_and_methods_as_values_are_rewritten() {
        assert_eq!(
            body("del d['a'], x, xs[1:3]"),
            "d.pop('a'); x = None; xs[1:3] = []"
        );
        assert_eq!(
            body("r = await asyncio.gather(*calls, return_exceptions=True)"),
            "r = await _asyncio_gather_settled(*calls)"
        );
        assert_eq!(
            body("t = asyncio.create_task(f())\nasync with sem:\n    pass"),
            "t = _asyncio_task(f())\nif True:\n    pass"
        );
        assert_eq!(
            body("best = max(counts, key=counts.get)"),
            "best = max(counts, key=(lambda _k, *_d: counts.get(_k, *_d)))"
        );
        assert_eq!(
            body("names = sorted(xs, key=str.lower)"),
            "names = sorted(xs, key=(lambda _s, *_a: _s.lower(*_a)))"
        );
        assert_eq!(
            body("first = next(u for u in users if u['ok'])"),
            "first = next(iter(u for u in users if u['ok']))"
        );
        assert_eq!(
            body("raise RuntimeError('x') from e"),
            "raise RuntimeError('x')"
        );
    }

    #[test]
    fn generators_static_methods_properties_and_base_classes_become_what_runs() {
        assert_eq!(
            body(
                "def g(xs):\n    for x in xs:\n        yield x * 2  # doubled\n    yield from xs\nlist(g([1]))"
            ),
            "def g(xs):\n    _yielded = []\n    for x in xs:\n        _yielded.append((x * 2))  # doubled\n    _yielded.extend(xs)\n    return iter(_yielded)\nlist(g([1]))"
        );
        assert_eq!(
            body(
                "class C:\n    @staticmethod\n    def f(x):\n        return x\n    @property\n    def p(self):\n        return 1\nC().p + C.f(2)"
            ),
            "class C:\n    \n    def f(x):\n        return x\n    f = _staticmethod(f)\n    \n    def p(self):\n        return 1\nC().p() + C.f(2)"
        );
        assert_eq!(
            body(
                "class A:\n    def __init__(self, x):\n        self.x = x\nclass B(A):\n    def __init__(self, x):\n        super().__init__(x)\nB(1).x"
            ),
            "class A:\n    def __init__(self, x):\n        self.x = x\nclass B:\n    def __init__(self, x):\n        self.x = x\n    def __init__(self, x):\n        A.__init__(self, x)\nB(1).x"
        );
    }

    #[test]
    fn lines_added_by_a_rewrite_belong_to_the_line_it_rewrote() {
        let rewritten = rewrite("def g():\n    yield 1\nx = 2");
        let prelude = rewritten.lines.0.iter().take_while(|l| **l == 0).count();
        assert_eq!(rewritten.lines.0[prelude..], [1, 2, 2, 2, 3]);
    }

    #[test]
    fn tracebacks_show_the_programs_own_line_numbers() {
        let rewritten = rewrite("import statistics\nstatistics.mean([])");
        let line = rewritten.lines.0.iter().take_while(|l| **l == 0).count() + 2;
        let traceback = format!(
            "  File \"program.py\", line {line}, in <module>\n  File \"program.py\", line 5, in _statistics_mean"
        );
        assert_eq!(
            rewritten.lines.traceback(&traceback, "program.py"),
            "  File \"program.py\", line 2, in <module>\n  File \"<served module>\", line ?, in _statistics_mean"
        );
    }

    /// Pieces of Python that the rewrites look for, and pieces that break
    /// their assumptions (open brackets and quotes, odd indentation).
    fn fragment() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "def f(x):\n",
            "    yield x\n",
            "    yield from xs\n",
            "        return\n",
            "class A:\n",
            "class B(A):\n",
            "class C(Exception):\n",
            "    @property\n",
            "    @staticmethod\n",
            "    def p(self):\n",
            "        return 1\n",
            "del d['a'], x\n",
            "import statistics as s, json\n",
            "from heapq import nlargest\n",
            "async with s:\n",
            "x = next(y for y in z)\n",
            "round(1.5, 2)\n",
            "'''",
            "\"",
            "#",
            "(",
            ")",
            "[",
            ":",
            "super().f()\n",
            "raise E from e\n",
            "asyncio.gather(a, return_exceptions=True)\n",
            "key=str.lower",
            "d.get",
            ".p",
            "  ",
            "\t",
            "\n",
            "é",
            "日本",
            "yield",
            "await ",
        ])
    }

    proptest! {
        #[test]
        fn any_text_is_rewritten_without_a_panic_and_every_line_is_mapped(
            code in "(?s).{0,300}"
        ) {
            let rewritten = rewrite(&code);
            prop_assert_eq!(rewritten.lines.0.len(), rewritten.code.lines().count());
        }

        #[test]
        fn python_shaped_text_is_rewritten_without_a_panic_and_every_line_is_mapped(
            pieces in prop::collection::vec(fragment(), 0..40)
        ) {
            let code = pieces.concat();
            let rewritten = rewrite(&code);
            prop_assert_eq!(rewritten.lines.0.len(), rewritten.code.lines().count());
            for line in &rewritten.lines.0 {
                prop_assert!(*line as usize <= code.lines().count().max(1));
            }
        }
    }
}
