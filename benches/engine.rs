//! The deterministic layers over 10,000 cases with 20-step traces (target: < 1 s).
//! Run: `cargo bench --bench engine`. Prints the total, the per-case figure and
//! the ratio against the target from one run.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use agentci::engine;
use agentci::spec::{
    ArgsMatchMode, Case, Correctness, CostSpec, MatchMode, PathSpec, Query, ToolArgsExpectation,
};
use agentci::trace::{Handoff, ToolCall, Totals, Trace};
use serde_json::json;

const CASES: usize = 10_000;
const STEPS: usize = 20;
const TOOLS: [&str; 6] = [
    "search",
    "rerank",
    "fetch",
    "grade",
    "summarize",
    "generate",
];

fn trace(i: usize) -> Trace {
    let tool_calls = (0..STEPS)
        .map(|s| {
            // Vary the sequences per case so LCS and matching do real work.
            let name = TOOLS[(s * 7 + i + s / 3) % TOOLS.len()];
            ToolCall {
                id: format!("call_{i}_{s}"),
                name: name.to_string(),
                arguments: json!({"q": format!("query {i} step {s}"), "k": s % 5, "ts": i}),
                result: Some(json!(format!("result {s}"))),
                is_error: false,
                llm_call: s / 2,
            }
        })
        .collect();
    Trace {
        case_id: format!("case-{i}"),
        tool_calls,
        handoffs: vec![Handoff {
            to: "billing_agent".into(),
            tool_name: "transfer_to_billing_agent".into(),
            tool_call_id: "call_h".into(),
            llm_call: 0,
        }],
        tools_available: vec!["search".into(), "transfer_to_billing_agent".into()],
        totals: Totals {
            cost_usd: 0.004 + i as f64 * 1e-7,
            input_tokens: 3000,
            output_tokens: 400,
            total_tokens: 3400,
            llm_calls: 10,
            tool_calls: STEPS as u64,
            duration_ms: 4200,
        },
        answer: Some(format!(
            "Install it with pip install agentci, then run agentci replay. Case {i}."
        )),
        ..Trace::default()
    }
}

fn case(i: usize) -> Case {
    Case {
        id: format!("case-{i}"),
        file: PathBuf::from("specs/bench.yaml"),
        line: i + 1,
        query: Query {
            id: Some(format!("case-{i}")),
            query: format!("How do I install agentci? ({i})"),
            description: None,
            tags: vec![],
            correctness: Some(Correctness {
                expected_in_answer: vec!["pip install".into(), "replay".into()],
                not_in_answer: vec!["degrees".into(), "forecast".into()],
                regex_match: Some(r"^Install\b".into()),
                ..Correctness::default()
            }),
            path: Some(PathSpec {
                max_tool_calls: Some(15),
                expected_tools: vec!["search".into(), "generate".into()],
                forbidden_tools: vec!["web_search".into()],
                max_loops: Some(2),
                match_mode: Some(MatchMode::Unordered),
                min_tool_precision: Some(0.5),
                min_sequence_similarity: Some(0.8),
                expected_handoff: Some("BillingAgent".into()),
                max_handoff_count: Some(1),
                expected_tool_args: vec![ToolArgsExpectation {
                    tool: "search".into(),
                    args: json!({"q": "query"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                    mode: ArgsMatchMode::Contains,
                    ignore: vec!["ts".into()],
                }],
                ..PathSpec::default()
            }),
            cost: Some(CostSpec {
                max_cost_multiplier: Some(2.0),
                max_total_tokens: Some(5000),
                max_llm_calls: Some(8),
                max_latency_ms: Some(3000),
                max_cost_usd: Some(0.01),
            }),
        },
    }
}

fn main() {
    let cases: Vec<Case> = (0..CASES).map(case).collect();
    let traces: Vec<Trace> = (0..CASES).map(trace).collect();
    let baselines: Vec<Trace> = (0..CASES).map(|i| trace(i + 1)).collect();

    // One warm-up pass, then the measured one.
    let mut checksum = 0usize;
    for ((c, t), b) in cases.iter().zip(&traces).zip(&baselines).take(100) {
        checksum += engine::evaluate_deterministic(c, t, Some(b), "transfer_to_")
            .path
            .messages
            .len();
    }
    let start = Instant::now();
    let mut hard_fails = 0usize;
    for ((c, t), b) in cases.iter().zip(&traces).zip(&baselines) {
        let result = black_box(engine::evaluate_deterministic(
            black_box(c),
            black_box(t),
            Some(black_box(b)),
            "transfer_to_",
        ));
        hard_fails += usize::from(result.hard_fail);
        checksum += result.path.messages.len() + result.cost.messages.len();
    }
    let elapsed = start.elapsed();
    let secs = elapsed.as_secs_f64();
    println!(
        "engine/deterministic: {CASES} cases × {STEPS}-step traces (with baseline) in {:.1} ms = {:.1} µs/case; target < 1000 ms: {} ({:.0}% of the budget)",
        secs * 1e3,
        secs * 1e6 / CASES as f64,
        if secs < 1.0 { "met" } else { "MISSED" },
        secs * 100.0
    );
    println!("  ({hard_fails} hard fails, checksum {checksum})");
}
