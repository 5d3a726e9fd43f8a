//! The Python that models write, run in a real worker: positional arguments as
//! Anthropic's examples pass them, the standard modules they import, the asyncio
//! they use, `final_answer`, the gate's clock, and errors that say how to fix the
//! program where this Python differs from CPython.

#![cfg(feature = "code-mode")]

use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolgate::code_mode::{CodeMode, CodeRun, WorkerCommand};
use toolgate::{Catalog, Gate, Principal, Tool, ToolCtx, ToolError, ToolHandler};

/// The weather in a city.
#[derive(Tool)]
#[tool(effect = "read")]
struct GetWeather;

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Place {
    city: String,
    #[serde(default)]
    units: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct Weather {
    city: String,
    units: Option<String>,
    temp: i64,
}

impl ToolHandler for GetWeather {
    type Input = Place;
    type Output = Weather;
    async fn call(&self, _ctx: &ToolCtx, p: Place) -> Result<Weather, ToolError> {
        let temp = p.city.len() as i64 * 3;
        Ok(Weather {
            city: p.city,
            units: p.units,
            temp,
        })
    }
}

/// 2026-03-01T12:00:00Z, the gate's clock in these tests.
const NOW: u64 = 1_772_366_400;

fn gate() -> Gate {
    let catalog = Catalog::new().with_native(GetWeather).unwrap();
    Gate::builder(catalog)
        .clock(|| SystemTime::UNIX_EPOCH + Duration::from_secs(NOW))
        .build()
}

async fn run(code: &str) -> CodeRun {
    CodeMode::new(WorkerCommand::program(env!(
        "CARGO_BIN_EXE_toolgate-code-worker"
    )))
    .run(&gate(), "s", &Principal::operator(), code)
    .await
}

#[tokio::test]
async fn positional_arguments_fill_the_parameters_in_the_stubs_order() {
    let run =
        run(r#"[get_weather("Paris")["temp"], get_weather("Oslo", "metric")["units"]]"#).await;
    assert_eq!(run.value, Some(json!([15, "metric"])), "{run:?}");
}

#[tokio::test]
async fn too_many_positional_arguments_raise_a_type_error_naming_the_parameters() {
    let run = run(r#"get_weather("Paris", "metric", "extra")"#).await;
    let error = run.error.expect("the call fails");
    assert_eq!(error.exception.as_deref(), Some("TypeError"));
    assert!(
        error
            .message
            .contains("its parameters, in order: city, units"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn the_clock_is_the_gates() {
    let run = run("from datetime import datetime, timedelta\nimport time\n\
         start = datetime.now() - timedelta(days=60)\n\
         [start.isoformat(), int(time.time())]")
    .await;
    assert_eq!(
        run.value,
        Some(json!(["2025-12-31T12:00:00", NOW])),
        "{run:?}"
    );
}

#[tokio::test]
async fn final_answer_ends_the_program_with_its_value() {
    let run = run(
        "w = get_weather(city='Rome')\nfinal_answer({'temp': w['temp']})\nprint('not reached')",
    )
    .await;
    assert_eq!(run.value, Some(json!({"temp": 12})), "{run:?}");
    assert_eq!(run.printed, "");
}

#[tokio::test]
async fn the_served_modules_give_cpythons_results() {
    // Each expected value is what CPython 3.11 prints for the same expression.
    let run = run(r#"
import statistics, heapq, io, csv
from operator import itemgetter
from pprint import pformat
rows = list(csv.DictReader(io.StringIO("city,temp\nParis,15\nOslo,3\nRome,12\n")))
temps = [int(r["temp"]) for r in rows]
[
    statistics.mean(temps), statistics.median(temps), round(statistics.stdev(temps), 6),
    statistics.mean([1, 2]), statistics.variance([1, 3]),
    heapq.nlargest(2, rows, key=lambda r: int(r["temp"]))[1]["city"],
    sorted(rows, key=itemgetter("city"))[0]["city"],
    pformat({"b": list(range(30)), "a": 1}),
]
"#)
    .await;
    assert_eq!(
        run.value,
        Some(json!([
            10,
            12,
            6.244998,
            1.5,
            2,
            "Rome",
            "Oslo",
            "{'a': 1,\n 'b': [0,\n       1,\n       2,\n       3,\n       4,\n       5,\n       6,\n       7,\n       8,\n       9,\n       10,\n       11,\n       12,\n       13,\n       14,\n       15,\n       16,\n       17,\n       18,\n       19,\n       20,\n       21,\n       22,\n       23,\n       24,\n       25,\n       26,\n       27,\n       28,\n       29]}"
        ])),
        "{run:?}"
    );
}

#[tokio::test]
async fn asyncio_as_models_use_it_runs() {
    let run = run(r#"
sem = asyncio.Semaphore(2)
async def one(city):
    async with sem:
        return await get_weather(city)
tasks = [asyncio.create_task(one(c)) for c in ["Paris", "Oslo"]]
done = await asyncio.gather(*tasks)
mixed = await asyncio.gather(get_weather(city=1), get_weather("Rome"), return_exceptions=True)
await asyncio.sleep(0.01)
[[d["temp"] for d in done], [type(m).__name__ for m in mixed]]
"#)
    .await;
    assert_eq!(
        run.value,
        Some(json!([[15, 12], ["ValueError", "dict"]])),
        "{run:?}"
    );
}

#[tokio::test]
async fn methods_as_values_del_and_next_of_a_generator_run() {
    let run = run(r#"
counts = {"a": 1, "b": 3}
names = sorted(["bob", "Al"], key=str.lower)
del counts["a"]
first = next(n for n in names if n.startswith("b"))
[max(counts, key=counts.get), names, first]
"#)
    .await;
    assert_eq!(
        run.value,
        Some(json!(["b", ["Al", "bob"], "bob"])),
        "{run:?}"
    );
}

#[tokio::test]
async fn errors_report_the_programs_own_lines_and_say_what_is_importable() {
    let run = run("import statistics\nx = 1\nimport requests").await;
    let error = run.error.expect("the import fails");
    assert_eq!(error.exception.as_deref(), Some("ModuleNotFoundError"));
    assert_eq!(error.line, Some(3));
    assert!(
        error.message.contains("programs can import:"),
        "{}",
        error.message
    );
    assert!(error.message.contains("statistics"), "{}", error.message);
    assert!(error.traceback.contains("line 3"), "{}", error.traceback);
}

#[tokio::test]
async fn a_missing_feature_comes_with_a_hint_to_fix_the_program() {
    let run = run("class NotFound(Exception):\n    pass").await;
    let error = run.error.expect("inheritance is not supported");
    assert!(
        error
            .message
            .contains("hint: classes cannot have base classes"),
        "{}",
        error.message
    );
}

/// Exercises the served modules (and `round`) over many data sets (made by a fixed linear
/// congruential generator, so both interpreters see the same), printing every
/// result's `repr`.
const SERVED_MODULES_PROGRAM: &str = r#"
import statistics, heapq, operator, pprint, textwrap, string, io, csv
seed = 12345
def draw(n, floats):
    global seed
    out = []
    for _ in range(n):
        seed = (seed * 1103515245 + 12345) % 2147483648
        out.append(seed % 10000 / 100 if floats else seed % 50 - 10)
    return out
for size in [1, 2, 3, 4, 7, 10, 25]:
    for floats in [False, True]:
        xs = draw(size, floats)
        print(size, floats, statistics.mean(xs), statistics.median(xs), statistics.median_low(xs),
              statistics.median_high(xs), statistics.mode(xs), statistics.multimode(xs)[:3], statistics.fmean(xs))
        if size > 1:
            print(statistics.variance(xs), statistics.pvariance(xs), round(statistics.stdev(xs), 9),
                  round(statistics.pstdev(xs), 9), statistics.quantiles(xs), statistics.quantiles(xs, n=10, method="inclusive"))
        h = list(xs)
        heapq.heapify(h)
        heapq.heappush(h, 42)
        popped = [heapq.heappop(h) for _ in range(min(3, len(h)))]
        print(popped, h, heapq.nlargest(3, xs), heapq.nsmallest(2, xs, key=lambda v: -v))
rows = [{"name": n, "score": s, "team": t} for n, s, t in zip("abcdefg", draw(7, False), "xyxyxyx")]
print(sorted(rows, key=operator.itemgetter("team", "score")), list(map(operator.itemgetter("name"), rows)))
print([round(x / 7, 2) for x in draw(30, True)], round(2.675, 2), round(495.155, 2), round(7.5), round(0.125, 2), round(1234.5, -1))
print(operator.add(2, 3), operator.mul(4, 5), operator.truediv(7, 2), operator.neg(3), operator.contains([1, 2], 2))
pprint.pprint(rows)
pprint.pprint({"teams": {"x": [r["name"] for r in rows if r["team"] == "x"], "y": ("tuple", 1)}, "n": len(rows)}, width=40)
print(pprint.pformat(list(range(40))))
text = "The quick brown fox jumps over the lazy dog and keeps running far away. " * 3
print(textwrap.wrap(text, 30), textwrap.fill(text, 50), textwrap.shorten(text, 40), textwrap.dedent("  a\n    b\n  c"))
print(string.ascii_letters, string.digits, string.punctuation, string.capwords("hello big world"))
buffer = io.StringIO()
writer = csv.writer(buffer)
writer.writerow(["name", "score"])
for r in rows:
    writer.writerow([r["name"], r["score"]])
print(repr(buffer.getvalue()))
print(list(csv.DictReader(io.StringIO(buffer.getvalue())))[:2], io.StringIO("a\nb\n").readlines())
"#;

#[tokio::test]
async fn the_served_modules_print_what_cpython_prints() {
    let cpython = std::process::Command::new("python3")
        .args(["-c", SERVED_MODULES_PROGRAM])
        .output()
        .expect("python3 runs");
    assert!(
        cpython.status.success(),
        "{}",
        String::from_utf8_lossy(&cpython.stderr)
    );
    let run = run(SERVED_MODULES_PROGRAM).await;
    assert!(run.error.is_none(), "{:?}", run.error);
    let expected = String::from_utf8(cpython.stdout).unwrap();
    for (line, (got, want)) in run.printed.lines().zip(expected.lines()).enumerate() {
        assert_eq!(got, want, "line {} differs", line + 1);
    }
    assert_eq!(run.printed.lines().count(), expected.lines().count());
}
