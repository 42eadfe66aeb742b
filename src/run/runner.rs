//! The case runner: per case (and trial) a proxy on its own port, the agent
//! process, the cassette, the derived trace and the engine's verdict.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::judge::{Judge, JudgeOptions};
use crate::engine::{QueryResult, Status};
use crate::error::{Error, Result};
use crate::run::agent::{AgentInvocation, AgentOutcome, run_agent};
use crate::run::record::{CaseRun, CaseStatus, RUN_FORMAT, RunMode, RunRecord};
use crate::run::shard::Shard;
use crate::run::store::new_run_id;
use crate::spec::{AnswerSource, Case, LoadedSpec};
use crate::trace::{DeriveOptions, PriceTable, Trace, derive};
use crate::vcr::cassette::{Cassette, CassetteEnd, Exchange};
use crate::vcr::proxy::{Mode, Pace, Proxy, ProxyOptions, RecordMode};

/// How a run is carried out.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Record, replay or cassettes-only.
    pub mode: RunMode,
    /// Record mode for `record` (vcrpy semantics).
    pub record_mode: RecordMode,
    /// Parallel cases; default `runner.workers`.
    pub workers: Option<usize>,
    /// Trials per case when recording (replay finds the recorded trials on disk).
    pub trials: u32,
    /// Retries of a case whose failure came with an infrastructure error (record only).
    pub retries: u32,
    /// First retry delay; doubles each retry.
    pub retry_backoff: Duration,
    /// Extra CA certificates for upstream connections (`--upstream-ca`, `proxy.upstream_ca`).
    pub upstream_ca: Vec<PathBuf>,
    /// Prices (built-ins, `--prices`, spec `pricing`).
    pub prices: PriceTable,
    /// Every warning of the run itself is a failure.
    pub strict: bool,
    /// Cassettes recorded longer ago than this are warned about.
    pub max_age: Duration,
    /// Run one shard of the cases.
    pub shard: Option<Shard>,
    /// Replay pace.
    pub pace: Pace,
    /// `--sample-ensemble`.
    pub sample_ensemble: Option<f64>,
    /// Forbid live judge calls (verdicts must come from the cache).
    pub judge_offline: bool,
    /// Host → base URL connected to instead when recording (`--upstream-override`).
    pub upstream_overrides: std::collections::BTreeMap<String, String>,
    /// Baseline traces by case id, for baseline-dependent checks.
    pub baseline: Option<(String, std::collections::BTreeMap<String, Trace>)>,
}

impl RunOptions {
    /// Defaults for `mode`.
    pub fn new(mode: RunMode) -> RunOptions {
        RunOptions {
            mode,
            record_mode: RecordMode::All,
            workers: None,
            trials: 1,
            retries: 2,
            retry_backoff: Duration::from_millis(500),
            upstream_ca: Vec::new(),
            prices: PriceTable::builtin(),
            strict: false,
            max_age: Duration::from_secs(30 * 24 * 3600),
            shard: None,
            pace: Pace::default(),
            sample_ensemble: None,
            judge_offline: false,
            upstream_overrides: std::collections::BTreeMap::new(),
            baseline: None,
        }
    }
}

/// One unit of work: a case and a trial.
#[derive(Debug, Clone)]
struct Work {
    case: Case,
    trial: u32,
    cassette: PathBuf,
}

/// Where a case's cassette for `trial` lives: `<cassette_dir>/<agent>/<case>.jsonl`,
/// `<case>.trial-N.jsonl` for trials after the first.
pub fn cassette_path(spec: &LoadedSpec, case_id: &str, trial: u32) -> PathBuf {
    let dir = spec.spec.cassette_dir.join(&spec.spec.agent);
    if trial <= 1 {
        dir.join(format!("{case_id}.jsonl"))
    } else {
        dir.join(format!("{case_id}.trial-{trial}.jsonl"))
    }
}

/// Trials recorded on disk for a case (1 when only `<case>.jsonl` exists).
fn recorded_trials(spec: &LoadedSpec, case_id: &str) -> u32 {
    let mut n = 1;
    while cassette_path(spec, case_id, n + 1).is_file() {
        n += 1;
    }
    n
}

/// Called once per finished case, for progress output.
pub type Progress<'a> = &'a (dyn Fn(&CaseRun, usize, usize) + Sync);

/// Runs every selected case of `spec` and returns the run record (not yet stored).
pub async fn execute(
    spec: &LoadedSpec,
    opts: &RunOptions,
    progress: Progress<'_>,
) -> Result<RunRecord> {
    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let clock = Instant::now();
    if opts.mode != RunMode::CassettesOnly && spec.spec.runner.is_none() {
        return Err(Error::other(
            format!("{}: the spec has no `runner`, so the agent cannot be started", spec.path.display()),
            Some("add runner.command to the spec, or evaluate the committed cassettes with --cassettes-only".into()),
        ));
    }
    let mut work = Vec::with_capacity(spec.cases.len());
    for case in &spec.cases {
        if opts.shard.is_some_and(|s| !s.keeps(&case.id)) {
            continue;
        }
        let trials = match opts.mode {
            RunMode::Record => opts.trials.max(1),
            _ => recorded_trials(spec, &case.id),
        };
        for trial in 1..=trials {
            work.push(Work {
                case: case.clone(),
                trial,
                cassette: cassette_path(spec, &case.id, trial),
            });
        }
    }

    let judge = Arc::new(judge_for(spec, opts));
    let workers = opts
        .workers
        .or(spec.spec.runner.as_ref().map(|r| r.workers))
        .unwrap_or(4)
        .max(1);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(workers));
    let total = work.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let spec_arc = Arc::new(spec.clone());
    let opts_arc = Arc::new(opts.clone());
    let mut set = tokio::task::JoinSet::new();
    for (index, item) in work.into_iter().enumerate() {
        let semaphore = semaphore.clone();
        let judge = judge.clone();
        let spec = spec_arc.clone();
        let opts = opts_arc.clone();
        set.spawn(async move {
            // The semaphore is never closed, so acquire cannot fail.
            let _permit = semaphore.acquire_owned().await.ok();
            (index, run_case(&spec, &opts, &judge, item).await)
        });
    }
    let mut results: Vec<Option<CaseRun>> = vec![None; total];
    while let Some(joined) = set.join_next().await {
        let (index, case_run) =
            joined.map_err(|e| Error::other(format!("a case task panicked: {e}"), None))?;
        let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        progress(&case_run, n, total);
        results[index] = Some(case_run);
    }
    let cases: Vec<CaseRun> = results.into_iter().flatten().collect();
    Ok(new_record(spec, opts, started_at, clock, cases, Vec::new()))
}

/// A run record of `spec` under `opts`, started at `started_at`.
fn new_record(
    spec: &LoadedSpec,
    opts: &RunOptions,
    started_at: String,
    clock: Instant,
    cases: Vec<CaseRun>,
    warnings: Vec<String>,
) -> RunRecord {
    RunRecord {
        format: RUN_FORMAT,
        id: new_run_id(),
        tool_version: crate::VERSION.to_string(),
        agent: spec.spec.agent.clone(),
        spec_path: spec.path.display().to_string(),
        spec_hash: spec.hash.clone(),
        mode: opts.mode,
        started_at,
        duration_ms: clock.elapsed().as_millis() as u64,
        shard: opts.shard.map(|s| s.to_string()),
        baseline: opts.baseline.as_ref().map(|(v, _)| v.clone()),
        cases,
        warnings,
    }
}

/// Re-scores a stored run with the current spec (`judge-only`): no agent, no
/// proxy; the traces are the stored ones. Cases removed from the spec are left
/// out and cases new to it are named in the warnings.
/// `filtered`: the spec was loaded with `--case`/`--tags`, so absent cases are not news.
pub async fn rescore(
    spec: &LoadedSpec,
    opts: &RunOptions,
    stored: &RunRecord,
    filtered: bool,
) -> Result<RunRecord> {
    if stored.agent != spec.spec.agent {
        return Err(Error::other(
            format!(
                "run {} is of agent {}, the spec is of agent {}",
                stored.id, stored.agent, spec.spec.agent
            ),
            Some("pass the spec the run was made with".into()),
        ));
    }
    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let clock = Instant::now();
    let judge = judge_for(spec, opts);
    let mut cases = Vec::new();
    let mut warnings = Vec::new();
    for old in &stored.cases {
        let Some(case) = spec.cases.iter().find(|c| c.id == old.case_id) else {
            if !filtered {
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
                evaluate_into(&mut case_run, spec, opts, &judge, case, trace).await;
            }
            // The stored run never got a trace (miss, crash): nothing to re-score.
            None => case_run.status = CaseStatus::Error,
        }
        cases.push(case_run);
    }
    for case in &spec.cases {
        if !stored.cases.iter().any(|c| c.case_id == case.id) && !filtered {
            warnings.push(format!(
                "case {} is new in the spec and not in run {}; record or replay it",
                case.id, stored.id
            ));
        }
    }
    let mut record = new_record(spec, opts, started_at, clock, cases, warnings);
    record.shard = stored.shard.clone();
    Ok(record)
}

/// The judge for a run of `spec`: verdict cache beside the cassettes.
pub fn judge_for(spec: &LoadedSpec, opts: &RunOptions) -> Judge {
    let mut endpoints = crate::engine::judge::client::Endpoints::from_env();
    if opts.judge_offline {
        // Without keys or reachable URLs any live call fails; the cache must answer.
        endpoints.openai_api_key = None;
        endpoints.anthropic_api_key = None;
        endpoints.openai_base_url = "http://judge-offline.invalid/v1".into();
        endpoints.anthropic_base_url = "http://judge-offline.invalid".into();
    }
    Judge::new(
        spec.spec.judge_config.clone().unwrap_or_default(),
        JudgeOptions {
            endpoints,
            cache_dir: Some(spec.spec.cassette_dir.join(&spec.spec.agent)),
            sample_ensemble: opts.sample_ensemble,
            price: Some(judge_price(opts.prices.clone())),
        },
    )
}

/// Prices judge calls from the run's price table (the judge's cost is kept apart from the agent's).
fn judge_price(prices: PriceTable) -> crate::engine::judge::PriceFn {
    Arc::new(move |model: &str, input: u64, output: u64| {
        let (_, price) = prices.lookup(model)?;
        let usage = crate::trace::Usage {
            input_tokens: input,
            output_tokens: output,
            ..Default::default()
        };
        Some(PriceTable::cost(price, &usage))
    })
}

/// What one attempt at a case produced before evaluation.
struct Obtained {
    cassette: Cassette,
    warnings: Vec<String>,
    attempts: u32,
}

async fn run_case(spec: &LoadedSpec, opts: &RunOptions, judge: &Judge, work: Work) -> CaseRun {
    let mut case_run = CaseRun {
        case_id: work.case.id.clone(),
        trial: work.trial,
        query: work.case.query.query.clone(),
        tags: work.case.query.tags.clone(),
        file: work.case.file.display().to_string(),
        line: work.case.line,
        cassette: work.cassette.display().to_string(),
        status: CaseStatus::Error,
        error: None,
        attempts: 1,
        trace: None,
        result: None,
        warnings: Vec::new(),
    };
    let obtained = match opts.mode {
        RunMode::Record => record_case(spec, opts, &work).await,
        RunMode::Replay => replay_case(spec, opts, &work).await,
        RunMode::CassettesOnly | RunMode::JudgeOnly => read_case(spec, opts, &work),
    };
    let obtained = match obtained {
        Ok(o) => o,
        Err(failure) => {
            case_run.error = Some(failure.message);
            case_run.attempts = failure.attempts;
            return case_run;
        }
    };
    case_run.attempts = obtained.attempts;
    case_run.warnings = obtained.warnings;
    let trace = derive(&obtained.cassette, &derive_options(spec, opts));
    evaluate_into(&mut case_run, spec, opts, judge, &work.case, trace).await;
    case_run
}

/// Derivation settings from the spec and run options.
pub fn derive_options(spec: &LoadedSpec, opts: &RunOptions) -> DeriveOptions {
    DeriveOptions {
        prices: opts.prices.clone(),
        handoff_prefix: spec.spec.handoff_prefix.clone(),
        answer: spec
            .spec
            .runner
            .as_ref()
            .map(|r| r.answer)
            .unwrap_or(AnswerSource::Stdout),
    }
}

/// Scores `trace` for `case` and fills in the case's result and final status.
pub async fn evaluate_into(
    case_run: &mut CaseRun,
    spec: &LoadedSpec,
    opts: &RunOptions,
    judge: &Judge,
    case: &Case,
    trace: Trace,
) {
    let baseline = opts
        .baseline
        .as_ref()
        .and_then(|(_, traces)| traces.get(&case.id));
    let evaluated =
        crate::engine::evaluate(case, &trace, baseline, &spec.spec.handoff_prefix, judge).await;
    for warning in &trace.warnings {
        case_run.warnings.push(format!("trace: {warning}"));
    }
    case_run.trace = Some(trace);
    match evaluated {
        Ok(result) => {
            case_run.status = status_of(&result, &case_run.warnings, opts.strict);
            if opts.strict && !case_run.warnings.is_empty() && !result.hard_fail {
                case_run.error = None;
            }
            case_run.result = Some(result);
        }
        Err(e) => {
            case_run.status = CaseStatus::Error;
            case_run.error = Some(format!("[INFRA] {e}"));
        }
    }
}

/// The case status from the engine's verdict and the run's own warnings.
fn status_of(result: &QueryResult, warnings: &[String], strict: bool) -> CaseStatus {
    if result.hard_fail || (strict && !warnings.is_empty()) {
        CaseStatus::Fail
    } else if [
        result.correctness.status,
        result.path.status,
        result.cost.status,
    ]
    .contains(&Status::Warn)
        || !warnings.is_empty()
    {
        CaseStatus::Warn
    } else {
        CaseStatus::Pass
    }
}

/// A case that could not be obtained.
struct Failure {
    message: String,
    attempts: u32,
}

impl Failure {
    fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            attempts: 1,
        }
    }
}

/// Provider key variables given a placeholder when unset, where no real provider is reached.
const REPLAY_PLACEHOLDER_KEYS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
];

fn agent_env(
    spec: &LoadedSpec,
    work: &Work,
    mode: &str,
    placeholder_keys: bool,
    proxy_env: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let mut env = proxy_env;
    if let Some(runner) = &spec.spec.runner {
        env.extend(runner.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if placeholder_keys {
        // SDKs refuse to start without a key, and replay (pre-push hooks, PR CI)
        // runs where no key exists. Replay never reaches a provider (nor does a
        // recording redirected with --upstream-override to a test double), so a
        // placeholder is safe; a key that is set is left alone.
        for name in REPLAY_PLACEHOLDER_KEYS {
            if std::env::var_os(name).is_none() && !env.iter().any(|(k, _)| k == name) {
                env.push((name.to_string(), "agentci-replay-placeholder".into()));
            }
        }
    }
    env.push(("AGENTCI_QUERY".into(), work.case.query.query.clone()));
    env.push(("AGENTCI_CASE_ID".into(), work.case.id.clone()));
    env.push(("AGENTCI_MODE".into(), mode.into()));
    env.push(("AGENTCI_TRIAL".into(), work.trial.to_string()));
    env
}

fn invocation(spec: &LoadedSpec, env: Vec<(String, String)>) -> Result<AgentInvocation, Failure> {
    let runner = spec
        .spec
        .runner
        .as_ref()
        .ok_or_else(|| Failure::new("the spec has no runner"))?;
    Ok(AgentInvocation {
        command: runner.command.clone(),
        env,
        env_remove: Vec::new(),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        timeout: Duration::from_secs(runner.timeout_s.max(1)),
    })
}

fn proxy_options(
    spec: &LoadedSpec,
    opts: &RunOptions,
    work: &Work,
    cassette: PathBuf,
    mode: Mode,
) -> ProxyOptions {
    let mut po = ProxyOptions::new(cassette, mode);
    po.record_mode = opts.record_mode;
    po.pace = opts.pace;
    po.upstream_ca = opts.upstream_ca.clone();
    po.upstream_overrides = opts.upstream_overrides.clone();
    if let Some(proxy) = &spec.spec.proxy {
        po.routes = proxy.routes.clone();
        po.redact_body_fields = proxy.redact_body_fields.clone();
        po.ignore_body_fields = proxy.ignore_body_fields.clone();
        po.upstream_ca.extend(proxy.upstream_ca.iter().cloned());
    }
    po.case_id = Some(work.case.id.clone());
    po.agent = Some(spec.spec.agent.clone());
    po.query = Some(work.case.query.query.clone());
    po.spec_hash = Some(spec.hash.clone());
    po.trial = (work.trial > 1).then_some(work.trial);
    po
}

fn end_of(outcome: &AgentOutcome) -> CassetteEnd {
    CassetteEnd {
        exit_code: outcome.exit_code,
        answer: Some(outcome.answer()),
        duration_ms: outcome.duration_ms,
    }
}

/// What went wrong with the agent, with the tail of its stderr.
fn agent_failure(outcome: &AgentOutcome, timeout_s: u64) -> String {
    let what = if outcome.timed_out {
        format!("[AGENT] timed out after {timeout_s} s (process group killed)")
    } else {
        match outcome.exit_code {
            Some(code) => format!("[AGENT] exited with code {code}"),
            None => "[AGENT] killed by a signal".to_string(),
        }
    };
    let tail: Vec<&str> = outcome.stderr.lines().rev().take(5).collect();
    if tail.is_empty() {
        what
    } else {
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("{what}; stderr ends:\n{}", tail.join("\n"))
    }
}

/// Whether an exchange shows an infrastructure problem worth a retry.
fn is_infra(exchange: &Exchange) -> bool {
    let status = exchange.response.status;
    exchange.response.error.is_some()
        || exchange.response.truncated
        || status == 429
        || status >= 500
}

async fn record_case(
    spec: &LoadedSpec,
    opts: &RunOptions,
    work: &Work,
) -> Result<Obtained, Failure> {
    let timeout_s = spec.spec.runner.as_ref().map_or(120, |r| r.timeout_s);
    // Record into a scratch copy beside the cassette and rename it into place only
    // when the agent succeeded: a failed run never touches the committed cassette.
    let scratch = scratch_path(&work.cassette);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let _ = std::fs::remove_file(&scratch);
        if work.cassette.is_file() {
            std::fs::copy(&work.cassette, &scratch).map_err(|e| {
                Failure::new(format!("cannot copy {}: {e}", work.cassette.display()))
            })?;
        }
        if opts.record_mode == RecordMode::None && !work.cassette.is_file() {
            return Err(missing_cassette(spec, work));
        }
        let proxy = Proxy::start(proxy_options(
            spec,
            opts,
            work,
            scratch.clone(),
            Mode::Record,
        ))
        .await
        .map_err(|e| {
            let _ = std::fs::remove_file(&scratch);
            Failure::new(about_cassette(
                &format!("[INFRA] cannot start the proxy: {}", cassette_error(&e)),
                &scratch,
                work,
            ))
        })?;
        let placeholders = !opts.upstream_overrides.is_empty();
        let env = agent_env(spec, work, "record", placeholders, proxy.client_env());
        let outcome = match run_agent(&invocation(spec, env)?).await {
            Ok(o) => o,
            Err(e) => {
                let _ = proxy.finish(None).await;
                let _ = std::fs::remove_file(&scratch);
                return Err(Failure::new(e.to_string()));
            }
        };
        let report = proxy.finish(Some(end_of(&outcome))).await;
        let report = match report {
            Ok(r) => r,
            Err(e) => {
                let _ = std::fs::remove_file(&scratch);
                return Err(Failure {
                    message: about_cassette(&cassette_error(&e), &scratch, work),
                    attempts: attempt,
                });
            }
        };
        if !report.misses.is_empty() {
            // `once`/`none` replay an existing cassette: a miss there is the
            // finding, whatever the agent made of the 502 it got.
            let _ = std::fs::remove_file(&scratch);
            return Err(Failure {
                message: miss_report(spec, work, &report.misses),
                attempts: attempt,
            });
        }
        if outcome.succeeded() {
            if report.cassette_written {
                std::fs::rename(&scratch, &work.cassette).map_err(|e| Failure {
                    message: format!(
                        "cannot move the new cassette into {}: {e}",
                        work.cassette.display()
                    ),
                    attempts: attempt,
                })?;
            }
            let _ = std::fs::remove_file(&scratch);
            let mut cassette = Cassette::read(&work.cassette).map_err(|e| Failure {
                message: e.to_string(),
                attempts: attempt,
            })?;
            cassette.end = Some(end_of(&outcome));
            let mut warnings = Vec::new();
            if cassette.exchanges.is_empty() {
                // Usually an agent that talks to its provider directly: its
                // replay would then reach the live API too.
                warnings.push(
                    "no request went through agentci's proxy while recording: the agent called no API, or bypassed the proxy (see docs/ca-trust.md)".to_string(),
                );
            }
            return Ok(Obtained {
                cassette,
                warnings,
                attempts: attempt,
            });
        }
        let _ = std::fs::remove_file(&scratch);
        let infra = report.recorded.iter().any(is_infra);
        let message = agent_failure(&outcome, timeout_s);
        if infra && attempt <= opts.retries {
            tokio::time::sleep(opts.retry_backoff * 2u32.saturating_pow(attempt - 1)).await;
            continue;
        }
        let message = if infra {
            let statuses: Vec<String> = report
                .recorded
                .iter()
                .filter(|e| is_infra(e))
                .map(|e| {
                    e.response
                        .error
                        .clone()
                        .unwrap_or_else(|| format!("HTTP {}", e.response.status))
                })
                .collect();
            format!(
                "[INFRA] upstream trouble after {attempt} attempt(s) ({}); {message}",
                statuses.join(", ")
            )
        } else {
            message
        };
        return Err(Failure {
            message,
            attempts: attempt,
        });
    }
}

/// The `[MISS]` report of a case: each distinct missed request once, with its
/// diff against the nearest recording, and the command that re-records the case.
fn miss_report(spec: &LoadedSpec, work: &Work, misses: &[crate::vcr::proxy::Miss]) -> String {
    let mut message = format!(
        "[MISS] {} request(s) had no recording in {}",
        misses.len(),
        work.cassette.display()
    );
    // SDKs retry a failed request: show each distinct miss once, with its count.
    let mut distinct: Vec<(&crate::vcr::proxy::Miss, usize)> = Vec::new();
    for miss in misses {
        match distinct.iter_mut().find(|(m, _)| *m == miss) {
            Some((_, n)) => *n += 1,
            None => distinct.push((miss, 1)),
        }
    }
    for (miss, count) in distinct {
        let times = if count > 1 {
            format!(" (×{count})")
        } else {
            String::new()
        };
        message.push_str(&format!("\n  {} {}{times}", miss.method, miss.url));
        match &miss.diff {
            Some(diff) => {
                message.push_str(
                    "\n  diff against the nearest recorded request (- recorded, + now):\n",
                );
                for line in diff.lines() {
                    message.push_str("    ");
                    message.push_str(line);
                    message.push('\n');
                }
            }
            None => message.push_str(" (no recorded request to the same endpoint)\n"),
        }
    }
    message.push_str(&format!(
        "hint: the agent's requests changed; re-record with `agentci record --spec {} --case {}`",
        spec.path.display(),
        work.case.id
    ));
    message
}

/// `message` naming the case's cassette rather than the scratch file recorded into.
fn about_cassette(message: &str, scratch: &Path, work: &Work) -> String {
    message.replace(
        &scratch.display().to_string(),
        &work.cassette.display().to_string(),
    )
}

fn scratch_path(cassette: &Path) -> PathBuf {
    let name = cassette
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    cassette.with_file_name(format!(".{name}.recording"))
}

fn missing_cassette(spec: &LoadedSpec, work: &Work) -> Failure {
    Failure::new(format!(
        "[MISS] no cassette at {}\nhint: record it with `agentci record --spec {} --case {}`",
        work.cassette.display(),
        spec.path.display(),
        work.case.id
    ))
}

async fn replay_case(
    spec: &LoadedSpec,
    opts: &RunOptions,
    work: &Work,
) -> Result<Obtained, Failure> {
    if !work.cassette.is_file() {
        return Err(missing_cassette(spec, work));
    }
    let mut cassette =
        Cassette::read(&work.cassette).map_err(|e| Failure::new(cassette_error(&e)))?;
    let mut warnings = staleness(&cassette, opts);
    let proxy = Proxy::start(proxy_options(
        spec,
        opts,
        work,
        work.cassette.clone(),
        Mode::Replay,
    ))
    .await
    .map_err(|e| Failure::new(format!("[INFRA] cannot start the proxy: {e}")))?;
    let env = agent_env(spec, work, "replay", true, proxy.client_env());
    let outcome = run_agent(&invocation(spec, env)?).await;
    let report = proxy
        .finish(None)
        .await
        .map_err(|e| Failure::new(e.to_string()))?;
    let outcome = outcome.map_err(|e| Failure::new(e.to_string()))?;
    if !report.misses.is_empty() {
        return Err(Failure::new(miss_report(spec, work, &report.misses)));
    }
    if !outcome.succeeded() {
        let timeout_s = spec.spec.runner.as_ref().map_or(120, |r| r.timeout_s);
        return Err(Failure::new(agent_failure(&outcome, timeout_s)));
    }
    if !report.unused.is_empty() {
        warnings.push(format!(
            "{} recorded exchange(s) were not used (seq {})",
            report.unused.len(),
            report
                .unused
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // The answer is the agent's, now; the latency stays the recorded one, so a
    // replay scores exactly like the recording (instant replay has no latency of its own).
    let recorded_ms = cassette.end.as_ref().map(|e| e.duration_ms);
    let mut end = end_of(&outcome);
    end.duration_ms = recorded_ms.unwrap_or(end.duration_ms);
    cassette.end = Some(end);
    Ok(Obtained {
        cassette,
        warnings,
        attempts: 1,
    })
}

fn read_case(spec: &LoadedSpec, opts: &RunOptions, work: &Work) -> Result<Obtained, Failure> {
    if !work.cassette.is_file() {
        return Err(missing_cassette(spec, work));
    }
    // Only the trace is wanted: the lean read skips what derivation never reads.
    let cassette = crate::trace::read_for_trace(&work.cassette)
        .map_err(|e| Failure::new(cassette_error(&e)))?;
    // Without the agent, the recorded query is the only request we can check:
    // a spec whose query changed no longer describes what the cassette holds.
    if opts.mode == RunMode::CassettesOnly
        && let Some(recorded) = cassette.meta.query.as_deref()
        && recorded != work.case.query.query
    {
        return Err(Failure::new(changed_query(spec, work, recorded)));
    }
    let mut warnings = staleness(&cassette, opts);
    if cassette.end.is_none() {
        warnings
            .push("the cassette has no `_end` line: the agent's answer was not recorded".into());
    }
    Ok(Obtained {
        cassette,
        warnings,
        attempts: 1,
    })
}

/// The miss report of a case whose spec query differs from its cassette's.
fn changed_query(spec: &LoadedSpec, work: &Work, recorded: &str) -> String {
    let diff = similar::TextDiff::from_lines(recorded, work.case.query.query.as_str());
    let mut message = format!(
        "[MISS] the spec's query changed since {} was recorded\n  diff (- recorded, + spec):\n",
        work.cassette.display()
    );
    for line in diff
        .unified_diff()
        .context_radius(2)
        .missing_newline_hint(false)
        .to_string()
        .lines()
    {
        message.push_str("    ");
        message.push_str(line);
        message.push('\n');
    }
    message.push_str(&format!(
        "hint: re-record it with `agentci record --spec {} --case {}`",
        spec.path.display(),
        work.case.id
    ));
    message
}

fn cassette_error(e: &Error) -> String {
    match e.hint() {
        Some(hint) => format!("{e}\nhint: {hint}"),
        None => e.to_string(),
    }
}

fn staleness(cassette: &Cassette, opts: &RunOptions) -> Vec<String> {
    let Ok(recorded) = chrono::DateTime::parse_from_rfc3339(&cassette.meta.recorded_at) else {
        return vec![format!(
            "cassette recorded_at {:?} is not an RFC 3339 time",
            cassette.meta.recorded_at
        )];
    };
    let age = chrono::Utc::now().signed_duration_since(recorded);
    let max = chrono::Duration::from_std(opts.max_age).unwrap_or(chrono::Duration::MAX);
    if age > max {
        vec![format!(
            "cassette is {} days old (recorded {}); re-record it with `agentci record`",
            age.num_days(),
            cassette.meta.recorded_at
        )]
    } else {
        Vec::new()
    }
}

/// The process exit status of a finished run (REFERENCE.md section 5): 2 when any
/// case errored, 1 when any case failed, else 0. A case with several trials
/// passes when at least `min_pass_rate` of its trials passed (default: all).
pub fn exit_status(run: &RunRecord, min_pass_rate: Option<f64>) -> crate::ExitStatus {
    if run.cases.iter().any(|c| c.status == CaseStatus::Error) {
        return crate::ExitStatus::Error;
    }
    let mut by_case: std::collections::BTreeMap<&str, (u32, u32)> =
        std::collections::BTreeMap::new();
    for case in &run.cases {
        let entry = by_case.entry(case.case_id.as_str()).or_default();
        entry.1 += 1;
        if matches!(case.status, CaseStatus::Pass | CaseStatus::Warn) {
            entry.0 += 1;
        }
    }
    let required = min_pass_rate.unwrap_or(1.0);
    let failed = by_case
        .values()
        .any(|&(passed, trials)| f64::from(passed) < required * f64::from(trials) - 1e-9);
    if failed {
        crate::ExitStatus::Failure
    } else {
        crate::ExitStatus::Success
    }
}
