//! A served call counted in instructions, under callgrind, which counts every
//! instruction of every thread of a server whatever the machine's load.
//!
//! - `--instructions N`: the bare rmcp server beside the gate on its in-memory
//!   store and `toolgate serve` (SQLite store, durable audit), and the ratio of
//!   each to the first: the count the load generator's rates are read
//!   against. The bare server and the in-memory gate are this bench's binary,
//!   on the system allocator; `toolgate serve` runs on mimalloc, so the
//!   difference between the last two is not the durable store's alone.
//! - `--telemetry --instructions N`: `toolgate serve` with telemetry off and on
//!   (spans exported over OTLP/HTTP to the bench's sink, `--metrics` on, not
//!   scraped).
//!
//! One client makes warm-up calls; once they have settled (their spans gone
//! out, where telemetry is on), the counts are zeroed, the client makes N
//! calls, and once those have settled too, the counts are dumped: a call's
//! figure counts every thread the call touched, an exporter's too.
//!
//! The dumps are written to the directory `$CALLGRIND_OUT` names, to read
//! with `callgrind_annotate`, else beside the servers' state and removed.
//!
//! Needs `valgrind` (`callgrind_control` comes with it). A server under
//! callgrind runs about fifty times slower: 1,200 calls take a few minutes on a
//! two-core machine.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Caller, Lifecycle, SPANS, spawn};

/// Calls made before counting: the server's caches, pools and the exporter's
/// first batch are warm.
const WARM_UP: u64 = 200;

/// Longer than the batch processor's delay (5 s), so every span of the calls
/// before has been exported.
const EXPORTED: Duration = Duration::from_secs(7);

/// Long enough for a server without an exporter to finish what a call left
/// behind (its audit's group commit, a session's touch).
const SETTLED: Duration = Duration::from_secs(1);

/// A server to count: its name, how to start it (after `valgrind`'s own
/// arguments), and how long its calls take to settle.
struct Counted {
    name: String,
    program: Vec<String>,
    env: Vec<(&'static str, String)>,
    settle: Duration,
}

/// The bare rmcp server, the gate on its in-memory store and `toolgate serve`,
/// in each lifecycle, and their ratios to the first.
pub async fn versus_bare(
    toolgate: &str,
    spec: &Path,
    dir: &Path,
    lifecycles: &[Lifecycle],
    calls: u64,
) {
    let bare = std::env::current_exe().expect("the bench knows its own path");
    println!(
        "instructions a tools/call on one mock tool, counted by callgrind over {calls} calls after {WARM_UP} warm-up calls, one client"
    );
    for &lifecycle in lifecycles {
        let servers = [
            Counted {
                name: "bare rmcp".into(),
                program: vec![bare.display().to_string(), "bare".into()],
                env: Vec::new(),
                settle: SETTLED,
            },
            Counted {
                name: "gate, memory store".into(),
                program: vec![
                    bare.display().to_string(),
                    "memory".into(),
                    spec.display().to_string(),
                ],
                env: Vec::new(),
                settle: SETTLED,
            },
            served(
                toolgate,
                spec,
                dir,
                &format!("{}-serve", lifecycle.name()),
                false,
                None,
            ),
        ];
        let [bare, memory, gate] = count_each(&servers, lifecycle, dir, calls).await[..] else {
            unreachable!("three servers counted")
        };
        println!(
            "{:9} toolgate serve / bare rmcp: {:.2}×, the gate in memory / bare rmcp: {:.2}×",
            lifecycle.name(),
            gate / bare,
            memory / bare,
        );
    }
}

/// `toolgate serve` with telemetry off and on, in each lifecycle.
pub async fn telemetry(
    toolgate: &str,
    spec: &Path,
    dir: &Path,
    sink: std::net::SocketAddr,
    lifecycles: &[Lifecycle],
    calls: u64,
) {
    println!(
        "instructions a tools/call on one mock tool, counted by callgrind over {calls} calls after {WARM_UP} warm-up calls, one client"
    );
    for &lifecycle in lifecycles {
        let servers = [false, true].map(|on| {
            let state = if on { "on" } else { "off" };
            let name = format!("{}-telemetry-{state}", lifecycle.name());
            served(toolgate, spec, dir, &name, on, on.then_some(sink))
        });
        let [off, on] = count_each(&servers, lifecycle, dir, calls).await[..] else {
            unreachable!("two servers counted")
        };
        println!(
            "{:9} telemetry costs {:+.1}k instructions a call ({:+.1}%)",
            lifecycle.name(),
            (on - off) / 1e3,
            (on / off - 1.0) * 100.0
        );
    }
}

/// `toolgate serve --http` on the spec, its state under `dir/NAME-state`,
/// with `--metrics` and spans exported to `sink` when given.
fn served(
    toolgate: &str,
    spec: &Path,
    dir: &Path,
    name: &str,
    metrics: bool,
    sink: Option<std::net::SocketAddr>,
) -> Counted {
    let mut program: Vec<String> = [toolgate, "serve", "--http", "127.0.0.1:0", "-f"]
        .map(String::from)
        .into();
    program.push(spec.display().to_string());
    program.push("--state-dir".into());
    program.push(dir.join(format!("{name}-state")).display().to_string());
    if metrics {
        program.push("--metrics".into());
    }
    let env = sink.map_or_else(Vec::new, |sink| {
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{sink}")),
            ("OTEL_SERVICE_NAME", "mcp_serve_bench".to_owned()),
        ]
    });
    Counted {
        name: format!("toolgate serve ({name})"),
        program,
        env,
        settle: if sink.is_some() { EXPORTED } else { SETTLED },
    }
}

/// Each server's instructions a call, printed as counted.
async fn count_each(servers: &[Counted], lifecycle: Lifecycle, dir: &Path, calls: u64) -> Vec<f64> {
    let mut counts = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let out = std::env::var_os("CALLGRIND_OUT")
            .map_or_else(|| dir.to_owned(), Into::into)
            .join(format!("{}-{i}.callgrind", lifecycle.name()));
        let mut command = Command::new("valgrind");
        command
            .args(["--tool=callgrind", "--dump-instr=no"])
            .arg(format!("--callgrind-out-file={}", out.display()))
            .args(&server.program)
            .envs(server.env.iter().map(|(k, v)| (k, v)));
        let (mut child, url) = spawn(command);
        let pid = child.id().to_string();
        let caller = Caller::connect(lifecycle, &url, 0, None).await;
        for n in 1..=WARM_UP {
            caller.call(n, "lookup_order", format!("A-0-{n}")).await;
        }
        tokio::time::sleep(server.settle).await;
        callgrind_control(&["--zero", &pid]);
        let spans_before = SPANS.load(Ordering::Relaxed);
        for n in WARM_UP + 1..=WARM_UP + calls {
            caller.call(n, "lookup_order", format!("A-0-{n}")).await;
        }
        tokio::time::sleep(server.settle).await;
        callgrind_control(&["--dump", &pid]);
        let spans = SPANS.load(Ordering::Relaxed) - spans_before;
        caller.close().await;
        let _ = child.kill();
        let _ = child.wait();
        let per_call = dumped_instructions(&out) as f64 / calls as f64;
        let exported = if spans > 0 {
            format!("   ({spans} spans exported)")
        } else {
            String::new()
        };
        println!(
            "{:9} {:40} {:8.1}k instructions a call{exported}",
            lifecycle.name(),
            server.name,
            per_call / 1e3,
        );
        counts.push(per_call);
    }
    counts
}

fn callgrind_control(args: &[&str]) {
    let status = Command::new("callgrind_control")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("callgrind_control runs (it comes with valgrind)");
    assert!(status.success(), "callgrind_control {args:?} failed");
}

/// The instructions counted since the counts were zeroed: the `summary:` line
/// of the dump `callgrind_control --dump` wrote, `OUT.1` beside the
/// `--callgrind-out-file` `OUT`.
fn dumped_instructions(out: &Path) -> u64 {
    let dump = format!("{}.1", out.display());
    let text = std::fs::read_to_string(&dump)
        .unwrap_or_else(|e| panic!("callgrind wrote no dump {dump}: {e}"));
    text.lines()
        .find_map(|line| line.strip_prefix("summary:"))
        .and_then(|total| total.trim().parse().ok())
        .unwrap_or_else(|| panic!("no summary line in {dump}"))
}
