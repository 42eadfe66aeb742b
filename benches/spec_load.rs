//! How long `spec::load` (parse + includes + shape check + rules + merge + ids)
//! takes on a generated 10,000-query spec. Target: under 1 s.
//! Run: `cargo bench --bench spec_load`

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use agentci::spec::{self, Filter};

const QUERIES: usize = 10_000;
const RUNS: usize = 5;

/// A spec with `n` queries, each with tags, correctness (incl. a regex and a
/// judge rubric), path and cost checks, under shared defaults.
fn generate(n: usize) -> String {
    let mut s = String::from(
        "agent: bench-agent\ndefaults:\n  correctness: {hallucination_check: {rule: grounded, threshold: 0.8}}\n  cost: {max_cost_multiplier: 2.0}\nqueries:\n",
    );
    for i in 0..n {
        let _ = write!(
            s,
            "  - query: \"Question number {i}: how do I configure feature {i}?\"\n    tags: [t{}, bench]\n    correctness:\n      expected_in_answer: [\"feature {i}\"]\n      not_in_answer: [error]\n      regex_match: \"(?i)feature\\\\s+{i}\"\n      llm_judge: [{{rule: \"Answers question {i}\", threshold: 0.7}}]\n    path: {{max_tool_calls: 3, expected_tools: [search], match_mode: subset, min_tool_recall: 1.0}}\n    cost: {{max_total_tokens: 2000, max_llm_calls: 3}}\n",
            i % 10
        );
    }
    s
}

fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("big.yaml");
    let text = generate(QUERIES);
    std::fs::write(&path, &text).expect("write the spec");

    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        let loaded = spec::load(&path, &Filter::default()).expect("the generated spec is valid");
        times.push(start.elapsed());
        assert_eq!(loaded.cases.len(), QUERIES);
    }
    times.sort();
    let median = times[RUNS / 2];

    // Where the time goes: the YAML parser alone, and compiling the regexes.
    let start = Instant::now();
    let mut budget = serde_saphyr::budget::Budget::default();
    budget.max_nodes = 10_000_000; // as the loader does: the default stops at 250,000
    budget.max_events = 20_000_000;
    let options = serde_saphyr::options! { budget: Some(budget) };
    let parsed: serde_json::Value =
        serde_saphyr::from_str_with_options(&text, options).expect("valid YAML");
    let parse_only = start.elapsed();
    drop(parsed);
    let start = Instant::now();
    for i in 0..QUERIES {
        let _ = regex::Regex::new(&format!("(?i)feature\\s+{i}"));
    }
    let regex_compile = start.elapsed();
    let start = Instant::now();
    for i in 0..QUERIES {
        let _ = regex_syntax::Parser::new().parse(&format!("(?i)feature\\s+{i}"));
    }
    let regex_parse = start.elapsed();
    let best = times[0];
    println!(
        "spec_load: {QUERIES} queries, {:.1} MiB of YAML",
        text.len() as f64 / (1024.0 * 1024.0)
    );
    println!(
        "  load+validate: median {:.0} ms, best {:.0} ms over {RUNS} runs ({:.1} µs per query)",
        ms(median),
        ms(best),
        median.as_secs_f64() * 1e6 / QUERIES as f64
    );
    println!(
        "  YAML parse alone (serde-saphyr → JSON value): {:.0} ms ({:.2}x of load)",
        ms(parse_only),
        ms(parse_only) / ms(median)
    );
    println!(
        "  {QUERIES} regexes: full compile {:.0} ms, syntax check (what validate does) {:.0} ms",
        ms(regex_compile),
        ms(regex_parse)
    );
    println!(
        "  target 1000 ms: median is {:.2}x the budget ({})",
        ms(median) / 1000.0,
        if median < Duration::from_secs(1) {
            "within"
        } else {
            "OVER"
        }
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
