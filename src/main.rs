//! The `agentci` binary: parse arguments, call the library, map errors to exit codes.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

// Replay and scoring build and drop many small JSON values: with the system
// allocator a 1,000-case replay spent ~44% of its time in malloc/free, and
// mimalloc makes it ~1.7x faster (benches/runner.rs, docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = agentci::cli::Cli::parse();
    match agentci::cli::run(cli) {
        Ok(status) => ExitCode::from(status.code()),
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            // A closed stderr leaves nothing to report to; the exit code still tells.
            let _ = writeln!(stderr, "error: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                let _ = writeln!(stderr, "  caused by: {cause}");
                source = cause.source();
            }
            if let Some(hint) = err.hint() {
                let _ = writeln!(stderr, "hint: {hint}");
            }
            ExitCode::from(err.exit_status().code())
        }
    }
}
