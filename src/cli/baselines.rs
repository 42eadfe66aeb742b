//! `agentci baselines`: the saved versions of a spec's agent.

use std::path::PathBuf;

use crate::baseline::BaselineStore;
use crate::error::{ExitStatus, Result};
use crate::spec::Filter;

/// Arguments of `agentci baselines`.
#[derive(Debug, clap::Args)]
pub struct BaselinesArgs {
    /// The spec file.
    #[arg(long, short = 's', value_name = "SPEC")]
    spec: PathBuf,
}

/// Runs `agentci baselines`.
pub fn run(args: BaselinesArgs) -> Result<ExitStatus> {
    let spec = crate::spec::load(&args.spec, &Filter::default())?;
    let store = BaselineStore::for_spec(&spec);
    let versions = store.list()?;
    if versions.is_empty() {
        println!("no baselines for {} yet", spec.spec.agent);
        println!(
            "save one with: agentci save --spec {} --version V",
            args.spec.display()
        );
        return Ok(ExitStatus::Success);
    }
    println!(
        "{:<20} {:>5}  {:<22} PRECHECK",
        "VERSION", "CASES", "CAPTURED"
    );
    for v in versions {
        let default = if spec.spec.baseline.as_deref() == Some(v.version.as_str()) {
            "  (default)"
        } else {
            ""
        };
        println!(
            "{:<20} {:>5}  {:<22} {}{default}",
            v.version,
            v.cases,
            v.captured_at,
            if v.precheck_passed {
                "passed"
            } else {
                "FAILED (forced)"
            }
        );
    }
    Ok(ExitStatus::Success)
}
