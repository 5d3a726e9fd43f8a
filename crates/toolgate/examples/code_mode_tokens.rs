//! What offering tools costs a model's context, in tokens: the JSON tool
//! definitions of two APIs (OpenAI Chat Completions and Anthropic Messages
//! `tools`) against code mode's single `run_code` tool, whose description
//! carries the Python stubs.
//!
//! Counted with OpenAI's `o200k_base` encoding (the GPT-4o and later models'),
//! for the BFCL function corpus (tests/data/bfcl/functions.jsonl) and the helpdesk
//! example (examples/helpdesk/toolgate.yaml), each for the operator, who may call
//! every tool the policy does not deny (both sides offer the same tools).
//!
//! ```text
//! cargo run --release -p toolgate --example code_mode_tokens
//! ```

use std::path::Path;
use std::sync::Arc;

use toolgate::code_mode::run_code_tool;
use toolgate::wire::{self, ImportFormat, RenderOptions, Target};
use toolgate::{
    Catalog, Decision, Gate, MemoryGateStore, Principal, ToolDescriptor, spec::SpecSource,
};
use toolgate_core::spec::SpecFile;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let corpus = std::fs::read_to_string(root.join("tests/data/bfcl/functions.jsonl"))?;
    let bfcl = SpecFile {
        tools: wire::import_tools(ImportFormat::Bfcl, &corpus)?.tools,
        ..SpecFile::default()
    };
    let source = SpecSource::read(root.join("examples/helpdesk/toolgate.yaml"))?;
    let helpdesk = source
        .checked
        .spec
        .ok_or("the helpdesk spec does not load")?;
    let bpe = tiktoken_rs::o200k_base()?;
    let tokens = |text: &str| bpe.encode_ordinary(text).len();

    println!("o200k_base tokens; `tools` as sent (compact JSON)");
    println!(
        "{:<10} {:<10} {:>6} {:>12} {:>10} {:>8}",
        "spec", "api", "tools", "JSON tools", "code mode", "ratio"
    );
    for (label, spec) in [("bfcl", &bfcl), ("helpdesk", &helpdesk)] {
        let gate = Gate::from_spec(
            spec,
            "toolgate.yaml",
            &Catalog::new(),
            Arc::new(MemoryGateStore::default()),
        )?;
        let principal = Principal::operator();
        let offered: Vec<ToolDescriptor> = gate
            .catalog()
            .iter()
            .map(|tool| tool.descriptor().clone())
            .filter(|d| gate.policy().decide(d, &principal).decision != Decision::Deny)
            .collect();
        let run_code = run_code_tool(&gate, "tokens", &principal, Some(spec))?;
        for (api, target) in [
            ("openai", Target::OpenAiChat),
            ("anthropic", Target::Anthropic),
        ] {
            let render = |tools: &[ToolDescriptor]| {
                let rendered = wire::render(target, tools, &[], RenderOptions::default());
                serde_json::to_string(&rendered.tools).unwrap_or_default()
            };
            let json = tokens(&render(&offered));
            let code = tokens(&render(std::slice::from_ref(&run_code)));
            println!(
                "{label:<10} {api:<10} {:>6} {json:>12} {code:>10} {:>7.2}x",
                offered.len(),
                json as f64 / code as f64
            );
        }
    }
    Ok(())
}
