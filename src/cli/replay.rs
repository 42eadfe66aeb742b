//! `agentci replay`: serve the cassettes back with no network and score the cases.

use crate::error::{ExitStatus, Result};
use crate::run::RunMode;
use crate::vcr::proxy::Pace;

use super::run_args::RunArgs;

/// Arguments of `agentci replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Evaluate the committed cassettes without starting the agent (answer from the `_end` line).
    #[arg(long)]
    cassettes_only: bool,
    /// Replay speed: instant, or recorded (honour the recorded event offsets).
    #[arg(long, value_enum, default_value = "instant")]
    pace: Pace,
}

/// Runs `agentci replay`.
pub fn run(args: ReplayArgs) -> Result<ExitStatus> {
    let spec = args.run.load_spec()?;
    let mode = if args.cassettes_only {
        RunMode::CassettesOnly
    } else {
        RunMode::Replay
    };
    let mut opts = args.run.options(mode, &spec)?;
    opts.pace = args.pace;
    args.run.execute(&spec, &opts)
}
