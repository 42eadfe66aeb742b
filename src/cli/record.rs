//! `agentci record`: run each case's agent against the live APIs through the recording proxy.

use crate::error::{ExitStatus, Result};
use crate::run::RunMode;
use crate::vcr::proxy::RecordMode;

use super::run_args::RunArgs;

/// Arguments of `agentci record`.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    #[command(flatten)]
    run: RunArgs,
    /// How an existing cassette is treated (vcrpy semantics).
    #[arg(long, value_enum, default_value = "all")]
    record_mode: RecordMode,
    /// Record this many trials per case (`<case>.jsonl`, `<case>.trial-2.jsonl`, …).
    #[arg(long, default_value_t = 1, value_name = "N")]
    trials: u32,
    /// Retries of a case that failed with an infrastructure error (429, 5xx, connection failure).
    #[arg(long, default_value_t = 2, value_name = "N")]
    retries: u32,
    /// Connect to URL whenever the agent asks for HOST, recording it as HOST (repeatable);
    /// e.g. api.openai.com=https://127.0.0.1:8443 records a test double or gateway as OpenAI.
    #[arg(long = "upstream-override", value_name = "HOST=URL")]
    upstream_overrides: Vec<String>,
}

/// Runs `agentci record`.
pub fn run(args: RecordArgs) -> Result<ExitStatus> {
    let spec = args.run.load_spec()?;
    let mut opts = args.run.options(RunMode::Record, &spec)?;
    opts.record_mode = args.record_mode;
    opts.trials = args.trials.max(1);
    opts.retries = args.retries;
    opts.upstream_overrides = super::proxy::parse_overrides(&args.upstream_overrides)?;
    args.run.execute(&spec, &opts)
}
