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
