//! Prometheus text exposition format (version 0.0.4): one gauge family per
//! figure, one sample per case run, labelled by agent and case (and trial when
//! the case has trials). For a Pushgateway or a textfile collector.

use std::fmt::Write as _;

use super::{RenderOptions, figures, groups, path_figure};
use crate::engine::Status;
use crate::run::{CaseRun, RunRecord};

/// A metric family: name, help text, and how to read its value from a case run.
struct Family {
    name: &'static str,
    help: &'static str,
    value: fn(&CaseRun) -> Option<f64>,
}

/// Every exported metric: the one table the docs list.
const FAMILIES: [Family; 6] = [
    Family {
        name: "agentci_correctness_pass",
        help: "1 when the correctness layer passed or had no checks, 0 when it failed.",
        value: |c| {
            c.result.as_ref().map(|r| {
                if r.correctness.status == Status::Fail {
                    0.0
                } else {
                    1.0
                }
            })
        },
    },
    Family {
        name: "agentci_tool_recall",
        help: "Expected tools used over expected tools (1 when none are expected).",
        value: |c| path_figure(c, "tool_recall"),
    },
    Family {
        name: "agentci_tool_precision",
        help: "Expected tools used over tools used.",
        value: |c| path_figure(c, "tool_precision"),
    },
    Family {
        name: "agentci_cost_usd",
        help: "The agent's LLM cost of the case in US dollars.",
        value: |c| figures(c).map(|f| f.cost_usd),
    },
    Family {
        name: "agentci_latency_ms",
        help: "The agent's wall time for the case in milliseconds.",
        value: |c| figures(c).map(|f| f.latency_ms as f64),
    },
    Family {
        name: "agentci_total_tokens",
        help: "Input plus output tokens of the case's LLM calls.",
        value: |c| figures(c).map(|f| f.total_tokens as f64),
    },
];

/// Renders the exposition text. A case run without a trace or result (an error)
/// has no samples for the figures it lacks.
pub fn render(run: &RunRecord, opts: &RenderOptions) -> String {
    let groups = groups(run, opts);
    let mut out = String::new();
    for family in &FAMILIES {
        let _ = writeln!(out, "# HELP {} {}", family.name, escape_help(family.help));
        let _ = writeln!(out, "# TYPE {} gauge", family.name);
        for g in &groups {
            for case in &g.runs {
                let Some(value) = (family.value)(case) else {
                    continue;
                };
                let mut labels = format!(
                    "agent=\"{}\",case=\"{}\"",
                    escape_label(&run.agent),
                    escape_label(&case.case_id)
                );
                if g.has_trials() {
                    let _ = write!(labels, ",trial=\"{}\"", case.trial);
                }
                let _ = writeln!(out, "{}{{{labels}}} {}", family.name, number(value));
            }
        }
    }
    out
}

/// A label value: backslash, double quote and line feed escaped.
pub fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// HELP text: backslash and line feed escaped.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value as Prometheus spells it (`+Inf`, `-Inf`, `NaN`).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn special_values_use_prometheus_spelling() {
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(3.0), "3");
    }
}
