//! A code-mode worker and nothing else: `toolgate::code_mode::WorkerCommand::program`
//! points at this binary.

fn main() -> std::process::ExitCode {
    toolgate::code_mode::worker_main()
}
