#!/usr/bin/env python3
"""CPython reference for the code-mode corpus.

Runs every program in programs/ with CPython 3.11 against mock tools built from
toolgate.yaml, and writes what happened to expected/NAME.json:

    {"calls": [tool names, in the order the program called them],
     "error": null or the name of the exception the program ended with,
     "printed": everything the program printed,
     "value": the program's value as JSON, or null}

The mocks do what toolgate's gate does for a spec tool, as far as a program can
tell:

* arguments cross as JSON (crates/toolgate/src/code_mode/convert.rs): a value
  JSON cannot carry raises TypeError or ValueError at the call site;
* they are checked against the tool's `parameters` (a draft 2020-12 subset:
  type, enum, pattern, minimum, maximum, minLength, maxLength, required,
  additionalProperties, items), with the gate's message
  (crates/toolgate/src/gate/arguments.rs, jsonschema-rs's wording), as a
  ValueError; `default`s are then filled in;
* a mock's result is its `response`, filled as crates/toolgate-core/src/spec/
  template.rs fills it: a string that is exactly one `{args.X}` takes the
  argument's JSON value (null when absent), a placeholder inside text is spliced
  in as text (nothing for an absent value, compact JSON for a list or object);
* a tool bound to `http:` (here, nothing listens at its URL) fails as the gate
  reports a refused connection: RuntimeError
  "`NAME` failed: could not connect to HOST:PORT: Connection refused (os error 111)";
* the tool that a policy rule sends to a person is simply approved here.

A tool takes keyword arguments, positional ones (in the stub's order: the
`parameters` properties, required ones first), or one dict of them all (when
every key of that dict names a parameter), as code_mode/call_args.rs reads a
call, with its TypeErrors.

A program that uses `await` (outside strings and comments, the test toolgate's
worker applies) gets tools that are coroutine functions. As in toolgate's
worker, calling one converts its arguments at once (TypeError/ValueError at
the call site) and adds the call to a batch; the batch is made (recorded in
`calls`, in the order the calls were made) when the program next waits, so
the calls of concurrent tasks are made in rounds and a call whose coroutine
the program never waits for before it ends is never made. The gate's answer
(result, ValueError, RuntimeError) comes when the coroutine is awaited.
Otherwise tools are plain functions, and each call is made when called.

The program's value is the argument of `final_answer(...)` (or its `answer=`
keyword), which ends the program at once, as toolgate's worker and smolagents
end it; else its last statement when that is a bare expression; else null.
Top-level `await` is allowed.

Usage: python3 crates/toolgate-cli/tests/code_corpus/reference.py [NAME ...]
"""

import ast
import asyncio
import contextlib
import io
import json
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
EXPECTED = HERE / "expected"
SPEC = HERE / "toolgate.yaml"

# A program may iterate a set of strings; fix the hash seed so two runs agree.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])


# --- JSON across the boundary (convert.rs) ---------------------------------

I64 = (-(2**63), 2**63 - 1)
U64_MAX = 2**64 - 1


class NotJson(Exception):
    def __init__(self, type_error, message):
        super().__init__(message)
        self.type_error = type_error
        self.message = message


def to_json(value, depth=0):
    """A Python value as JSON-ready data, or NotJson (convert.rs's rules)."""
    if depth > 128:
        raise NotJson(False, "a value nested deeper than 128 levels cannot be sent as JSON")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if I64[0] <= value <= U64_MAX:
            return int(value)
        raise NotJson(
            False,
            f"the integer {value} does not fit in JSON's 64-bit range; pass it as a string (str(n))",
        )
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise NotJson(False, f"{value!r} is not a JSON number; send None or a string instead")
    if isinstance(value, (list, tuple)):
        return [to_json(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {json_key(k): to_json(v, depth + 1) for k, v in value.items()}
    raise NotJson(
        True,
        f"a value of type {type(value).__name__} cannot be sent as JSON; "
        "convert it to a str, int, float, bool, None, list or dict",
    )


def json_key(key):
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if key is None:
        return "null"
    if isinstance(key, float) and math.isfinite(key):
        return repr(key)
    raise NotJson(True, f"a dict key of type {type(key).__name__} cannot be sent as JSON; use str keys")


def dumps(value):
    """JSON text as serde_json writes it: compact, UTF-8."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- argument checks (gate/arguments.rs, jsonschema-rs's messages) ----------

TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def pointer(path):
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def problems(schema, value, path=()):
    """Every (path, rule, message) by which `value` breaks `schema`."""
    out = []
    for keyword, arg in schema.items():
        if keyword == "type":
            types = arg if isinstance(arg, list) else [arg]
            if not any(TYPE_CHECKS[t](value) for t in types):
                if isinstance(arg, list):
                    listed = ", ".join(f'"{t}"' for t in types)
                    out.append((path, "type", f"{dumps(value)} is not of types {listed}"))
                else:
                    out.append((path, "type", f'{dumps(value)} is not of type "{arg}"'))
        elif keyword == "enum":
            if not any(same_json(value, option) for option in arg):
                allowed = ", ".join(dumps(o) for o in arg)
                out.append((path, "enum", f"{dumps(value)} is not one of {allowed}"))
        elif keyword == "pattern" and isinstance(value, str):
            if not re.search(arg, value):
                out.append((path, "pattern", f'{dumps(value)} does not match "{arg}"'))
        elif keyword == "minimum" and TYPE_CHECKS["number"](value):
            if value < arg:
                out.append((path, "minimum", f"{dumps(value)} is less than the minimum of {dumps(arg)}"))
        elif keyword == "maximum" and TYPE_CHECKS["number"](value):
            if value > arg:
                out.append((path, "maximum", f"{dumps(value)} is greater than the maximum of {dumps(arg)}"))
        elif keyword == "minLength" and isinstance(value, str):
            if len(value) < arg:
                s = "" if arg == 1 else "s"
                out.append((path, "minLength", f"{dumps(value)} is shorter than {arg} character{s}"))
        elif keyword == "maxLength" and isinstance(value, str):
            if len(value) > arg:
                s = "" if arg == 1 else "s"
                out.append((path, "maxLength", f"{dumps(value)} is longer than {arg} character{s}"))
        elif keyword == "properties" and isinstance(value, dict):
            for name, sub in arg.items():
                if name in value:
                    out.extend(problems(sub, value[name], path + (name,)))
        elif keyword == "required" and isinstance(value, dict):
            for name in arg:
                if name not in value:
                    out.append((path, "required", f"{dumps(name)} is a required property"))
        elif keyword == "additionalProperties" and arg is False and isinstance(value, dict):
            known = schema.get("properties", {})
            extra = [k for k in value if k not in known]
            if extra:
                listed = ", ".join(f"'{k}'" for k in extra)
                verb = "was" if len(extra) == 1 else "were"
                out.append(
                    (path, "additionalProperties", f"Additional properties are not allowed ({listed} {verb} unexpected)")
                )
        elif keyword == "items" and isinstance(value, list):
            for i, item in enumerate(value):
                out.extend(problems(arg, item, path + (i,)))
    return out


def same_json(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def invalid_arguments_message(tool, found):
    message = f"the arguments for `{tool}` are invalid; nothing ran. Fix these and call again:"
    for path, rule, text in found[:20]:
        at = "(the arguments)" if not path else f"`{pointer(path)}`"
        message += f"\n- at {at}: {text} [{rule}]"
    if len(found) > 20:
        message += "\n- and more: fix these first, then call again to see the rest"
    return message


def fill_defaults(schema, value):
    if not isinstance(value, dict):
        return
    for name, sub in schema.get("properties", {}).items():
        if name in value:
            fill_defaults(sub, value[name])
        elif "default" in sub:
            value[name] = json.loads(json.dumps(sub["default"]))


# --- response templates (spec/template.rs) ----------------------------------

PLACEHOLDER_PART = re.compile(r"^[A-Za-z0-9_-]+$")


def placeholders(s):
    found, rest = [], 0
    while True:
        open_ = s.find("{", rest)
        if open_ < 0:
            break
        rest = open_ + 1
        if s[:open_].endswith("$"):
            continue
        close = s.find("}", open_)
        if close < 0:
            break
        inner = s[open_ + 1 : close]
        scope, dot, path = inner.partition(".")
        if not dot or scope not in ("args", "state"):
            continue
        parts = path.split(".")
        if any(not PLACEHOLDER_PART.match(p) for p in parts):
            continue
        found.append((scope, parts, open_, close + 1))
        rest = close + 1
    return found


def render(value, args):
    if isinstance(value, str):
        return render_str(value, args)
    if isinstance(value, list):
        return [render(v, args) for v in value]
    if isinstance(value, dict):
        return {k: render(v, args) for k, v in value.items()}
    return value


def lookup(scope, parts, args):
    root = args if scope == "args" else {}  # no state in this corpus
    value = root.get(parts[0]) if isinstance(root, dict) else None
    for key in parts[1:]:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def render_str(s, args):
    found = placeholders(s)
    if not found:
        return s
    if len(found) == 1 and found[0][2] == 0 and found[0][3] == len(s):
        return json.loads(json.dumps(lookup(found[0][0], found[0][1], args)))
    out, last = [], 0
    for scope, parts, start, end in found:
        out.append(s[last:start])
        value = lookup(scope, parts, args)
        if value is None:
            pass
        elif isinstance(value, str):
            out.append(value)
        else:
            out.append(dumps(value))
        last = end
    out.append(s[last:])
    return "".join(out)


# --- Python names (code_mode/names.rs, for the names this corpus uses) ------


def python_name(tool):
    namespace, dot, rest = tool.partition(".")
    if dot and namespace.isidentifier():
        return namespace, re.sub(r"[^A-Za-z0-9_]", "_", rest)
    return None, re.sub(r"[^A-Za-z0-9_]", "_", tool)


def parameter_names(params):
    """The parameters in the stub's order (code_mode/stubs.rs): the schema's
    properties, required ones first."""
    required = params.get("required", [])
    props = list(params.get("properties", {}))
    return [p for p in props if p in required] + [p for p in props if p not in required]


def is_arguments_dict(value, order):
    """Whether one positional dict is the whole arguments object: every key
    names a parameter, or the function declares none."""
    return not order or (bool(value) and all(isinstance(k, str) and k in order for k in value))


# --- the tools ---------------------------------------------------------------


class Desk:
    """Mock tools for one program run, recording the calls."""

    def __init__(self, spec, asynchronous):
        self.spec = spec
        self.asynchronous = asynchronous
        self.calls = []
        self.batch = []

    def bind(self, tool, args, kwargs):
        """The call's arguments as one JSON object, as code_mode/call_args.rs
        makes it: keywords by name, positional arguments in the stub's order,
        or one dict of them all."""
        name = python_name(tool["name"])
        name = name[1] if name[0] is None else f"{name[0]}.{name[1]}"
        params = tool.get("parameters") or {"type": "object", "properties": {}}
        order = parameter_names(params)

        def not_json(e):
            kind = TypeError if e.type_error else ValueError
            return kind(f"an argument of {name}(): {e.message}")

        if len(args) == 1 and not kwargs and isinstance(args[0], dict) and is_arguments_dict(args[0], order):
            try:
                return to_json(args[0])
            except NotJson as e:
                raise not_json(e) from None
        if len(args) > len(order):
            raise TypeError(
                f"{name}() takes {len(order)} positional argument{'' if len(order) == 1 else 's'} "
                f"but {len(args)} were given; its parameters, in order: {', '.join(order) or 'none'}"
            )
        merged = {}
        try:
            for param, value in zip(order, args):
                merged[param] = to_json(value)
            for key, value in kwargs.items():
                if key in merged:
                    raise TypeError(f"{name}() got multiple values for argument '{key}'")
                merged[key] = to_json(value)
        except NotJson as e:
            raise not_json(e) from None
        return merged

    def answer(self, tool, arguments):
        """The gate's answer to a call: the result, or the exception it raises."""
        name = tool["name"]
        params = tool.get("parameters") or {"type": "object", "properties": {}}
        found = problems(params, arguments)
        if found:
            raise ValueError(invalid_arguments_message(name, found))
        fill_defaults(params, arguments)
        http = tool.get("http")
        if http:
            m = re.match(r"^[a-z]+://([^/?#]+)", http["url"])
            host = m.group(1) if m else "(no host)"
            raise RuntimeError(
                f"`{name}` failed: could not connect to {host}: Connection refused (os error 111)"
            )
        response = tool.get("response", {"ok": True})
        return render(response, arguments)

    def function(self, tool):
        desk = self
        display = tool["name"]

        if self.asynchronous:

            def call(*args, **kwargs):
                arguments = desk.bind(tool, args, kwargs)
                desk.batch.append(display)

                async def gate():
                    # As toolgate's worker does: a call joins the batch when it
                    # is made, and the batch goes to the gate once every task
                    # of the program waits; so concurrent tasks' calls are
                    # made in rounds, and a call made but never waited for
                    # before the program ends is never made at all.
                    await asyncio.sleep(0)
                    desk.calls.extend(desk.batch)
                    desk.batch.clear()
                    return desk.answer(tool, arguments)

                return gate()

        else:

            def call(*args, **kwargs):
                arguments = desk.bind(tool, args, kwargs)
                desk.calls.append(display)
                return desk.answer(tool, arguments)

        call.__name__ = call.__qualname__ = python_name(display)[1]
        call.__doc__ = tool.get("description")
        return call

    def globals(self):
        names = {}
        spaces = {}
        for tool in self.spec["tools"]:
            namespace, attr = python_name(tool["name"])
            if namespace is None:
                names[attr] = self.function(tool)
            else:
                spaces.setdefault(namespace, {})[attr] = staticmethod(self.function(tool))
        for namespace, attrs in spaces.items():
            names[namespace] = type(namespace, (), attrs)
        return names


# --- running a program -------------------------------------------------------


def uses_await(code):
    """Whether `await` appears outside strings and comments (worker.rs's test)."""
    i, n = 0, len(code)

    def name_char(c):
        return c.isalnum() or c == "_" or ord(c) >= 0x80

    while i < n:
        c = code[i]
        if c == "#":
            while i < n and code[i] != "\n":
                i += 1
        elif c in "'\"":
            triple = code[i : i + 3] == c * 3
            i += 3 if triple else 1
            while i < n:
                if code[i] == "\\":
                    i += 2
                    continue
                if triple:
                    if code[i : i + 3] == c * 3:
                        i += 3
                        break
                elif code[i] == c or code[i] == "\n":
                    i += 1
                    break
                i += 1
            continue
        elif (
            c == "a"
            and code.startswith("await", i)
            and (i == 0 or not name_char(code[i - 1]))
            and not (i + 5 < n and name_char(code[i + 5]))
        ):
            return True
        elif name_char(c):
            while i < n and name_char(code[i]):
                i += 1
            continue
        i += 1
    return False


RESULT = "__corpus_value__"


class FinalAnswer(BaseException):
    """Raised by final_answer() to end the program, as toolgate's worker (and
    smolagents) end it there; a BaseException, so `except Exception` in the
    program does not catch it."""


def compile_program(source, filename):
    """The program, its last bare expression assigned to RESULT."""
    tree = ast.parse(source, filename, feature_version=(3, 11))
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(
            ast.Assign(targets=[ast.Name(id=RESULT, ctx=ast.Store())], value=last.value), last
        )
        ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def value_json(value):
    try:
        return to_json(value)
    except NotJson:
        return None


def run_program(spec, path):
    source = path.read_text()
    desk = Desk(spec, uses_await(source))
    answers = []

    def final_answer(*args, **kwargs):
        answers.append(args[0] if args else kwargs.get("answer"))
        raise FinalAnswer()

    env = {"__name__": "__main__", "__builtins__": __builtins__}
    env.update(desk.globals())
    env["final_answer"] = final_answer
    out = io.StringIO()
    error = None
    started = time.monotonic()
    with contextlib.redirect_stdout(out):
        try:
            code = compile_program(source, path.name)
            ran = eval(code, env)
            if asyncio.iscoroutine(ran):
                asyncio.run(ran)
        except FinalAnswer:
            pass
        except BaseException as e:  # the program's own failure, whatever it is
            if not answers:
                error = type(e).__name__
    elapsed = time.monotonic() - started
    if answers:
        value = answers[-1]
    else:
        value = env.get(RESULT)
    return {
        "printed": out.getvalue(),
        "value": value_json(value),
        "error": error,
        "calls": desk.calls,
    }, elapsed


def main(argv):
    # A program that forgets an `await` leaves a coroutine behind; that is its
    # error to report, not a warning of the runner's.
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited")
    spec = yaml.safe_load(SPEC.read_text())
    EXPECTED.mkdir(exist_ok=True)
    programs = sorted(PROGRAMS.glob("*.py"))
    if argv:
        programs = [p for p in programs if p.stem in argv or p.name in argv]
    clean, failed, slow = 0, [], []
    for path in programs:
        result, elapsed = run_program(spec, path)
        (EXPECTED / f"{path.stem}.json").write_text(
            json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )
        if result["error"] is None:
            clean += 1
        else:
            failed.append(f"{path.stem} ({result['error']})")
        if elapsed > 1.0:
            slow.append(f"{path.stem} ({elapsed:.2f} s)")
    print(f"{len(programs)} programs: {clean} ran without error in CPython, {len(failed)} ended with an exception")
    for f in failed:
        print(f"  raised: {f}")
    for s in slow:
        print(f"  slower than 1 s: {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
