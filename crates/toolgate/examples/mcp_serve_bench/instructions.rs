//! What telemetry costs a call, counted in instructions (`--telemetry
//! --instructions N`): the same `toolgate serve` with telemetry off and on (spans
//! exported over OTLP/HTTP to the bench's sink, `--metrics` on, not scraped), each
//! run under callgrind, which counts every instruction of every thread of the
//! server whatever the machine's load. One client makes warm-up calls; once
//! their spans have gone out, the counts are zeroed, the client makes N calls,
//! and once their spans have gone out too, the counts are dumped: a call's
//! figure counts the exporter's thread as well as the call's own path.
//!
//! Needs `valgrind` (`callgrind_control` comes with it). A server under
//! callgrind runs about fifty times slower: each server's 1,200 calls took
//! about five minutes on a two-core machine.

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

/// Counts both servers' instructions a call in each lifecycle and prints them
/// side by side.
pub async fn compare(
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
        let mut counted = Vec::new();
        for telemetry in [false, true] {
            let state = if telemetry { "on" } else { "off" };
            let name = format!("{}-{state}", lifecycle.name());
            let out = dir.join(format!("{name}.callgrind"));
            let mut command = Command::new("valgrind");
            command
                .args(["--tool=callgrind", "--dump-instr=no"])
                .arg(format!("--callgrind-out-file={}", out.display()))
                .args([toolgate, "serve", "--http", "127.0.0.1:0", "-f"])
                .arg(spec)
                .arg("--state-dir")
                .arg(dir.join(format!("{name}-state")));
            if telemetry {
                command
                    .arg("--metrics")
                    .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{sink}"))
                    .env("OTEL_SERVICE_NAME", "mcp_serve_bench");
            }
            let (mut child, url) = spawn(command);
            let pid = child.id().to_string();
            let caller = Caller::connect(lifecycle, &url, 0, None).await;
            for n in 1..=WARM_UP {
                caller.call(n, format!("A-0-{n}")).await;
            }
            tokio::time::sleep(EXPORTED).await;
            callgrind_control(&["--zero", &pid]);
            let spans_before = SPANS.load(Ordering::Relaxed);
            for n in WARM_UP + 1..=WARM_UP + calls {
                caller.call(n, format!("A-0-{n}")).await;
            }
            tokio::time::sleep(EXPORTED).await;
            callgrind_control(&["--dump", &pid]);
            let spans = SPANS.load(Ordering::Relaxed) - spans_before;
            caller.close().await;
            let _ = child.kill();
            let _ = child.wait();
            let per_call = dumped_instructions(&out) as f64 / calls as f64;
            println!(
                "{:9} telemetry {state:3}  {:8.1}k instructions a call   ({spans} spans exported)",
                lifecycle.name(),
                per_call / 1e3,
            );
            counted.push(per_call);
        }
        let (off, on) = (counted[0], counted[1]);
        println!(
            "{:9} telemetry costs {:+.1}k instructions a call ({:+.1}%)",
            lifecycle.name(),
            (on - off) / 1e3,
            (on / off - 1.0) * 100.0
        );
    }
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
