//! The console report: one line per case, its findings beneath, and the summary
//! line alone on the last line (CI log parsers read it).

use std::fmt::Write as _;

use super::{
    CaseGroup, Finding, RenderOptions, Severity, figures, findings, format_cost, format_latency,
    groups, summarize,
};
use crate::run::{CaseRun, CaseStatus, RunRecord};
use crate::trace::Trace;

const RED: &str = "\x1b[31m";
const BOLD_RED: &str = "\x1b[1;31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Longest answer or tool payload shown in a transcript line before it is cut.
const TRANSCRIPT_EXCERPT: usize = 2000;

/// Renders the console report.
pub fn render(run: &RunRecord, opts: &RenderOptions) -> String {
    let paint = Paint(opts.color);
    let groups = groups(run, opts);
    let width = groups
        .iter()
        .map(|g| g.id.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for g in &groups {
        if g.has_trials() {
            render_trials(&mut out, g, width, paint, opts);
        } else if let Some(case) = g.runs.first() {
            let _ = writeln!(
                out,
                "{} {:<width$}  {}",
                status_tag(case.status, paint),
                g.id,
                figures_text(case)
            );
            render_findings(&mut out, case, "      ", paint, opts);
        }
    }
    for w in &run.warnings {
        let _ = writeln!(out, "{}: {w}", paint.wrap(YELLOW, "warning"));
    }
    let _ = writeln!(out, "{}", summarize(run, opts).line());
    out
}

fn render_trials(
    out: &mut String,
    g: &CaseGroup<'_>,
    width: usize,
    paint: Paint,
    opts: &RenderOptions,
) {
    let flaky = if g.flaky() {
        format!("  {}", paint.wrap(YELLOW, "flaky"))
    } else {
        String::new()
    };
    let stats = g.stats();
    let n = stats.total;
    let _ = writeln!(
        out,
        "{} {:<width$}  {}/{} passed · pass@1 {:.2} · pass^{n} {:.2} · 95% CI [{:.2}, {:.2}]{flaky}",
        status_tag(g.status, paint),
        g.id,
        g.passed,
        g.runs.len(),
        stats.pass_at(1),
        stats.pass_pow(n),
        stats.wilson_low,
        stats.wilson_high,
    );
    for case in &g.runs {
        let _ = writeln!(
            out,
            "      trial {}  {}  {}",
            case.trial,
            status_tag(case.status, paint),
            figures_text(case)
        );
        render_findings(out, case, "        ", paint, opts);
    }
}

fn figures_text(case: &CaseRun) -> String {
    match figures(case) {
        Some(f) => format!(
            "{:>2} tools  {}  {}",
            f.tool_calls,
            format_cost(f.cost_usd),
            format_latency(f.latency_ms)
        ),
        None => "-".to_string(),
    }
}

fn render_findings(
    out: &mut String,
    case: &CaseRun,
    indent: &str,
    paint: Paint,
    opts: &RenderOptions,
) {
    for f in findings(case) {
        if f.severity == Severity::Note && !opts.verbose {
            continue;
        }
        // A multi-line finding (a miss diff, a hint) stays inside its case's block.
        let text = finding_text(&f, paint).replace('\n', &format!("\n{indent}  "));
        let _ = writeln!(out, "{indent}{text}");
    }
    let failing = matches!(case.status, CaseStatus::Fail | CaseStatus::Error);
    if opts.verbose && failing {
        let _ = writeln!(out, "{indent}query: {}", one_line(&case.query));
        match &case.trace {
            Some(trace) => transcript(out, trace, indent, paint),
            None => {
                let _ = writeln!(out, "{indent}(no trace)");
            }
        }
    }
}

fn finding_text(f: &Finding, paint: Paint) -> String {
    let (mark, colour) = match f.severity {
        Severity::Failure => ("✗", RED),
        Severity::Error => ("✗", BOLD_RED),
        Severity::Warning => ("!", YELLOW),
        Severity::Note => ("·", DIM),
    };
    paint.wrap(colour, &format!("{mark} {}", f.text()))
}

/// The full transcript of a case: each LLM call, the tool calls it asked for
/// with their arguments and results, and the answer.
fn transcript(out: &mut String, trace: &Trace, indent: &str, paint: Paint) {
    for (i, call) in trace.llm_calls.iter().enumerate() {
        let stop = call
            .stop_reason
            .as_deref()
            .map(|s| format!("  stop={s}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{indent}{} {}  {} tokens  {}  {}{stop}",
            paint.wrap(DIM, &format!("llm #{}", i + 1)),
            call.model,
            call.usage.total_tokens(),
            format_cost(call.cost_usd),
            format_latency(call.latency_ms)
        );
        if let Some(text) = &call.output_text {
            let _ = writeln!(out, "{indent}  says: {}", excerpt(text));
        }
        for tool in trace.tool_calls.iter().filter(|t| t.llm_call == i) {
            let _ = writeln!(
                out,
                "{indent}  tool {}({})",
                tool.name,
                excerpt(&tool.arguments.to_string())
            );
            let result = match &tool.result {
                Some(r) => excerpt(&json_text(r)),
                None => "(no result sent back)".to_string(),
            };
            let error = if tool.is_error { " [error]" } else { "" };
            let _ = writeln!(out, "{indent}    → {result}{error}");
        }
    }
    let answer = trace
        .answer
        .as_deref()
        .map_or_else(|| "(none)".to_string(), excerpt);
    let _ = writeln!(out, "{indent}answer: {answer}");
}

/// Strings as themselves, other JSON compactly.
fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One line, cut at [`TRANSCRIPT_EXCERPT`] characters.
fn excerpt(text: &str) -> String {
    let line = one_line(text);
    if line.chars().count() > TRANSCRIPT_EXCERPT {
        let cut: String = line.chars().take(TRANSCRIPT_EXCERPT).collect();
        format!("{cut}…")
    } else {
        line
    }
}

fn one_line(text: &str) -> String {
    text.trim().replace('\r', "").replace('\n', " ⏎ ")
}

fn status_tag(status: CaseStatus, paint: Paint) -> String {
    let (text, colour) = match status {
        CaseStatus::Pass => ("PASS ", GREEN),
        CaseStatus::Warn => ("WARN ", YELLOW),
        CaseStatus::Fail => ("FAIL ", RED),
        CaseStatus::Error => ("ERROR", BOLD_RED),
    };
    paint.wrap(colour, text)
}

/// Wraps text in an ANSI colour when colour is on.
#[derive(Debug, Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn wrap(self, colour: &str, text: &str) -> String {
        if self.0 {
            format!("{colour}{text}{RESET}")
        } else {
            text.to_string()
        }
    }
}
