//! `agentci judge-only`: re-score a stored run with the current spec, without
//! the agent or the proxy.

use crate::error::{ExitStatus, Result};
use crate::run::store::DEFAULT_STORE;
use crate::run::{RunMode, RunStore};

use super::run_args::{RunArgs, finish_run, runtime};

/// Arguments of `agentci judge-only`.
#[derive(Debug, clap::Args)]
pub struct JudgeOnlyArgs {
    #[command(flatten)]
    run_args: RunArgs,
    /// The stored run to re-score: an id, or `latest`.
    #[arg(long, default_value = "latest")]
    run: String,
    /// Forbid live judge calls: every verdict must come from the cache.
    #[arg(long)]
    offline: bool,
}

/// Runs `agentci judge-only`.
pub fn run(args: JudgeOnlyArgs) -> Result<ExitStatus> {
    let spec = args.run_args.load_spec()?;
    let mut opts = args.run_args.options(RunMode::JudgeOnly, &spec)?;
    opts.judge_offline = args.offline;
    let stored = RunStore::new(DEFAULT_STORE).load(&args.run)?;
    let run = runtime()?.block_on(crate::run::runner::rescore(
        &spec,
        &opts,
        &stored,
        !args.run_args.cases.is_empty() || !args.run_args.tags.is_empty(),
    ))?;
    let a = &args.run_args;
    finish_run(&run, &a.format, a.quiet, &a.render_options(), a.keep)
}
