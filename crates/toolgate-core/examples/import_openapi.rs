//! Times an OpenAPI import: `cargo run --release -p toolgate-core --example
//! import_openapi -- api.github.com.json` prints the tool count and the time the
//! import took (reading the files included), best of three runs.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use toolgate_core::rest_import::{RestImportOptions, Sources, import_openapi};

struct Dir(PathBuf);

impl Sources for Dir {
    fn read(&self, path: &str) -> Result<String, String> {
        std::fs::read_to_string(self.0.join(path)).map_err(|e| e.to_string())
    }
}

fn main() {
    let Some(file) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: import_openapi FILE");
        std::process::exit(2);
    };
    let dir = Dir(file.parent().map(PathBuf::from).unwrap_or_default());
    let name = file
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut best = Duration::MAX;
    let mut tools = 0;
    for _ in 0..3 {
        let started = Instant::now();
        match import_openapi(&name, &dir, &RestImportOptions::default()) {
            Ok(imported) => tools = imported.spec.tools.len(),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
        best = best.min(started.elapsed());
    }
    println!("{tools} tools in {} ms", best.as_millis());
}
