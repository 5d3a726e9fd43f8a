//! The `toolgate` command.

use clap::Parser;

/// The tool layer between language models and the tools they call.
#[derive(Parser)]
#[command(name = "toolgate", version, about)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
}
