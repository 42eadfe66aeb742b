//! Arguments shared by the commands that run cases (`record`, `replay`).

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, ExitStatus, Result};
use crate::report::{self, RenderOptions};
use crate::run::{RunMode, RunOptions, RunRecord, RunStore};
use crate::spec::{Filter, LoadedSpec};
use crate::trace::PriceTable;

/// Case selection and reporting, common to every running command.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The spec file.
    #[arg(long, short = 's', value_name = "SPEC")]
    pub spec: PathBuf,
    /// Run only this case (repeatable).
    #[arg(long = "case", value_name = "ID")]
    pub cases: Vec<String>,
    /// Run only cases with any of these tags (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "TAGS")]
    pub tags: Vec<String>,
    /// Cases run in parallel (default: runner.workers).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Run shard i of n (by a stable hash of the case id), e.g. 2/4.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Reports: console, github, json=FILE, junit=FILE, markdown=FILE, prometheus=FILE (comma-separated).
    #[arg(long, default_value = "console", value_name = "FORMATS")]
    pub format: String,
    /// Extra CA certificate (PEM) trusted for upstream connections (repeatable).
    #[arg(long = "upstream-ca", value_name = "PEM")]
    pub upstream_ca: Vec<PathBuf>,
    /// A LiteLLM-format model_prices_and_context_window.json overriding the built-in prices.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Make every warning of the run itself (miss, unused exchange, stale cassette, unpriced model) a failure.
    #[arg(long)]
    pub strict: bool,
    /// Warn about cassettes older than this many days.
    #[arg(long, default_value_t = 30, value_name = "DAYS")]
    pub max_age: u64,
    /// A case with trials passes when at least this share of its trials passed (default: all).
    #[arg(long, value_name = "R")]
    pub min_pass_rate: Option<f64>,
    /// Run the judge ensemble on this deterministic fraction of the cases only.
    #[arg(long, value_name = "FRACTION")]
    pub sample_ensemble: Option<f64>,
    /// Compare baseline-dependent checks with this baseline version (default: the spec's `baseline`).
    #[arg(long, value_name = "V")]
    pub baseline: Option<String>,
    /// Keep this many runs in .agentci/runs.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub keep: usize,
    /// Only the summary line and failures on the console.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,
    /// The full transcript of each failing case.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

impl RunArgs {
    /// Loads the spec with the case/tag filter.
    /// The spec, through the parsed-spec cache next to the run store.
    pub fn load_spec(&self) -> Result<LoadedSpec> {
        crate::spec::load_cached(
            &self.spec,
            &Filter {
                cases: self.cases.clone(),
                tags: self.tags.clone(),
            },
            std::path::Path::new(crate::spec::CACHE_DIR),
        )
    }

    /// Run options for `mode` from these arguments and the spec.
    pub fn options(&self, mode: RunMode, spec: &LoadedSpec) -> Result<RunOptions> {
        let mut opts = RunOptions::new(mode);
        opts.workers = self.workers;
        opts.upstream_ca = self.upstream_ca.clone();
        opts.strict = self.strict;
        opts.max_age = Duration::from_secs(self.max_age.saturating_mul(24 * 3600));
        opts.sample_ensemble = self.sample_ensemble;
        if let Some(fraction) = self.sample_ensemble
            && !(0.0..=1.0).contains(&fraction)
        {
            return Err(Error::other(
                format!("--sample-ensemble {fraction} is outside [0, 1]"),
                Some("e.g. --sample-ensemble 0.2 runs the ensemble on 20% of the cases".into()),
            ));
        }
        if let Some(rate) = self.min_pass_rate
            && !(0.0..=1.0).contains(&rate)
        {
            return Err(Error::other(
                format!("--min-pass-rate {rate} is outside [0, 1]"),
                None,
            ));
        }
        opts.shard = self
            .shard
            .as_deref()
            .map(crate::run::shard::Shard::parse)
            .transpose()?;
        opts.prices = prices(self.prices.as_deref(), spec)?;
        opts.baseline = crate::baseline::engine_baseline(spec, self.baseline.as_deref())?;
        Ok(opts)
    }

    /// Runs the cases with a progress bar, then reports, stores and decides the exit status.
    pub fn execute(&self, spec: &LoadedSpec, opts: &RunOptions) -> Result<ExitStatus> {
        let progress = super::progress::Progress::new(self.quiet);
        let run = runtime()?.block_on(crate::run::execute(spec, opts, &|case, done, total| {
            progress.case_done(case, done, total)
        }))?;
        progress.finish();
        let status = finish_run(
            &run,
            &self.format,
            self.quiet,
            &self.render_options(),
            self.keep,
        );
        // The process exits next: freeing every case's trace one by one would
        // only cost time at the end of a large run (rustc does the same).
        std::mem::forget(run);
        status
    }

    /// Render options from these arguments.
    pub fn render_options(&self) -> RenderOptions {
        RenderOptions {
            color: report::color_enabled(),
            verbose: self.verbose,
            min_pass_rate: self.min_pass_rate,
        }
    }
}

/// The price table: built-ins, then a LiteLLM file, then the spec's `pricing`.
pub fn prices(file: Option<&std::path::Path>, spec: &LoadedSpec) -> Result<PriceTable> {
    let mut table = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            // The file's entries go on top of the built-ins; the spec's `pricing` on top of both.
            PriceTable::from_litellm_json(&text)
                .map_err(|e| Error::other(format!("{}: {e}", path.display()), None))?
        }
        None => PriceTable::builtin(),
    };
    table.apply(&spec.spec.pricing);
    Ok(table)
}

/// Writes every report, stores the run, and decides the exit status — in that
/// order, so a failing run still leaves its reports behind.
pub fn finish_run(
    run: &RunRecord,
    format: &str,
    quiet: bool,
    render: &RenderOptions,
    keep: usize,
) -> Result<ExitStatus> {
    let targets = report::add_github_when_enabled(report::parse_formats(format)?);
    let targets: Vec<_> = if quiet {
        targets
            .into_iter()
            .filter(|t| !(t.format == report::Format::Console && t.path.is_none()))
            .collect()
    } else {
        targets
    };
    let written = report::write_all(&targets, run, render);
    let summary = report::append_step_summary(run, render);
    let stored = RunStore::new(crate::run::store::DEFAULT_STORE).save(run, keep);
    if quiet {
        print!("{}", quiet_console(run, render));
    }
    written?;
    summary?;
    stored?;
    Ok(crate::run::exit_status(run, render.min_pass_rate))
}

/// A tokio runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("cannot start the async runtime: {e}"), None))
}

/// `--quiet`: the console report of the failing and erroring cases only, then
/// the whole run's summary line.
fn quiet_console(run: &RunRecord, render: &RenderOptions) -> String {
    use crate::run::CaseStatus;
    // Only the failing cases are copied: a large passing run stays untouched.
    let failing = run.with_cases(
        run.cases
            .iter()
            .filter(|c| matches!(c.status, CaseStatus::Fail | CaseStatus::Error))
            .cloned()
            .collect(),
        Vec::new(),
    );
    let mut out = String::new();
    if !failing.cases.is_empty() {
        let text = report::render(report::Format::Console, &failing, render);
        // Its last line summarises the failing cases alone; the run's own follows.
        let body: Vec<&str> = text.lines().collect();
        for line in &body[..body.len().saturating_sub(1)] {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(&report::summarize(run, render).line());
    out.push('\n');
    out
}
