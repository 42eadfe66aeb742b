//! `agentci judge-only`: re-score a stored run with the current spec, without
//! the agent or the proxy.

use std::time::Instant;

use crate::error::{Error, ExitStatus, Result};
use crate::run::record::RUN_FORMAT;
use crate::run::runner::{evaluate_into, judge_for};
use crate::run::store::{DEFAULT_STORE, new_run_id};
use crate::run::{CaseStatus, RunMode, RunRecord, RunStore};

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
    if stored.agent != spec.spec.agent {
        return Err(Error::other(
            format!(
                "run {} is of agent {}, the spec is of agent {}",
                stored.id, stored.agent, spec.spec.agent
            ),
            Some("pass the spec the run was made with".into()),
        ));
    }
    let clock = Instant::now();
    let judge = judge_for(&spec, &opts);
    let mut cases = Vec::new();
    let mut warnings = Vec::new();
    let rt = runtime()?;
    for old in &stored.cases {
        let Some(case) = spec.cases.iter().find(|c| c.id == old.case_id) else {
            if args.run_args.cases.is_empty() && args.run_args.tags.is_empty() {
                warnings.push(format!(
                    "case {} is no longer in the spec; left out",
                    old.case_id
                ));
            }
            continue;
        };
        let mut case_run = old.clone();
        case_run.file = case.file.display().to_string();
        case_run.line = case.line;
        case_run.result = None;
        case_run.warnings.retain(|w| !w.starts_with("trace: "));
        match old.trace.clone() {
            Some(trace) => {
                case_run.error = None;
                rt.block_on(evaluate_into(
                    &mut case_run,
                    &spec,
                    &opts,
                    &judge,
                    case,
                    trace,
                ));
            }
            None => {
                // The stored run never got a trace (miss, crash): nothing to re-score.
                case_run.status = CaseStatus::Error;
            }
        }
        cases.push(case_run);
    }
    for case in &spec.cases {
        if !stored.cases.iter().any(|c| c.case_id == case.id) {
            warnings.push(format!(
                "case {} is new in the spec and not in run {}; record or replay it",
                case.id, stored.id
            ));
        }
    }
    let run = RunRecord {
        format: RUN_FORMAT,
        id: new_run_id(),
        tool_version: crate::VERSION.to_string(),
        agent: spec.spec.agent.clone(),
        spec_path: spec.path.display().to_string(),
        spec_hash: spec.hash.clone(),
        mode: RunMode::JudgeOnly,
        started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        duration_ms: clock.elapsed().as_millis() as u64,
        shard: stored.shard.clone(),
        baseline: opts.baseline.as_ref().map(|(v, _)| v.clone()),
        cases,
        warnings,
    };
    finish_run(
        &run,
        &args.run_args.format,
        args.run_args.quiet,
        &args.run_args.render_options(),
        args.run_args.keep,
    )
}
