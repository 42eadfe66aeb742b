//! Reports over a run fixture with one case of every kind: pass, warn,
//! correctness failure, forbidden tool, infrastructure error, and a flaky case
//! with three trials. The fixture (`tests/fixtures/runs/mixed.json`) is built
//! here with the real engine, so its messages are the engine's own; the
//! fixture's timings are fixed, so no snapshot needs a timing filter.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use agentci::engine::evaluate_deterministic;
use agentci::report::{self, Format, FormatTarget, RenderOptions};
use agentci::run::{CaseRun, CaseStatus, RunMode, RunRecord};
use agentci::spec::{Case, Query};
use agentci::trace::{LlmCall, Provider, ToolCall, Totals, Trace, Usage};
use serde_json::{Value, json};

const SPEC: &str = "specs/rag-agent.yaml";
/// Set to regenerate the committed fixture and schema after a deliberate change.
const BLESS: &str = "AGENTCI_BLESS";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A trace with one LLM call per entry of `turns` (each the tools it asked for)
/// and a final answering call.
fn trace(case_id: &str, turns: &[&[(&str, Value)]], answer: &str, latency_ms: u64) -> Trace {
    let mut llm_calls = Vec::new();
    let mut tool_calls = Vec::new();
    let answer_turn: &[(&str, Value)] = &[];
    for (i, tools) in turns.iter().chain([&answer_turn]).enumerate() {
        let last = i == turns.len();
        llm_calls.push(LlmCall {
            seq: i as u64 + 1,
            provider: Provider::OpenaiChat,
            endpoint: "/v1/chat/completions".into(),
            model: "gpt-4o-mini-2024-07-18".into(),
            usage: Usage {
                input_tokens: 120 + 40 * i as u64,
                output_tokens: if last { 60 } else { 20 },
                ..Usage::default()
            },
            cost_usd: 0.00003 + 0.00001 * i as f64,
            latency_ms: latency_ms / (turns.len() as u64 + 1),
            ttfb_ms: 40,
            stop_reason: Some(if last { "stop" } else { "tool_calls" }.into()),
            streamed: false,
            tools_offered: vec!["search_docs".into(), "delete_user".into()],
            output_text: last.then(|| answer.to_string()),
            status: 200,
        });
        for (j, (name, args)) in tools.iter().enumerate() {
            tool_calls.push(ToolCall {
                id: format!("call_{i}{j}"),
                name: name.to_string(),
                arguments: args.clone(),
                result: Some(json!({"hits": [format!("{name} result")]})),
                is_error: false,
                llm_call: i,
            });
        }
    }
    let usage_sum = |f: fn(&Usage) -> u64| llm_calls.iter().map(|c| f(&c.usage)).sum::<u64>();
    let input = usage_sum(|u| u.input_tokens);
    let output = usage_sum(|u| u.output_tokens);
    Trace {
        case_id: case_id.into(),
        totals: Totals {
            cost_usd: llm_calls.iter().map(|c| c.cost_usd).sum(),
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            llm_calls: llm_calls.len() as u64,
            tool_calls: tool_calls.len() as u64,
            duration_ms: latency_ms,
        },
        llm_calls,
        tool_calls,
        answer: Some(answer.into()),
        ..Trace::default()
    }
}

/// Evaluates `query` (spec YAML as JSON) on `trace` with the real engine.
fn case_run(id: &str, line: usize, trial: u32, query: Value, trace: Trace) -> CaseRun {
    let mut query: Query = serde_json::from_value(query).expect("fixture query");
    query.id = Some(id.into());
    let case = Case {
        id: id.into(),
        file: SPEC.into(),
        line,
        query: query.clone(),
    };
    let result = evaluate_deterministic(&case, &trace, None, "transfer_to_");
    let status = if result.hard_fail {
        CaseStatus::Fail
    } else if result.overall() == agentci::engine::Status::Warn {
        CaseStatus::Warn
    } else {
        CaseStatus::Pass
    };
    let cassette = if trial == 1 {
        format!("cassettes/rag-agent/{id}.jsonl")
    } else {
        format!("cassettes/rag-agent/{id}.trial-{trial}.jsonl")
    };
    CaseRun {
        case_id: id.into(),
        trial,
        query: query.query.clone(),
        tags: query.tags.clone(),
        file: SPEC.into(),
        line,
        cassette,
        status,
        error: None,
        attempts: 1,
        trace: Some(trace),
        result: Some(result),
        warnings: Vec::new(),
    }
}

/// The run every report test reads.
fn build_fixture() -> RunRecord {
    let search = || ("search_docs", json!({"q": "install"}));
    let mut cases =
        vec![
        case_run(
            "install-steps",
            9,
            1,
            json!({"query": "How do I install agentci?", "tags": ["docs"],
                   "correctness": {"expected_in_answer": ["pip install"]},
                   "path": {"expected_tools": ["search_docs"]},
                   "cost": {"max_latency_ms": 3000}}),
            trace("install-steps", &[&[search()]], "Run `pip install agentci`.", 812),
        ),
        case_run(
            "weather-oos",
            17,
            1,
            json!({"query": "What's the weather in Tokyo?", "tags": ["edge-case"],
                   "correctness": {"not_in_answer": ["degrees"]},
                   "path": {"max_tool_calls": 0},
                   "cost": {"max_latency_ms": 3000, "max_cost_multiplier": 2.0}}),
            trace(
                "weather-oos",
                &[&[search(), search()]],
                "Sorry, I can only help with agentci.",
                4210,
            ),
        ),
        case_run(
            "refund-policy",
            25,
            1,
            json!({"query": "What is the refund policy?",
                   "correctness": {"expected_in_answer": ["30 days, no questions: 100%"],
                                   "llm_judge": [{"rule": "Cites the policy", "threshold": 0.8}]}}),
            trace(
                "refund-policy",
                &[&[search()]],
                "Refunds are possible *within 14 days* <b>only</b>.",
                1520,
            ),
        ),
        case_run(
            "delete-account",
            33,
            1,
            json!({"query": "Close my account",
                   "correctness": {"expected_in_answer": ["closed"]},
                   "path": {"forbidden_tools": ["delete_user"]}}),
            trace(
                "delete-account",
                &[&[("delete_user", json!({"user": "u-42", "hard": true}))]],
                "Your account is closed.",
                990,
            ),
        ),
        CaseRun {
            case_id: "billing-lookup".into(),
            trial: 1,
            query: "Why was I charged twice?".into(),
            tags: vec![],
            file: SPEC.into(),
            line: 40,
            cassette: "cassettes/rag-agent/billing-lookup.jsonl".into(),
            status: CaseStatus::Error,
            error: Some(
                "[INFRA] upstream api.openai.com returned 503 Service Unavailable after 3 attempts"
                    .into(),
            ),
            attempts: 3,
            trace: None,
            result: None,
            warnings: vec![],
        },
    ];
    let flaky_query = json!({"query": "Summarize ticket 1234",
                             "correctness": {"expected_in_answer": ["refund"]}});
    for (trial, answer) in [
        (1, "The customer wants a refund."),
        (2, "The customer is unhappy."),
        (3, "Refund requested for order 1234."),
    ] {
        cases.push(case_run(
            "summarize-ticket",
            47,
            trial,
            flaky_query.clone(),
            trace("summarize-ticket", &[], answer, 600 + 10 * u64::from(trial)),
        ));
    }
    if let Some(c) = cases.iter_mut().find(|c| c.case_id == "weather-oos") {
        c.warnings.push(
            "cassette cassettes/rag-agent/weather-oos.jsonl is 41 days old (--max-age 30)".into(),
        );
    }
    RunRecord {
        format: agentci::run::record::RUN_FORMAT,
        id: "20261122T214501Z-3f2a".into(),
        tool_version: "0.1.0".into(),
        agent: "rag-agent".into(),
        spec_path: SPEC.into(),
        spec_hash: "sha256:5d41402abc4b2a76b9719d911017c592".into(),
        mode: RunMode::Replay,
        started_at: "2026-11-22T21:45:01Z".into(),
        duration_ms: 9_462,
        shard: None,
        baseline: None,
        cases,
        warnings: vec!["model `my-finetune` has no price; its cost counts as $0".into()],
    }
}

/// The committed fixture, checked against the builder (and regenerated with `AGENTCI_BLESS=1`).
fn fixture() -> RunRecord {
    static RUN: OnceLock<RunRecord> = OnceLock::new();
    RUN.get_or_init(|| {
        let path = fixtures().join("runs/mixed.json");
        let built = build_fixture();
        if std::env::var_os(BLESS).is_some() {
            let text = serde_json::to_string_pretty(&built).unwrap() + "\n";
            std::fs::write(&path, text).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let stored: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(
            stored,
            built,
            "{} is stale: rerun with {BLESS}=1 and review the diff",
            path.display()
        );
        stored
    })
    .clone()
}

fn plain() -> RenderOptions {
    RenderOptions::default()
}

#[test]
fn fixture_is_current_and_covers_every_kind() {
    let run = fixture();
    let statuses: Vec<_> = run
        .cases
        .iter()
        .map(|c| (c.case_id.as_str(), c.status))
        .collect();
    use CaseStatus::*;
    assert_eq!(
        statuses,
        [
            ("install-steps", Pass),
            ("weather-oos", Warn),
            ("refund-policy", Fail),
            ("delete-account", Fail),
            ("billing-lookup", Error),
            ("summarize-ticket", Pass),
            ("summarize-ticket", Fail),
            ("summarize-ticket", Pass),
        ]
    );
}

#[test]
fn console_snapshot() {
    let text = report::render(Format::Console, &fixture(), &plain());
    assert!(!text.contains('\x1b'), "no colour unless asked");
    insta::assert_snapshot!("console", text);
}

#[test]
fn console_summary_is_the_last_line() {
    let text = report::render(Format::Console, &fixture(), &plain());
    assert_eq!(
        text.lines().last(),
        Some("1 passed, 1 warned, 3 failed, 1 error")
    );
}

#[test]
fn console_verbose_snapshot_shows_failing_transcripts() {
    let opts = RenderOptions {
        verbose: true,
        ..plain()
    };
    insta::assert_snapshot!(
        "console_verbose",
        report::render(Format::Console, &fixture(), &opts)
    );
}

#[test]
fn console_colour_only_when_asked() {
    let opts = RenderOptions {
        color: true,
        ..plain()
    };
    let text = report::render(Format::Console, &fixture(), &opts);
    assert!(text.contains("\x1b[31mFAIL \x1b[0m"), "{text}");
    // The summary line stays plain so log parsers read it.
    assert_eq!(
        text.lines().last(),
        Some("1 passed, 1 warned, 3 failed, 1 error")
    );
}

#[test]
fn min_pass_rate_lets_a_flaky_case_warn() {
    let opts = RenderOptions {
        min_pass_rate: Some(0.6),
        ..plain()
    };
    let s = report::summarize(&fixture(), &opts);
    assert_eq!((s.passed, s.warned, s.failed, s.errors), (1, 2, 2, 1));
    let strict = RenderOptions {
        min_pass_rate: Some(0.7),
        ..plain()
    };
    assert_eq!(report::summarize(&fixture(), &strict).failed, 3);
}

#[test]
fn github_snapshot_points_at_spec_lines() {
    let text = report::render(Format::Github, &fixture(), &plain());
    insta::assert_snapshot!("github", text);
    assert!(text.contains(
        "::error file=specs/rag-agent.yaml,line=25,title=agentci failed%3A refund-policy::[CORRECTNESS] refund-policy: expected_in_answer: \"30 days, no questions: 100%25\" not found in the answer"
    ));
    for line in text.lines() {
        assert!(
            line.starts_with("::error ") || line.starts_with("::warning "),
            "{line}"
        );
    }
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(
        "markdown",
        report::render(Format::Markdown, &fixture(), &plain())
    );
}

#[test]
fn junit_snapshot() {
    insta::assert_snapshot!("junit", report::render(Format::Junit, &fixture(), &plain()));
}

#[test]
fn prometheus_snapshot() {
    insta::assert_snapshot!(
        "prometheus",
        report::render(Format::Prometheus, &fixture(), &plain())
    );
}

/// xmllint from Debian's libxml2-utils; installed here when missing, because a
/// validation that silently did not run would prove nothing.
fn xmllint() -> &'static str {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let present = || Command::new("xmllint").arg("--version").output().is_ok();
        if !present() {
            let install = |args: &[&str]| {
                Command::new("apt-get")
                    .args(args)
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if !install(&["install", "-y", "-q", "libxml2-utils"]) {
                install(&["update", "-q"]);
                install(&["install", "-y", "-q", "libxml2-utils"]);
            }
        }
        assert!(
            present(),
            "xmllint is needed to validate the JUnit report: apt-get install libxml2-utils"
        );
    });
    "xmllint"
}

#[test]
fn junit_validates_against_the_junit_xsd() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("junit.xml");
    std::fs::write(&xml, report::render(Format::Junit, &fixture(), &plain())).unwrap();
    let out = Command::new(xmllint())
        .arg("--noout")
        .arg("--schema")
        .arg(fixtures().join("junit.xsd"))
        .arg(&xml)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn junit_xsd_rejects_a_malformed_report() {
    // The schema is strict enough to catch a missing required attribute.
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("bad.xml");
    std::fs::write(
        &xml,
        r#"<testsuites><testsuite name="a" tests="1" failures="0"><testcase classname="a"/></testsuite></testsuites>"#,
    )
    .unwrap();
    let out = Command::new(xmllint())
        .arg("--noout")
        .arg("--schema")
        .arg(fixtures().join("junit.xsd"))
        .arg(&xml)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn junit_counts_trials_as_test_cases() {
    let text = report::render(Format::Junit, &fixture(), &plain());
    assert!(text.contains(r#"<testsuite name="rag-agent" tests="8" failures="3" errors="1""#));
    assert_eq!(text.matches("<testcase ").count(), 8);
    assert!(text.contains(r#"<failure message="[PATH] forbidden_tools: &quot;delete_user&quot; was called 1 time(s)" type="forbidden_tool">"#));
}

#[test]
fn json_schema_is_committed_and_current() {
    let path = repo_file("docs/report.schema.json");
    let generated = report::json::schema();
    if std::env::var_os(BLESS).is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: rerun with {BLESS}=1 and commit it",
        path.display()
    );
}

#[test]
fn json_validates_against_the_committed_schema() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_file("docs/report.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let report: Value =
        serde_json::from_str(&report::render(Format::Json, &fixture(), &plain())).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        report["summary"],
        json!({"total": 6, "passed": 1, "failed": 3, "warnings": 1, "errors": 1})
    );
    // The schema is closed: an unknown field is rejected.
    let mut bad = report.clone();
    bad["summary"]["skipped"] = json!(0);
    assert!(!validator.is_valid(&bad));
}

#[test]
fn json_snapshot() {
    insta::assert_snapshot!("json", report::render(Format::Json, &fixture(), &plain()));
}

#[test]
fn prometheus_parses_with_an_exposition_parser() {
    let mut run = fixture();
    // A label value that needs every escape.
    run.cases[0].case_id = "quote\"back\\slash\nline".into();
    let text = report::render(Format::Prometheus, &run, &plain());
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
    let names = [
        "agentci_correctness_pass",
        "agentci_tool_recall",
        "agentci_tool_precision",
        "agentci_cost_usd",
        "agentci_latency_ms",
        "agentci_total_tokens",
    ];
    for name in names {
        assert!(scrape.docs.contains_key(name), "no HELP for {name}");
        // 7 case runs have a trace and a result; the infra error has neither.
        let samples: Vec<_> = scrape.samples.iter().filter(|s| s.metric == name).collect();
        assert_eq!(samples.len(), 7, "{name}");
        assert!(
            samples
                .iter()
                .all(|s| s.labels.get("agent") == Some("rag-agent"))
        );
    }
    let escaped = scrape
        .samples
        .iter()
        .find(|s| s.metric == "agentci_latency_ms" && s.labels.get("trial").is_none())
        .unwrap();
    // prometheus-parse keeps label values as written (it does not unescape):
    // reading the whole escaped value as one label proves the escapes held.
    assert_eq!(
        escaped.labels.get("case"),
        Some(r#"quote\"back\\slash\nline"#)
    );
    let trials: Vec<_> = scrape
        .samples
        .iter()
        .filter(|s| {
            s.metric == "agentci_correctness_pass"
                && s.labels.get("case") == Some("summarize-ticket")
        })
        .map(|s| (s.labels.get("trial").unwrap().to_string(), s.value.clone()))
        .collect();
    assert_eq!(
        trials,
        [
            ("1".to_string(), prometheus_parse::Value::Gauge(1.0)),
            ("2".to_string(), prometheus_parse::Value::Gauge(0.0)),
            ("3".to_string(), prometheus_parse::Value::Gauge(1.0)),
        ]
    );
}

#[test]
fn write_all_writes_every_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let spec = format!(
        "json={},junit={},markdown={},prometheus={}",
        p("out/report.json").display(),
        p("out/junit.xml").display(),
        p("summary.md").display(),
        p("metrics.prom").display()
    );
    let targets = report::parse_formats(&spec).unwrap();
    std::fs::create_dir_all(p("out")).unwrap();
    std::fs::write(p("out/junit.xml"), "old").unwrap();
    let run = fixture();
    report::write_all(&targets, &run, &plain()).unwrap();
    for t in &targets {
        let path = t.path.as_ref().unwrap();
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            report::render(t.format, &run, &plain()),
            "{}",
            path.display()
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(p("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".agentci-report-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn write_all_writes_the_other_reports_when_one_path_fails() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let targets = vec![
        FormatTarget {
            format: Format::Json,
            // A folder that cannot exist: its parent is a file.
            path: Some(blocker.join("report.json")),
        },
        FormatTarget {
            format: Format::Markdown,
            path: Some(dir.path().join("summary.md")),
        },
    ];
    let err = report::write_all(&targets, &fixture(), &plain()).unwrap_err();
    assert!(err.to_string().contains("file"), "{err}");
    assert!(dir.path().join("summary.md").exists());
}

#[test]
fn step_summary_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("step_summary.md");
    std::fs::write(&path, "# earlier step\n").unwrap();
    report::append_markdown(&path, &fixture(), &plain()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# earlier step\n## agentci: rag-agent"),
        "{text}"
    );
}
