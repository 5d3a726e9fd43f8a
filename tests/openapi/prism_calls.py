"""Calls imported OpenAPI tools through the gate against Prism mock servers.

For each case, `toolgate call` runs the tool (its arguments validated, the policy
applied, the HTTP binding filled and sent); Prism validates the request against the
same description (`--errors`: a violation is a 422) and answers from it. A case
passes when Prism's log shows the request passed its validation and the expected
answer reached the caller: the value of a 2xx, or the documented error status.

    python prism_calls.py --toolgate target/debug/toolgate --cases cases.json

cases.json: [{"spec": FILE, "log": PRISM_LOG, "tool": NAME, "args": {...},
"expect": "ok" | "HTTP 405", "what": "path, api key header"}]. Prints one line per
case and closes with `N passed, N failed`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

PASSED = "The request passed the validation rules"
VIOLATION = "✖  error"


def new_text(log: Path, start: int) -> str:
    data = log.read_bytes()[start:]
    return data.decode("utf-8", "replace")


def run_case(toolgate: Path, case: dict) -> list[str]:
    log = Path(case["log"])
    start = log.stat().st_size
    run = subprocess.run(
        [str(toolgate), "call", "-f", case["spec"], "--json", case["tool"], json.dumps(case["args"])],
        capture_output=True, text=True, timeout=60,
    )
    problems = []
    try:
        out = json.loads(run.stdout)
    except json.JSONDecodeError:
        return [f"toolgate call printed no JSON (exit {run.returncode}): {run.stderr.strip()[:300]}"]
    # Prism logs a request a moment after answering it.
    text = ""
    for _ in range(50):
        text = new_text(log, start)
        if PASSED in text or VIOLATION in text:
            break
        time.sleep(0.1)
    if PASSED not in text:
        violations = [line.split("]", 2)[-1].strip() for line in text.splitlines() if "VALIDATOR" in line]
        problems.append("Prism did not pass the request: " + ("; ".join(violations) or "no request reached it"))
    expect = case["expect"]
    if expect == "ok":
        if out.get("status") != "ok" or "value" not in out:
            problems.append(f"expected the value to reach the caller, got {json.dumps(out)[:300]}")
    elif out.get("status") != "error" or expect not in (out.get("message") or ""):
        problems.append(f"expected `{expect}` to reach the caller, got {json.dumps(out)[:300]}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", type=Path, required=True)
    parser.add_argument("--cases", type=Path, required=True)
    args = parser.parse_args()
    passed = failed = 0
    for case in json.loads(args.cases.read_text()):
        label = f"{Path(case['spec']).stem} {case['tool']} ({case['what']})"
        problems = run_case(args.toolgate, case)
        if problems:
            failed += 1
            print(f"FAIL {label}")
            for p in problems:
                print(f"     {p}")
        else:
            passed += 1
            print(f"ok   {label}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
