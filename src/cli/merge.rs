//! `agentci merge RUN_JSON...`: join shard runs into one run and report.

use std::path::PathBuf;

use crate::error::{Error, ExitStatus, Result};
use crate::run::RunRecord;
use crate::run::record::RUN_FORMAT;
use crate::run::store::{load_run_file, new_run_id};

use super::run_args::finish_run;

/// Arguments of `agentci merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// run.json files of the shards (e.g. downloaded CI artifacts).
    #[arg(required = true, value_name = "RUN_JSON")]
    runs: Vec<PathBuf>,
    /// Reports, as for `replay`.
    #[arg(long, default_value = "console", value_name = "FORMATS")]
    format: String,
    /// A case with trials passes when at least this share of its trials passed (default: all).
    #[arg(long, value_name = "R")]
    min_pass_rate: Option<f64>,
    /// Keep this many runs in .agentci/runs.
    #[arg(long, default_value_t = 20, value_name = "N")]
    keep: usize,
    /// Only the summary line.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Joins runs of the same spec into one; cases in spec order.
pub fn merge_runs(runs: Vec<RunRecord>) -> Result<RunRecord> {
    let mut iter = runs.into_iter();
    let first = iter
        .next()
        .ok_or_else(|| Error::other("nothing to merge", None))?;
    let mut merged = RunRecord {
        id: new_run_id(),
        format: RUN_FORMAT,
        shard: None,
        warnings: Vec::new(),
        ..first.clone()
    };
    merged.warnings.extend(first.warnings);
    for run in iter {
        if run.agent != merged.agent || run.spec_hash != merged.spec_hash {
            return Err(Error::other(
                format!(
                    "run {} ({}, {}) was made with another spec than run {} ({}, {})",
                    run.id, run.agent, run.spec_hash, first.id, merged.agent, merged.spec_hash
                ),
                Some("merge only the shards of one run of one spec".into()),
            ));
        }
        merged.duration_ms = merged.duration_ms.max(run.duration_ms);
        merged.started_at = merged.started_at.min(run.started_at);
        merged.cases.extend(run.cases);
        merged.warnings.extend(run.warnings);
    }
    merged.cases.sort_by(|a, b| {
        (&a.file, a.line, &a.case_id, a.trial).cmp(&(&b.file, b.line, &b.case_id, b.trial))
    });
    let before = merged.cases.len();
    merged
        .cases
        .dedup_by(|a, b| a.case_id == b.case_id && a.trial == b.trial);
    if merged.cases.len() != before {
        return Err(Error::other(
            "the runs overlap: the same case appears in more than one of them",
            Some("merge the runs of distinct shards (--shard 1/n … n/n)".into()),
        ));
    }
    Ok(merged)
}

/// Runs `agentci merge`.
pub fn run(args: MergeArgs) -> Result<ExitStatus> {
    let runs = args
        .runs
        .iter()
        .map(|p| load_run_file(p))
        .collect::<Result<Vec<_>>>()?;
    let merged = merge_runs(runs)?;
    let render = crate::report::RenderOptions {
        color: crate::report::color_enabled(),
        verbose: false,
        min_pass_rate: args.min_pass_rate,
    };
    finish_run(&merged, &args.format, args.quiet, &render, args.keep)
}
