//! The three-tier diff of two traces of one case (REFERENCE.md section 7):
//! correctness status before → after, path figures, cost figures, each with the
//! change in percent and its direction, plus the change categories, a word-level
//! diff of the answers and a per-key diff of changed tool arguments. Pure: data in, data out.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::engine::Status;
use crate::engine::metrics;
use crate::trace::Trace;

/// A cost or latency rising by more than this factor is a spike.
pub const SPIKE_FACTOR: f64 = 1.5;

/// One side of a diff: a trace and its correctness status.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// The trace.
    pub trace: Trace,
    /// The correctness layer's status for it.
    pub correctness: Status,
}

/// Which way a figure moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// It rose (▲).
    Up,
    /// It fell (▼).
    Down,
    /// Unchanged.
    Same,
}

impl Direction {
    /// ▲, ▼ or =.
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::Up => "▲",
            Direction::Down => "▼",
            Direction::Same => "=",
        }
    }
}

/// How a figure is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A whole number.
    Count,
    /// A ratio in [0, 1].
    Ratio,
    /// US dollars.
    Usd,
    /// Milliseconds.
    Ms,
}

/// One figure before and after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricChange {
    /// The figure's name (`tool_calls`, `cost_usd`, …).
    pub name: &'static str,
    /// How it is shown.
    pub unit: Unit,
    /// Before.
    pub before: f64,
    /// After.
    pub after: f64,
    /// (after − before) / before × 100; `None` when before is 0 and after is not.
    pub change_pct: Option<f64>,
    /// Which way it moved.
    pub direction: Direction,
    /// Whether a rise is an improvement (precision, recall) rather than a cost.
    pub higher_is_better: bool,
}

impl MetricChange {
    fn new(
        name: &'static str,
        unit: Unit,
        before: f64,
        after: f64,
        higher_is_better: bool,
    ) -> Self {
        let change_pct = if before != 0.0 {
            Some((after - before) / before * 100.0)
        } else if after == 0.0 {
            Some(0.0)
        } else {
            None
        };
        let direction = if after > before {
            Direction::Up
        } else if after < before {
            Direction::Down
        } else {
            Direction::Same
        };
        MetricChange {
            name,
            unit,
            before,
            after,
            change_pct,
            direction,
            higher_is_better,
        }
    }

    /// Whether the figure moved the good way (`None` when it did not move).
    pub fn improved(&self) -> Option<bool> {
        match self.direction {
            Direction::Same => None,
            Direction::Up => Some(self.higher_is_better),
            Direction::Down => Some(!self.higher_is_better),
        }
    }
}

/// A kind of change between two traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The set of tools called differs.
    ToolsChanged,
    /// A tool called at the same position with different arguments.
    ArgsChanged,
    /// The order or number of tool calls differs.
    SequenceChanged,
    /// The final answer differs.
    OutputChanged,
    /// Cost rose by more than [`SPIKE_FACTOR`].
    CostSpike,
    /// Latency rose by more than [`SPIKE_FACTOR`].
    LatencySpike,
    /// The number of LLM calls differs.
    StepsChanged,
    /// The handoffs differ.
    RoutingChanged,
}

impl Category {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::ToolsChanged => "tools_changed",
            Category::ArgsChanged => "args_changed",
            Category::SequenceChanged => "sequence_changed",
            Category::OutputChanged => "output_changed",
            Category::CostSpike => "cost_spike",
            Category::LatencySpike => "latency_spike",
            Category::StepsChanged => "steps_changed",
            Category::RoutingChanged => "routing_changed",
        }
    }
}

/// A run of words in the answer diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WordChange {
    /// `equal`, `delete` or `insert`.
    pub tag: &'static str,
    /// The words (with their whitespace).
    pub text: String,
}

/// One changed argument of a tool call present on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArgChange {
    /// 1-based position of the call in the tool sequence.
    pub call: usize,
    /// The tool.
    pub tool: String,
    /// The argument (`(arguments)` when the arguments are not an object).
    pub key: String,
    /// Before (absent when added).
    pub before: Option<Value>,
    /// After (absent when removed).
    pub after: Option<Value>,
    /// Word diff of the two values when both are strings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<WordChange>,
}

/// The diff of one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseDiff {
    /// The case id.
    pub case: String,
    /// `before` or `after` when the case exists on one side only (no figures then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only_in: Option<&'static str>,
    /// Correctness status before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correctness_before: Option<Status>,
    /// Correctness status after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correctness_after: Option<Status>,
    /// Path figures: tool_calls, tool_precision, tool_recall, loops, handoffs.
    pub path: Vec<MetricChange>,
    /// Normalized LCS of the two tool sequences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_similarity: Option<f64>,
    /// The tool sequences, before and after.
    pub tools_before: Vec<String>,
    /// The tool sequence after.
    pub tools_after: Vec<String>,
    /// Cost figures: cost_usd, total_tokens, llm_calls, latency_ms.
    pub cost: Vec<MetricChange>,
    /// What changed.
    pub categories: Vec<Category>,
    /// Word-level diff of the answers (empty when equal).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answer_diff: Vec<WordChange>,
    /// Per-key diff of changed tool arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arg_changes: Vec<ArgChange>,
}

impl CaseDiff {
    /// A case present on one side only.
    pub fn one_sided(case: &str, only_in: &'static str) -> Self {
        CaseDiff {
            case: case.to_string(),
            only_in: Some(only_in),
            correctness_before: None,
            correctness_after: None,
            path: Vec::new(),
            sequence_similarity: None,
            tools_before: Vec::new(),
            tools_after: Vec::new(),
            cost: Vec::new(),
            categories: Vec::new(),
            answer_diff: Vec::new(),
            arg_changes: Vec::new(),
        }
    }

    /// Whether anything differs.
    pub fn changed(&self) -> bool {
        self.only_in.is_some()
            || !self.categories.is_empty()
            || self.correctness_before != self.correctness_after
    }
}

/// Diffs `before` and `after` of case `id`; `expected_tools` (from the spec) feed precision and recall.
pub fn diff_case(id: &str, expected_tools: &[String], before: &Side, after: &Side) -> CaseDiff {
    let (b, a) = (&before.trace, &after.trace);
    let seq_b = b.tool_sequence();
    let seq_a = a.tool_sequence();
    let expected: Vec<&str> = expected_tools.iter().map(String::as_str).collect();
    let count = |n: usize| n as f64;
    let path = vec![
        MetricChange::new(
            "tool_calls",
            Unit::Count,
            count(seq_b.len()),
            count(seq_a.len()),
            false,
        ),
        MetricChange::new(
            "tool_precision",
            Unit::Ratio,
            metrics::tool_precision(&expected, &seq_b),
            metrics::tool_precision(&expected, &seq_a),
            true,
        ),
        MetricChange::new(
            "tool_recall",
            Unit::Ratio,
            metrics::tool_recall(&expected, &seq_b),
            metrics::tool_recall(&expected, &seq_a),
            true,
        ),
        MetricChange::new(
            "loops",
            Unit::Count,
            count(metrics::loop_count(&seq_b)),
            count(metrics::loop_count(&seq_a)),
            false,
        ),
        MetricChange::new(
            "handoffs",
            Unit::Count,
            count(b.handoffs.len()),
            count(a.handoffs.len()),
            false,
        ),
    ];
    let cost = vec![
        MetricChange::new(
            "cost_usd",
            Unit::Usd,
            b.totals.cost_usd,
            a.totals.cost_usd,
            false,
        ),
        MetricChange::new(
            "total_tokens",
            Unit::Count,
            b.totals.total_tokens as f64,
            a.totals.total_tokens as f64,
            false,
        ),
        MetricChange::new(
            "llm_calls",
            Unit::Count,
            b.totals.llm_calls as f64,
            a.totals.llm_calls as f64,
            false,
        ),
        MetricChange::new(
            "latency_ms",
            Unit::Ms,
            b.totals.duration_ms as f64,
            a.totals.duration_ms as f64,
            false,
        ),
    ];
    let arg_changes = arg_changes(b, a);
    let answer_b = b.answer.as_deref().unwrap_or("").trim();
    let answer_a = a.answer.as_deref().unwrap_or("").trim();
    let answer_diff = if answer_b == answer_a {
        Vec::new()
    } else {
        word_diff(answer_b, answer_a)
    };

    let mut categories = Vec::new();
    let set = |s: &[&str]| {
        s.iter()
            .map(|t| t.to_string())
            .collect::<BTreeSet<String>>()
    };
    if set(&seq_b) != set(&seq_a) {
        categories.push(Category::ToolsChanged);
    }
    if !arg_changes.is_empty() {
        categories.push(Category::ArgsChanged);
    }
    if seq_b != seq_a {
        categories.push(Category::SequenceChanged);
    }
    if !answer_diff.is_empty() {
        categories.push(Category::OutputChanged);
    }
    if spiked(b.totals.cost_usd, a.totals.cost_usd) {
        categories.push(Category::CostSpike);
    }
    if spiked(b.totals.duration_ms as f64, a.totals.duration_ms as f64) {
        categories.push(Category::LatencySpike);
    }
    if b.totals.llm_calls != a.totals.llm_calls {
        categories.push(Category::StepsChanged);
    }
    let targets = |t: &Trace| t.handoffs.iter().map(|h| h.to.clone()).collect::<Vec<_>>();
    if targets(b) != targets(a) {
        categories.push(Category::RoutingChanged);
    }

    CaseDiff {
        case: id.to_string(),
        only_in: None,
        correctness_before: Some(before.correctness),
        correctness_after: Some(after.correctness),
        path,
        sequence_similarity: Some(metrics::sequence_lcs(&seq_a, &seq_b)),
        tools_before: seq_b.iter().map(|s| s.to_string()).collect(),
        tools_after: seq_a.iter().map(|s| s.to_string()).collect(),
        cost,
        categories,
        answer_diff,
        arg_changes,
    }
}

/// A rise past [`SPIKE_FACTOR`]; from 0 nothing can spike (there is no ratio).
fn spiked(before: f64, after: f64) -> bool {
    before > 0.0 && after > before * SPIKE_FACTOR
}

/// Word-level diff. Whitespace between two changed words joins the changed run,
/// so a rewritten sentence reads as one deletion and one insertion.
pub fn word_diff(before: &str, after: &str) -> Vec<WordChange> {
    let diff = TextDiff::from_words(before, after);
    let mut out: Vec<WordChange> = Vec::new();
    let (mut del, mut ins) = (String::new(), String::new());
    let flush = |out: &mut Vec<WordChange>, del: &mut String, ins: &mut String| {
        let trailing = if del.is_empty() || ins.is_empty() {
            String::new()
        } else {
            let d = del.trim_end().len();
            let tail = del[d..].to_string();
            del.truncate(d);
            let i = ins.trim_end().len();
            ins.truncate(i);
            tail
        };
        for (tag, text) in [("delete", &mut *del), ("insert", &mut *ins)] {
            if !text.is_empty() {
                push(out, tag, text);
                text.clear();
            }
        }
        if !trailing.is_empty() {
            push(out, "equal", &trailing);
        }
    };
    for change in diff.iter_all_changes() {
        let text = change.value();
        match change.tag() {
            ChangeTag::Delete => del.push_str(text),
            ChangeTag::Insert => ins.push_str(text),
            ChangeTag::Equal if text.trim().is_empty() && !del.is_empty() && !ins.is_empty() => {
                del.push_str(text);
                ins.push_str(text);
            }
            ChangeTag::Equal => {
                flush(&mut out, &mut del, &mut ins);
                push(&mut out, "equal", text);
            }
        }
    }
    flush(&mut out, &mut del, &mut ins);
    out
}

fn push(out: &mut Vec<WordChange>, tag: &'static str, text: &str) {
    match out.last_mut() {
        Some(last) if last.tag == tag => last.text.push_str(text),
        _ => out.push(WordChange {
            tag,
            text: text.to_string(),
        }),
    }
}

/// Per-key differences of the arguments of calls at the same position to the same tool.
fn arg_changes(before: &Trace, after: &Trace) -> Vec<ArgChange> {
    let mut out = Vec::new();
    for (i, (b, a)) in before.tool_calls.iter().zip(&after.tool_calls).enumerate() {
        if b.name != a.name || b.arguments == a.arguments {
            continue;
        }
        let mut push = |key: String, vb: Option<&Value>, va: Option<&Value>| {
            let words = match (vb, va) {
                (Some(Value::String(x)), Some(Value::String(y))) => word_diff(x, y),
                _ => Vec::new(),
            };
            out.push(ArgChange {
                call: i + 1,
                tool: b.name.clone(),
                key,
                before: vb.cloned(),
                after: va.cloned(),
                words,
            });
        };
        match (&b.arguments, &a.arguments) {
            (Value::Object(ob), Value::Object(oa)) => {
                let keys: BTreeSet<&String> = ob.keys().chain(oa.keys()).collect();
                for key in keys {
                    let (vb, va) = (ob.get(key), oa.get(key));
                    if vb != va {
                        push(key.clone(), vb, va);
                    }
                }
            }
            (vb, va) => push("(arguments)".into(), Some(vb), Some(va)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ToolCall, Totals};
    use serde_json::json;

    fn trace(tools: &[(&str, Value)], answer: &str, cost: f64, calls: u64, ms: u64) -> Side {
        Side {
            trace: Trace {
                tool_calls: tools
                    .iter()
                    .map(|(name, args)| ToolCall {
                        id: format!("call_{name}"),
                        name: name.to_string(),
                        arguments: args.clone(),
                        result: None,
                        is_error: false,
                        llm_call: 0,
                    })
                    .collect(),
                answer: Some(answer.into()),
                totals: Totals {
                    cost_usd: cost,
                    llm_calls: calls,
                    duration_ms: ms,
                    total_tokens: calls * 100,
                    ..Totals::default()
                },
                ..Trace::default()
            },
            correctness: Status::Pass,
        }
    }

    #[test]
    fn identical_traces_have_no_categories() {
        let s = trace(&[("search", json!({"q": "a"}))], "x", 0.01, 2, 100);
        let d = diff_case("c", &[], &s, &s);
        assert!(d.categories.is_empty());
        assert!(!d.changed());
        assert_eq!(d.sequence_similarity, Some(1.0));
        assert!(d.path.iter().all(|m| m.direction == Direction::Same));
    }

    #[test]
    fn every_category_is_detected() {
        let b = trace(
            &[("search", json!({"q": "tokyo weather"}))],
            "It is sunny",
            0.01,
            2,
            100,
        );
        let a = trace(
            &[
                ("search", json!({"q": "tokyo forecast", "n": 3})),
                ("web", json!({})),
            ],
            "It is rainy",
            0.02,
            3,
            400,
        );
        let d = diff_case("c", &["search".into()], &b, &a);
        let names: Vec<_> = d.categories.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            [
                "tools_changed",
                "args_changed",
                "sequence_changed",
                "output_changed",
                "cost_spike",
                "latency_spike",
                "steps_changed"
            ]
        );
        let keys: Vec<_> = d.arg_changes.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["n", "q"]);
        assert!(
            d.arg_changes[1]
                .words
                .iter()
                .any(|w| w.tag == "insert" && w.text == "forecast")
        );
        assert!(
            d.answer_diff
                .iter()
                .any(|w| w.tag == "delete" && w.text == "sunny")
        );
        let cost = &d.cost[0];
        assert_eq!(
            (cost.direction, cost.change_pct),
            (Direction::Up, Some(100.0))
        );
        assert_eq!(cost.improved(), Some(false));
        assert_eq!(d.path[1].name, "tool_precision");
        assert_eq!(d.path[1].after, 0.5);
    }

    #[test]
    fn change_from_zero_has_no_percentage() {
        let m = MetricChange::new("tool_calls", Unit::Count, 0.0, 3.0, false);
        assert_eq!((m.change_pct, m.direction), (None, Direction::Up));
        let m = MetricChange::new("tool_calls", Unit::Count, 11.0, 0.0, false);
        assert_eq!((m.change_pct, m.improved()), (Some(-100.0), Some(true)));
    }
}
