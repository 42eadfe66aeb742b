//! The Markdown report: a heading with the summary, a table of every case run
//! and the details of each failing or warning one. It is the GitHub step summary.

use std::fmt::Write as _;

use super::{
    RenderOptions, Severity, figures, findings, format_cost, format_latency, groups, run_label,
    summarize,
};
use crate::run::{CaseStatus, RunRecord};

/// Renders the Markdown report.
pub fn render(run: &RunRecord, opts: &RenderOptions) -> String {
    let groups = groups(run, opts);
    let summary = summarize(run, opts);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## agentci: {} — {}\n",
        cell(&run.agent),
        summary.line()
    );
    let _ = writeln!(out, "| Case | Status | Tools | Tokens | Cost | Latency |");
    let _ = writeln!(out, "|---|---|--:|--:|--:|--:|");
    for g in &groups {
        if g.has_trials() {
            let flaky = if g.flaky() { ", flaky" } else { "" };
            let _ = writeln!(
                out,
                "| {} | {} ({}/{} passed{flaky}) | | | | |",
                cell(g.id),
                status_cell(g.status),
                g.passed,
                g.runs.len()
            );
        }
        for case in &g.runs {
            let name = if g.has_trials() {
                format!("↳ trial {}", case.trial)
            } else {
                cell(g.id)
            };
            let (tools, tokens, cost, latency) = match figures(case) {
                Some(f) => (
                    f.tool_calls.to_string(),
                    f.total_tokens.to_string(),
                    text(&format_cost(f.cost_usd)),
                    format_latency(f.latency_ms),
                ),
                None => ("–".into(), "–".into(), "–".into(), "–".into()),
            };
            let _ = writeln!(
                out,
                "| {name} | {} | {tools} | {tokens} | {cost} | {latency} |",
                status_cell(case.status)
            );
        }
    }

    let mut details = String::new();
    for g in &groups {
        for case in &g.runs {
            let shown: Vec<_> = findings(case)
                .into_iter()
                .filter(|f| f.severity != Severity::Note)
                .collect();
            if shown.is_empty() {
                continue;
            }
            let _ = writeln!(
                details,
                "\n**{}** — {} (`{}:{}`)\n",
                text(&run_label(case, g.has_trials())),
                case.status.as_str(),
                code(&case.file),
                case.line
            );
            for f in shown {
                let _ = writeln!(details, "- {}", text(&f.text()));
            }
        }
    }
    for w in &run.warnings {
        let _ = writeln!(details, "\n- run warning: {}", text(w));
    }
    if !details.is_empty() {
        let _ = write!(out, "\n### Details\n{details}");
    }
    out
}

fn status_cell(status: CaseStatus) -> &'static str {
    match status {
        CaseStatus::Pass => "✅ pass",
        CaseStatus::Warn => "⚠️ warn",
        CaseStatus::Fail => "❌ fail",
        CaseStatus::Error => "💥 error",
    }
}

/// Text inside a table cell: [`text`] already escapes pipes and line breaks.
fn cell(s: &str) -> String {
    text(s)
}

/// Text on one line with Markdown's markup characters escaped, so a message
/// quoting an answer (`*`, `_`, `<tag>`) shows as written; `$` too, which
/// GitHub would otherwise take for the start of a formula.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\r' => {}
            '\n' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A path inside a code span: backticks cannot be escaped there, so they are dropped.
fn code(s: &str) -> String {
    s.replace(['`', '\n', '\r'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_messages_is_escaped() {
        assert_eq!(text("a *b* <i>\nc"), "a \\*b\\* \\<i\\> c");
        assert_eq!(cell("x|y"), "x\\|y");
    }
}
