//! The code-mode corpus: programs written the way models write them
//! (`code_corpus/programs`, in four styles; see its README), each run through
//! `toolgate code run` — approved and resumed where it pauses — and compared with
//! what CPython 3.11 printed and returned running it with the same mock tools
//! (`code_corpus/expected`, written by `code_corpus/reference.py`).
//!
//! A program agrees when toolgate prints exactly what CPython printed and returns
//! the same value, or raises the same exception type after the same output.
//! The programs that do not agree are listed in [`KNOWN_GAPS`] with the reason,
//! so that a new gap fails this test and so does a gap that closed.

use std::path::{Path, PathBuf};

use serde_json::Value;

use support::{json, toolgate};

mod support;

/// The programs toolgate does not yet run as CPython does, and why.
const KNOWN_GAPS: &[(&str, &str)] = &[
    (
        "048_main_refund_check",
        "an exception class of the program's own (class E(Exception)): the interpreter has no class inheritance",
    ),
    (
        "051_main_dataclass_events",
        "@dataclass(order=True): the interpreter orders no instances of the program's classes",
    ),
    (
        "066_main_raise_from",
        "an exception class of the program's own (class E(Exception)): the interpreter has no class inheritance",
    ),
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/code_corpus")
}

/// How a program ended in toolgate: what it printed, its value, the exception
/// it raised.
#[derive(Debug, PartialEq)]
struct Ending {
    printed: String,
    value: Value,
    error: Option<String>,
}

/// Runs `program` in a fresh state directory, approving each call it pauses at.
fn run_in_toolgate(program: &Path) -> Ending {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        corpus().join("toolgate.yaml"),
        dir.path().join("toolgate.yaml"),
    )
    .unwrap();
    std::fs::copy(program, dir.path().join("program.py")).unwrap();
    let mut result = json(&toolgate(
        dir.path(),
        &["code", "run", "program.py", "--json"],
    ));
    let mut printed = String::new();
    for _ in 0..5 {
        if result["status"] != "pending_approval" {
            break;
        }
        // What a paused program printed is printed again when it resumes.
        let approval = result["approval_id"].as_str().unwrap().to_owned();
        let run_id = result["run_id"].as_str().unwrap().to_owned();
        let approved = toolgate(dir.path(), &["approvals", "approve", &approval]);
        assert!(approved.status.success(), "{approved:?}");
        result = json(&toolgate(
            dir.path(),
            &["code", "resume", &run_id, "--json"],
        ));
    }
    printed.push_str(result["printed"].as_str().unwrap_or_default());
    let error = (result["status"] == "error").then(|| {
        result["error"]["exception"]
            .as_str()
            .unwrap_or("(no exception)")
            .to_owned()
    });
    Ending {
        printed,
        value: if error.is_some() {
            Value::Null
        } else {
            result["value"].clone()
        },
        error,
    }
}

/// How CPython ended the same program.
fn expected(name: &str) -> Ending {
    let path = corpus().join("expected").join(format!("{name}.json"));
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    Ending {
        printed: expected["printed"].as_str().unwrap().to_owned(),
        value: expected["value"].clone(),
        error: expected["error"].as_str().map(str::to_owned),
    }
}

#[test]
fn the_corpus_runs_as_in_cpython_but_for_its_known_gaps() {
    let mut programs: Vec<PathBuf> = std::fs::read_dir(corpus().join("programs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    programs.sort();
    assert!(programs.len() >= 80, "{} programs", programs.len());
    let mut differing = Vec::new();
    let mut cpython_ran = 0;
    let mut agreed_of_those = 0;
    for program in &programs {
        let name = program.file_stem().unwrap().to_str().unwrap();
        let want = expected(name);
        let got = run_in_toolgate(program);
        let agrees = got == want;
        if want.error.is_none() {
            cpython_ran += 1;
            agreed_of_those += usize::from(agrees);
        }
        if !agrees {
            differing.push((name.to_owned(), got, want));
        }
    }
    println!(
        "{agreed_of_those} of the {cpython_ran} programs CPython runs ran alike in toolgate \
         ({:.0}%); {} of {} programs in all differ",
        100.0 * agreed_of_those as f64 / cpython_ran as f64,
        differing.len(),
        programs.len()
    );
    let unexpected: Vec<_> = differing
        .iter()
        .filter(|(name, ..)| !KNOWN_GAPS.iter().any(|(gap, _)| gap == name))
        .collect();
    let closed: Vec<_> = KNOWN_GAPS
        .iter()
        .filter(|(gap, _)| !differing.iter().any(|(name, ..)| name == gap))
        .collect();
    assert!(
        unexpected.is_empty() && closed.is_empty(),
        "programs that differ from CPython and are not known gaps: {unexpected:#?}\n\
         known gaps that now agree (remove them from KNOWN_GAPS): {closed:?}"
    );
}
