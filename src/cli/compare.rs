//! `agentci compare`: two stored runs, case by case and check by check.

use crate::baseline::compare;
use crate::error::{ExitStatus, Result};
use crate::run::RunStore;
use crate::run::store::{DEFAULT_STORE, load_run_file};

/// Arguments of `agentci compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Run A (the reference): an id, `latest`, or a run.json path.
    run_a: String,
    /// Run B: an id, `latest`, or a run.json path.
    run_b: String,
    /// Exit 1 when any case regressed.
    #[arg(long)]
    fail_on_regression: bool,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
}

fn load(run: &str) -> Result<crate::run::RunRecord> {
    let path = std::path::Path::new(run);
    if run.ends_with(".json") && path.is_file() {
        load_run_file(path)
    } else {
        RunStore::new(DEFAULT_STORE).load(run)
    }
}

/// Runs `agentci compare`.
pub fn run(args: CompareArgs) -> Result<ExitStatus> {
    let comparison = compare::compare(&load(&args.run_a)?, &load(&args.run_b)?);
    if args.json {
        let text = serde_json::to_string_pretty(&comparison)
            .map_err(|e| crate::error::Error::other(format!("cannot serialize: {e}"), None))?;
        println!("{text}");
    } else {
        print!(
            "{}",
            compare::console(&comparison, crate::report::color_enabled())
        );
    }
    if args.fail_on_regression && comparison.regressed() > 0 {
        Ok(ExitStatus::Failure)
    } else {
        Ok(ExitStatus::Success)
    }
}
