//! Reports: pure functions from a [`RunRecord`] to text, one file per format
//! (REFERENCE.md section 6, `docs/reports.md`). Only [`write_all`] and
//! [`append_step_summary`] touch the disk; everything else returns a `String`.
//!
//! Every format reads the same view of the run: cases grouped with their
//! trials ([`CaseGroup`]), their findings ([`Finding`]) and one [`Summary`], so
//! the console, the annotations, JUnit and the JSON never disagree on a count.

pub mod console;
pub mod github;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod prometheus;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::engine::{LayerResult, Status};
use crate::error::{Error, Result};
use crate::run::{CaseRun, CaseStatus, RunRecord};

/// An output format of `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Human-readable lines, one per case, and a summary line.
    Console,
    /// GitHub Actions workflow commands (`::error …`, `::warning …`).
    Github,
    /// `{"summary": …, "results": […]}`, described by `docs/report.schema.json`.
    Json,
    /// JUnit XML, one `<testcase>` per case (per trial with trials).
    Junit,
    /// A Markdown table and failure details (the GitHub step summary).
    Markdown,
    /// Prometheus text exposition format.
    Prometheus,
}

/// Every format with its `--format` name: the one table parsing and docs read.
const FORMAT_NAMES: [(&str, Format); 6] = [
    ("console", Format::Console),
    ("github", Format::Github),
    ("json", Format::Json),
    ("junit", Format::Junit),
    ("markdown", Format::Markdown),
    ("prometheus", Format::Prometheus),
];

impl Format {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        FORMAT_NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("console", |(n, _)| n)
    }

    /// Parses a `--format` name, with a "did you mean" hint for near misses.
    pub fn from_name(name: &str) -> Result<Format> {
        let name = name.trim();
        if let Some((_, f)) = FORMAT_NAMES.iter().find(|(n, _)| *n == name) {
            return Ok(*f);
        }
        let all: Vec<&str> = FORMAT_NAMES.iter().map(|(n, _)| *n).collect();
        let nearest = all
            .iter()
            .map(|n| (strsim::levenshtein(&name.to_ascii_lowercase(), n), *n))
            .min()
            .filter(|(d, _)| *d <= 3);
        let hint = match nearest {
            Some((_, n)) => format!("did you mean `{n}`? (formats: {})", all.join(", ")),
            None => format!("formats: {}", all.join(", ")),
        };
        Err(Error::other(
            format!("unknown report format `{name}`"),
            Some(hint),
        ))
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One requested report: a format and where it goes (`None`: standard output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatTarget {
    /// The format.
    pub format: Format,
    /// The file to write, or `None` for standard output.
    pub path: Option<PathBuf>,
}

/// Parses `console,json=out.json,junit=out.xml,…`: comma-separated `name` or
/// `name=path` items. Two reports may not go to the same file, nor the same
/// format twice to standard output.
pub fn parse_formats(spec: &str) -> Result<Vec<FormatTarget>> {
    let mut targets: Vec<FormatTarget> = Vec::new();
    for item in spec.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(Error::other(
                format!("--format `{spec}`: empty item"),
                Some("write `--format console,json=out.json` (no empty items)".into()),
            ));
        }
        let (name, path) = match item.split_once('=') {
            Some((n, p)) => {
                let p = p.trim();
                if p.is_empty() {
                    return Err(Error::other(
                        format!("--format `{item}`: missing file name after `=`"),
                        Some(format!(
                            "write `{}=FILE`, or `{}` for standard output",
                            n.trim(),
                            n.trim()
                        )),
                    ));
                }
                (n, Some(PathBuf::from(p)))
            }
            None => (item, None),
        };
        let target = FormatTarget {
            format: Format::from_name(name)?,
            path,
        };
        if let Some(dup) = targets.iter().find(|t| {
            (t.path.is_some() && t.path == target.path)
                || (t.path.is_none() && target.path.is_none() && t.format == target.format)
        }) {
            let what = match &target.path {
                Some(p) => format!(
                    "`{}` is the target of both {} and {}",
                    p.display(),
                    dup.format,
                    target.format
                ),
                None => format!("{} is asked for twice on standard output", target.format),
            };
            return Err(Error::other(format!("--format: {what}"), None));
        }
        targets.push(target);
    }
    Ok(targets)
}

/// Adds GitHub annotations on standard output when running under GitHub Actions
/// and they were not asked for already (REFERENCE.md section 6: automatic there).
pub fn add_github_when_enabled(mut targets: Vec<FormatTarget>) -> Vec<FormatTarget> {
    if github_enabled() && !targets.iter().any(|t| t.format == Format::Github) {
        targets.push(FormatTarget {
            format: Format::Github,
            path: None,
        });
    }
    targets
}

/// How to render.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RenderOptions {
    /// ANSI colour in the console report (decide with [`color_enabled`]).
    pub color: bool,
    /// Console: the full transcript of each failing case.
    pub verbose: bool,
    /// `--min-pass-rate`: a case with trials passes when at least this share of
    /// its trials passed. `None`: every trial must pass.
    pub min_pass_rate: Option<f64>,
}

/// Renders one report.
pub fn render(format: Format, run: &RunRecord, opts: &RenderOptions) -> String {
    match format {
        Format::Console => console::render(run, opts),
        Format::Github => github::render(run, opts),
        Format::Json => json::render(run, opts),
        Format::Junit => junit::render(run, opts),
        Format::Markdown => markdown::render(run, opts),
        Format::Prometheus => prometheus::render(run, opts),
    }
}

/// Renders every target and writes it: files atomically (a temporary file in
/// the same folder, then a rename), standard-output targets in order. Every
/// target is attempted; the first error is returned after all were tried, so one
/// unwritable path does not cost the other reports.
pub fn write_all(targets: &[FormatTarget], run: &RunRecord, opts: &RenderOptions) -> Result<()> {
    let mut first_error = None;
    let stdout = std::io::stdout();
    for target in targets {
        // Colour only ever goes to the terminal, never into a file.
        let file_opts = RenderOptions {
            color: false,
            ..opts.clone()
        };
        let outcome = match &target.path {
            Some(path) => write_atomic(path, render(target.format, run, &file_opts).as_bytes()),
            None => {
                let text = render(target.format, run, opts);
                let mut out = stdout.lock();
                match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                    // A closed pipe (`| head`) is the reader's choice, not a failure.
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                        Err(Error::io("<stdout>", e))
                    }
                    _ => Ok(()),
                }
            }
        };
        if let Err(e) = outcome {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Writes a report file atomically: readers see the old file or the new one, never half of it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::atomic::write(path, bytes, crate::atomic::Visibility::Public)
}

/// Colour for the console: standard output is a terminal and `NO_COLOR` is unset
/// or empty (no-color.org).
pub fn color_enabled() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !no_color && std::io::stdout().is_terminal()
}

/// Running under GitHub Actions (`GITHUB_ACTIONS=true`).
pub fn github_enabled() -> bool {
    std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

/// Appends the Markdown report to `$GITHUB_STEP_SUMMARY` when it is set; returns
/// whether it did. Appends (never replaces): earlier steps wrote there too.
pub fn append_step_summary(run: &RunRecord, opts: &RenderOptions) -> Result<bool> {
    match std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
        Some(path) => {
            append_markdown(Path::new(&path), run, opts)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Appends the Markdown report to `path`, creating it when missing.
pub fn append_markdown(path: &Path, run: &RunRecord, opts: &RenderOptions) -> Result<()> {
    let text = markdown::render(run, opts);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    file.write_all(text.as_bytes())
        .map_err(|e| Error::io(path, e))
}

/// Counts of a run by case (a case with trials counts once, by its gated status).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Cases.
    pub total: usize,
    /// Cases that passed every check.
    pub passed: usize,
    /// Cases that passed with warnings (and flaky cases within `--min-pass-rate`).
    pub warned: usize,
    /// Cases with a correctness failure or a forbidden tool.
    pub failed: usize,
    /// Cases that could not be evaluated.
    pub errors: usize,
}

impl Summary {
    /// `N passed, N warned, N failed` and `, N errors` when there are any.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} passed, {} warned, {} failed",
            self.passed, self.warned, self.failed
        );
        if self.errors > 0 {
            let s = if self.errors == 1 { "" } else { "s" };
            line.push_str(&format!(", {} error{s}", self.errors));
        }
        line
    }
}

/// The summary every report prints; the runner can derive the exit code from it.
pub fn summarize(run: &RunRecord, opts: &RenderOptions) -> Summary {
    let mut s = Summary::default();
    for group in groups(run, opts) {
        s.total += 1;
        match group.status {
            CaseStatus::Pass => s.passed += 1,
            CaseStatus::Warn => s.warned += 1,
            CaseStatus::Fail => s.failed += 1,
            CaseStatus::Error => s.errors += 1,
        }
    }
    s
}

/// One case with all its trials (one run without trials).
#[derive(Debug, Clone)]
pub struct CaseGroup<'a> {
    /// The case id.
    pub id: &'a str,
    /// Its runs, in trial order.
    pub runs: Vec<&'a CaseRun>,
    /// The case's status over its trials.
    pub status: CaseStatus,
    /// Trials that passed (pass or warn).
    pub passed: usize,
}

impl CaseGroup<'_> {
    /// The case ran more than once.
    pub fn has_trials(&self) -> bool {
        self.runs.len() > 1
    }

    /// Some trials passed and some did not.
    pub fn flaky(&self) -> bool {
        self.passed > 0 && self.passed < self.runs.len()
    }

    /// pass@k, pass^k and the Wilson interval over the trials.
    pub fn stats(&self) -> crate::run::trials::TrialStats {
        crate::run::trials::TrialStats::new(self.passed as u32, self.runs.len() as u32)
    }
}

/// Groups a run's cases with their trials, in spec order, and gates each case:
/// any error → error; every trial passed → the worst of pass/warn; else a pass
/// rate at or above `min_pass_rate` → warn; else fail.
pub fn groups<'a>(run: &'a RunRecord, opts: &RenderOptions) -> Vec<CaseGroup<'a>> {
    let mut groups: Vec<CaseGroup<'a>> = Vec::new();
    for case in &run.cases {
        match groups.iter_mut().find(|g| g.id == case.case_id) {
            Some(g) => g.runs.push(case),
            None => groups.push(CaseGroup {
                id: &case.case_id,
                runs: vec![case],
                status: CaseStatus::Pass,
                passed: 0,
            }),
        }
    }
    for g in &mut groups {
        g.runs.sort_by_key(|r| r.trial);
        let n = g.runs.len();
        g.passed = g
            .runs
            .iter()
            .filter(|r| matches!(r.status, CaseStatus::Pass | CaseStatus::Warn))
            .count();
        let any = |s: CaseStatus| g.runs.iter().any(|r| r.status == s);
        g.status = if any(CaseStatus::Error) {
            CaseStatus::Error
        } else if g.passed == n {
            if any(CaseStatus::Warn) {
                CaseStatus::Warn
            } else {
                CaseStatus::Pass
            }
        } else if opts
            .min_pass_rate
            .is_some_and(|rate| g.passed as f64 >= rate * n as f64 - 1e-9)
        {
            CaseStatus::Warn
        } else {
            CaseStatus::Fail
        };
    }
    groups
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Fails the case: a correctness check or a forbidden tool.
    Failure,
    /// A soft check exceeded, or a warning about the case's run.
    Warning,
    /// The case could not be evaluated.
    Error,
    /// A check that could not run, and why (verbose console only).
    Note,
}

/// One line a report shows about a case: `[LABEL] message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How serious.
    pub severity: Severity,
    /// `CORRECTNESS`, `PATH`, `COST`, `INFRA`, `ERROR` or `RUN`.
    pub label: &'static str,
    /// The engine's or runner's message.
    pub message: String,
}

impl Finding {
    /// `[LABEL] message`.
    pub fn text(&self) -> String {
        format!("[{}] {}", self.label, self.message)
    }
}

/// The prefix that marks infrastructure errors in `CaseRun::error`.
const INFRA_PREFIX: &str = "[INFRA]";

/// Everything a report says about one case run, in a fixed order: the error,
/// correctness, path, cost, then the run's own warnings.
pub fn findings(case: &CaseRun) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(error) = &case.error {
        let (label, message) = match error.strip_prefix(INFRA_PREFIX) {
            Some(rest) => ("INFRA", rest.trim_start().to_string()),
            None => ("ERROR", error.clone()),
        };
        out.push(Finding {
            severity: Severity::Error,
            label,
            message,
        });
    } else if case.status == CaseStatus::Error {
        out.push(Finding {
            severity: Severity::Error,
            label: "ERROR",
            message: "the case could not be evaluated".into(),
        });
    }
    if let Some(result) = &case.result {
        layer_findings(&mut out, "CORRECTNESS", &result.correctness, |_| true);
        // The path layer fails only for forbidden tools; its other findings are warnings.
        layer_findings(&mut out, "PATH", &result.path, |m| {
            m.starts_with("forbidden_tools")
        });
        layer_findings(&mut out, "COST", &result.cost, |_| false);
    }
    for w in &case.warnings {
        out.push(Finding {
            severity: Severity::Warning,
            label: "RUN",
            message: w.clone(),
        });
    }
    out
}

/// A skipped check's message (`name: skipped …`): the engine's convention for
/// checks that could not run, which are notes rather than findings.
fn is_note(message: &str) -> bool {
    message.contains(": skipped")
}

fn layer_findings(
    out: &mut Vec<Finding>,
    label: &'static str,
    layer: &LayerResult,
    is_hard: impl Fn(&str) -> bool,
) {
    for m in &layer.messages {
        let severity = if is_note(m) {
            Severity::Note
        } else if layer.status == Status::Fail && is_hard(m) {
            Severity::Failure
        } else if matches!(layer.status, Status::Fail | Status::Warn) {
            Severity::Warning
        } else {
            // A passing layer's remarks (e.g. a judge's rationale) are not findings.
            Severity::Note
        };
        out.push(Finding {
            severity,
            label,
            message: m.clone(),
        });
    }
}

/// The figures every table shows for one case run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    /// Tool calls.
    pub tool_calls: u64,
    /// LLM calls.
    pub llm_calls: u64,
    /// Input plus output tokens.
    pub total_tokens: u64,
    /// USD.
    pub cost_usd: f64,
    /// The agent's wall time, ms.
    pub latency_ms: u64,
}

/// The case run's figures, from its trace (`None` when there is no trace).
pub fn figures(case: &CaseRun) -> Option<Figures> {
    case.trace.as_ref().map(|t| Figures {
        tool_calls: t.totals.tool_calls,
        llm_calls: t.totals.llm_calls,
        total_tokens: t.totals.total_tokens,
        cost_usd: t.totals.cost_usd,
        latency_ms: t.totals.duration_ms,
    })
}

/// A figure of the path layer (`tool_recall`, `tool_precision`), when measured.
fn path_figure(case: &CaseRun, key: &str) -> Option<f64> {
    case.result
        .as_ref()
        .and_then(|r| r.path.details.get(key))
        .and_then(serde_json::Value::as_f64)
}

/// `$0.000123`: six decimals, enough for one cheap call.
fn format_cost(usd: f64) -> String {
    format!("${usd:.6}")
}

/// `812 ms` below a second, `8.21 s` above.
fn format_latency(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.2} s", ms as f64 / 1000.0)
    }
}

/// `case` or `case (trial 2)` when the case has trials.
fn run_label(case: &CaseRun, group_has_trials: bool) -> String {
    if group_has_trials {
        format!("{} (trial {})", case.case_id, case.trial)
    } else {
        case.case_id.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets_in_order() {
        let t = parse_formats("console,json=out.json, junit=reports/out.xml").unwrap();
        assert_eq!(
            t,
            vec![
                FormatTarget {
                    format: Format::Console,
                    path: None
                },
                FormatTarget {
                    format: Format::Json,
                    path: Some("out.json".into())
                },
                FormatTarget {
                    format: Format::Junit,
                    path: Some("reports/out.xml".into())
                },
            ]
        );
    }

    #[test]
    fn unknown_format_suggests_the_nearest() {
        let e = parse_formats("console,junti=x.xml").unwrap_err();
        assert_eq!(e.to_string(), "unknown report format `junti`");
        assert!(
            e.hint().unwrap().starts_with("did you mean `junit`?"),
            "{:?}",
            e.hint()
        );
        let e = parse_formats("html").unwrap_err();
        assert!(
            e.hint().unwrap().starts_with("formats: console, github"),
            "{:?}",
            e.hint()
        );
    }

    #[test]
    fn rejects_empty_items_missing_paths_and_clashes() {
        assert!(parse_formats("").is_err());
        assert!(parse_formats("console,,json").is_err());
        assert!(parse_formats("json=").is_err());
        assert!(parse_formats("json=a.txt,markdown=a.txt").is_err());
        assert!(parse_formats("console,console").is_err());
        assert!(parse_formats("json=a.json,json=b.json").is_ok());
    }

    #[test]
    fn every_format_name_round_trips() {
        for (name, f) in FORMAT_NAMES {
            assert_eq!(Format::from_name(name).unwrap(), f);
            assert_eq!(f.name(), name);
        }
    }

    #[test]
    fn summary_line_mentions_errors_only_when_there_are_some() {
        let mut s = Summary {
            total: 3,
            passed: 1,
            warned: 1,
            failed: 1,
            errors: 0,
        };
        assert_eq!(s.line(), "1 passed, 1 warned, 1 failed");
        s.errors = 2;
        assert_eq!(s.line(), "1 passed, 1 warned, 1 failed, 2 errors");
    }

    #[test]
    fn latency_and_cost_formats() {
        assert_eq!(format_latency(812), "812 ms");
        assert_eq!(format_latency(8210), "8.21 s");
        assert_eq!(format_cost(0.00012), "$0.000120");
    }
}
