//! Renders a [`DiffReport`]: console (boxed, coloured when asked), JSON, Markdown
//! and GitHub annotations.

use serde::Serialize;

use super::diff::{CaseDiff, MetricChange, Unit, WordChange};

/// Every case diff of two sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffReport {
    /// The spec's agent.
    pub agent: String,
    /// What the left side is (`v1-broken`).
    pub before: String,
    /// What the right side is (`v2-fixed`, `run:<id>`).
    pub after: String,
    /// One entry per case, in spec order.
    pub cases: Vec<CaseDiff>,
}

impl DiffReport {
    /// `N cases: N changed, N unchanged`.
    pub fn summary_line(&self) -> String {
        let changed = self.cases.iter().filter(|c| c.changed()).count();
        let total = self.cases.len();
        let noun = if total == 1 { "case" } else { "cases" };
        format!(
            "{total} {noun}: {changed} changed, {} unchanged",
            total - changed
        )
    }
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";
const WIDTH: usize = 72;

fn paint(text: &str, code: &str, color: bool) -> String {
    if color {
        format!("{code}{text}{RESET}")
    } else {
        text.to_string()
    }
}

/// A figure as shown: counts whole, ratios with 2 decimals, USD with 6, ms as seconds.
fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Count => format!("{v:.0}"),
        Unit::Ratio => format!("{v:.2}"),
        Unit::Usd => format!("${v:.6}"),
        Unit::Ms => format!("{:.2} s", v / 1000.0),
    }
}

/// `▼ 92.8%`, `▲ new`, `= 0.0%`.
fn change(m: &MetricChange) -> String {
    match m.change_pct {
        Some(p) => format!("{} {:.1}%", m.direction.arrow(), p.abs()),
        None => format!("{} new", m.direction.arrow()),
    }
}

fn label(name: &str) -> &str {
    match name {
        "tool_calls" => "tool calls",
        "tool_precision" => "tool precision",
        "tool_recall" => "tool recall",
        "loops" => "loops",
        "handoffs" => "handoffs",
        "cost_usd" => "cost (USD)",
        "total_tokens" => "tokens",
        "llm_calls" => "LLM calls",
        "latency_ms" => "latency",
        other => other,
    }
}

fn words_inline(words: &[WordChange], color: bool) -> String {
    words
        .iter()
        .map(|w| match w.tag {
            "delete" => paint(&format!("[-{}-]", w.text), RED, color),
            "insert" => paint(&format!("{{+{}+}}", w.text), GREEN, color),
            _ => w.text.clone(),
        })
        .collect()
}

fn json_value(v: Option<&serde_json::Value>) -> String {
    v.map_or_else(|| "(absent)".to_string(), |v| v.to_string())
}

/// The console report: one box per case, then the summary line.
pub fn console(report: &DiffReport, color: bool) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} {} → {}\n",
        paint(&format!("agentci diff: {}", report.agent), BOLD, color),
        report.before,
        report.after
    ));
    for case in &report.cases {
        let title = format!("┌─ {} ", case.case);
        let fill = WIDTH.saturating_sub(title.chars().count());
        out.push_str(&format!("\n{title}{}\n", "─".repeat(fill)));
        let mut line = |s: String| {
            out.push_str("│ ");
            out.push_str(&s);
            out.push('\n');
        };
        if let Some(side) = case.only_in {
            line(format!("only in {side}: not compared"));
            out.push_str(&format!("└{}\n", "─".repeat(WIDTH - 1)));
            continue;
        }
        let categories: Vec<&str> = case.categories.iter().map(|c| c.as_str()).collect();
        line(format!(
            "changes: {}",
            if categories.is_empty() {
                "none".to_string()
            } else {
                categories.join(", ")
            }
        ));
        if let (Some(b), Some(a)) = (case.correctness_before, case.correctness_after) {
            let after = match (b == a, a) {
                (true, _) => a.as_str().to_string(),
                (false, crate::engine::Status::Fail) => paint(a.as_str(), RED, color),
                (false, _) => paint(a.as_str(), GREEN, color),
            };
            line(format!("CORRECTNESS  {} → {after}", b.as_str()));
        }
        for (tier, rows) in [("PATH", &case.path), ("COST", &case.cost)] {
            line(format!(
                "{tier:<18}{:>14}{:>14}{:>14}",
                "before", "after", "change"
            ));
            for m in rows {
                let delta = format!("{:>14}", change(m));
                let delta = match m.improved() {
                    Some(true) => paint(&delta, GREEN, color),
                    Some(false) => paint(&delta, RED, color),
                    None => delta,
                };
                line(format!(
                    "  {:<16}{:>14}{:>14}{delta}",
                    label(m.name),
                    value(m.unit, m.before),
                    value(m.unit, m.after)
                ));
            }
            if tier == "PATH"
                && let Some(s) = case.sequence_similarity
            {
                line(format!("  {:<16}{s:>14.2}", "sequence (LCS)"));
            }
        }
        if case.tools_before != case.tools_after {
            line(format!("TOOLS  before: [{}]", case.tools_before.join(", ")));
            line(format!("       after:  [{}]", case.tools_after.join(", ")));
        }
        if !case.answer_diff.is_empty() {
            line("ANSWER".to_string());
            for text in words_inline(&case.answer_diff, color).lines() {
                line(format!("  {text}"));
            }
        }
        if !case.arg_changes.is_empty() {
            line("TOOL ARGUMENTS".to_string());
            for c in &case.arg_changes {
                let shown = if c.words.is_empty() {
                    format!(
                        "{} → {}",
                        json_value(c.before.as_ref()),
                        json_value(c.after.as_ref())
                    )
                } else {
                    words_inline(&c.words, color)
                };
                line(format!("  #{} {}.{}: {shown}", c.call, c.tool, c.key));
            }
        }
        out.push_str(&format!("└{}\n", "─".repeat(WIDTH - 1)));
    }
    out.push('\n');
    out.push_str(&report.summary_line());
    out.push('\n');
    out
}

/// The JSON report (pretty).
pub fn json(report: &DiffReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")) + "\n"
}

/// The Markdown report: a table per case.
pub fn markdown(report: &DiffReport) -> String {
    let mut out = format!(
        "## agentci diff: {} — {} → {}\n\n",
        report.agent, report.before, report.after
    );
    for case in &report.cases {
        out.push_str(&format!("### {}\n\n", case.case));
        if let Some(side) = case.only_in {
            out.push_str(&format!("Only in {side}: not compared.\n\n"));
            continue;
        }
        let categories: Vec<String> = case
            .categories
            .iter()
            .map(|c| format!("`{}`", c.as_str()))
            .collect();
        out.push_str(&format!(
            "Changes: {}\n\n",
            if categories.is_empty() {
                "none".into()
            } else {
                categories.join(", ")
            }
        ));
        if let (Some(b), Some(a)) = (case.correctness_before, case.correctness_after) {
            out.push_str(&format!("Correctness: **{b}** → **{a}**\n\n"));
        }
        out.push_str("| Tier | Figure | Before | After | Change |\n|---|---|---:|---:|---:|\n");
        for (tier, rows) in [("path", &case.path), ("cost", &case.cost)] {
            for m in rows {
                out.push_str(&format!(
                    "| {tier} | {} | {} | {} | {} |\n",
                    label(m.name),
                    value(m.unit, m.before),
                    value(m.unit, m.after),
                    change(m)
                ));
            }
            if tier == "path"
                && let Some(s) = case.sequence_similarity
            {
                out.push_str(&format!("| path | sequence (LCS) | | {s:.2} | |\n"));
            }
        }
        if !case.answer_diff.is_empty() {
            out.push_str(&format!(
                "\nAnswer: {}\n",
                words_inline(&case.answer_diff, false).replace('\n', " ")
            ));
        }
        for c in &case.arg_changes {
            out.push_str(&format!(
                "\n- `#{} {}.{}`: `{}` → `{}`",
                c.call,
                c.tool,
                c.key,
                json_value(c.before.as_ref()),
                json_value(c.after.as_ref())
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!("\n{}\n", report.summary_line()));
    out
}

/// GitHub annotations: a warning per changed case, an error when correctness regressed.
pub fn github(report: &DiffReport) -> String {
    let mut out = String::new();
    for case in report.cases.iter().filter(|c| c.changed()) {
        let regressed = case.correctness_after == Some(crate::engine::Status::Fail)
            && case.correctness_before != case.correctness_after;
        let level = if regressed { "error" } else { "warning" };
        let categories: Vec<&str> = case.categories.iter().map(|c| c.as_str()).collect();
        out.push_str(&format!(
            "::{level} title=agentci diff {}::{} → {}: {}\n",
            case.case,
            report.before,
            report.after,
            categories.join(", ")
        ));
    }
    out
}
