//! `agentci save`: a stored run's traces become a baseline version.

use std::path::PathBuf;

use crate::baseline::{BaselineStore, SaveOutcome, SaveRequest};
use crate::error::{ExitStatus, Result};
use crate::run::RunStore;
use crate::run::store::DEFAULT_STORE;
use crate::spec::Filter;

/// Arguments of `agentci save`.
#[derive(Debug, clap::Args)]
pub struct SaveArgs {
    /// The spec file.
    #[arg(long, short = 's', value_name = "SPEC")]
    spec: PathBuf,
    /// The version to write (`<baseline_dir>/<agent>/<V>/`).
    #[arg(long, value_name = "V")]
    version: String,
    /// The stored run to save: an id, or `latest`.
    #[arg(long, default_value = "latest")]
    run: String,
    /// Save only this case (repeatable).
    #[arg(long = "case", value_name = "ID")]
    cases: Vec<String>,
    /// Save cases that fail the correctness precheck.
    #[arg(long)]
    force_save: bool,
    /// Replace an existing version.
    #[arg(long)]
    overwrite: bool,
}

/// Runs `agentci save`.
pub fn run(args: SaveArgs) -> Result<ExitStatus> {
    let spec = crate::spec::load(&args.spec, &Filter::default())?;
    let run = RunStore::new(DEFAULT_STORE).load(&args.run)?;
    if run.spec_hash != spec.hash {
        // The precheck reads the run's own verdicts, which the changed spec may no longer agree with.
        eprintln!(
            "warning: run {} was scored with a different version of {}; the precheck uses its verdicts",
            run.id,
            args.spec.display()
        );
        eprintln!(
            "hint: re-score it first with `agentci judge-only --spec {} --run {}`",
            args.spec.display(),
            run.id
        );
    }
    let request = SaveRequest {
        version: args.version.clone(),
        cases: args.cases,
        force: args.force_save,
        overwrite: args.overwrite,
        captured_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    match BaselineStore::for_spec(&spec).save(&spec, &run, &request)? {
        SaveOutcome::Saved(dir) => {
            println!(
                "saved baseline {} from run {} in {}",
                args.version,
                run.id,
                dir.display()
            );
            Ok(ExitStatus::Success)
        }
        SaveOutcome::PrecheckFailed(failing) => {
            eprintln!(
                "error: refusing to save {}: {} case(s) fail the correctness precheck",
                args.version,
                failing.len()
            );
            for p in &failing {
                eprintln!("  {}:", p.case);
                for reason in &p.reasons {
                    eprintln!("    ✗ {reason}");
                }
            }
            eprintln!("hint: fix the agent and re-run, or save anyway with --force-save");
            Ok(ExitStatus::Failure)
        }
        SaveOutcome::Exists(dir) => {
            eprintln!(
                "error: baseline version {} already exists ({})",
                args.version,
                dir.display()
            );
            eprintln!("hint: pick another version name, or replace it with --overwrite");
            Ok(ExitStatus::Failure)
        }
    }
}
