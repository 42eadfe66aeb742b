//! The runner from the user's side: `agentci record` a Python agent on the
//! official openai SDK against the fake provider, replay it with the provider
//! gone, evaluate the cassettes alone, and the exit code of every outcome.

use agentci::fake::{FakeOptions, FakeProvider, Script};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support;
use crate::support::project::{Project, ScriptedUpstream, text};

/// The rag-agent demo spec with the test venv's Python.
fn rag_spec(project: &Project) -> PathBuf {
    let python = support::sdk::python();
    let agent = support::repo_root().join("examples/rag-agent/agent.py");
    let spec = std::fs::read_to_string(support::repo_root().join("specs/rag-agent.yaml")).unwrap();
    let command = format!(
        "  command: [{:?}, {:?}]\n",
        python.display().to_string(),
        agent.display().to_string()
    );
    let mut out = String::new();
    for line in spec.lines() {
        if line.trim_start().starts_with("command:") {
            out.push_str(&command);
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    project.write("specs/rag-agent.yaml", &out)
}

fn rag_script() -> Script {
    Script::load(&support::repo_root().join("examples/rag-agent/fake-script.json")).unwrap()
}

/// Case id → (status, answer, tool names) from a JSON report.
fn outcomes(report: &Path) -> Vec<(String, String, String, Vec<String>)> {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let mut rows = Vec::new();
    for result in json["results"].as_array().expect("results") {
        let runs = result["runs"].as_array().cloned().unwrap_or_default();
        for run in runs {
            let tools = run["tools"]
                .as_array()
                .map(|tools| {
                    tools
                        .iter()
                        .map(|t| t.as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default();
            rows.push((
                result["id"].as_str().unwrap_or("").to_string(),
                run["status"].as_str().unwrap_or("").to_string(),
                run["answer"].as_str().unwrap_or("").to_string(),
                tools,
            ));
        }
    }
    rows
}

#[test]
fn record_then_replay_offline_then_cassettes_only_agree() {
    let rt = support::runtime();
    let fake = rt
        .block_on(FakeProvider::start(rag_script(), FakeOptions::default()))
        .unwrap();
    let project = Project::new();
    let ca = project.path("fake-ca.pem");
    fake.write_ca_pem(&ca).unwrap();
    let spec = rag_spec(&project);
    let spec = spec.to_str().unwrap();

    let recorded = project.agentci(
        &[
            "record",
            "--spec",
            spec,
            "--upstream-ca",
            ca.to_str().unwrap(),
            // The SDK talks to "api.openai.com"; the proxy connects to the fake instead.
            "--upstream-override",
            &format!("api.openai.com={}", fake.base_url()),
            "--format",
            "console,json=record.json",
        ],
        &[("OPENAI_API_KEY", "sk-test-recording-key-0123456789abcdef")],
    );
    assert_eq!(recorded.status.code(), Some(0), "{}", text(&recorded));
    let llm_requests = fake.request_count();
    assert!(
        llm_requests >= 5,
        "the agent talked to the provider: {llm_requests}"
    );
    for case in ["install", "weather-oos", "aws-alb"] {
        let cassette = project.path(&format!("cassettes/rag-agent/{case}.jsonl"));
        let body = std::fs::read_to_string(&cassette).unwrap();
        assert!(
            body.contains("\"url\":\"https://api.openai.com/v1/chat/completions\""),
            "recorded under the host the SDK asked for: {}",
            cassette.display()
        );
        assert!(
            !body.contains("sk-test-recording-key"),
            "secret in {}",
            cassette.display()
        );
    }
    rt.block_on(fake.shutdown());

    // The provider is gone: replay must not need it.
    let replayed = project.agentci(
        &[
            "replay",
            "--spec",
            spec,
            "--format",
            "console,json=replay.json",
        ],
        &[("OPENAI_API_KEY", "sk-other-key-for-replay-000000000000")],
    );
    assert_eq!(replayed.status.code(), Some(0), "{}", text(&replayed));
    let stdout = String::from_utf8_lossy(&replayed.stdout);
    assert!(
        stdout
            .lines()
            .last()
            .unwrap_or("")
            .contains("3 passed, 0 warned, 0 failed"),
        "{stdout}"
    );

    let only = project.agentci(
        &[
            "replay",
            "--spec",
            spec,
            "--cassettes-only",
            "--format",
            "json=only.json",
        ],
        &[],
    );
    assert_eq!(only.status.code(), Some(0), "{}", text(&only));

    let record = outcomes(&project.path("record.json"));
    assert_eq!(record.len(), 3);
    assert_eq!(record, outcomes(&project.path("replay.json")));
    assert_eq!(record, outcomes(&project.path("only.json")));
    let install = record.iter().find(|r| r.0 == "install").unwrap();
    assert_eq!(install.3, vec!["retriever_tool".to_string()]);
    assert!(install.2.contains("pip install"), "{install:?}");

    // judge-only re-scores the stored run with a stricter spec, no agent, no proxy.
    let stricter = std::fs::read_to_string(spec)
        .unwrap()
        .replace("max_total_tokens: 1000", "max_total_tokens: 10");
    std::fs::write(spec, stricter).unwrap();
    let rescored = project.agentci(
        &["judge-only", "--spec", spec, "--run", "latest", "--offline"],
        &[],
    );
    assert_eq!(rescored.status.code(), Some(0), "{}", text(&rescored));
    assert!(
        String::from_utf8_lossy(&rescored.stdout).contains("1 warned"),
        "{}",
        text(&rescored)
    );
    // The agent's prompt changed (v1): its first request is not in the cassette.
    let changed = project.agentci(
        &["replay", "--spec", spec, "--case", "weather-oos"],
        &[("RAG_AGENT_VERSION", "v1")],
    );
    let out = text(&changed);
    assert_eq!(changed.status.code(), Some(2), "{out}");
    assert!(out.contains("[MISS]"), "{out}");
    assert!(
        out.contains("prompt v1") && out.contains("prompt v2"),
        "the diff shows both prompts: {out}"
    );
    assert!(out.contains("agentci record --spec"), "{out}");
}

/// A spec whose agent is a shell line; no LLM calls, so no provider is needed.
fn shell_spec(project: &Project, command: &str, extra: &str) -> String {
    let spec = format!(
        "agent: shell-agent\nrunner:\n  command: {command:?}\n  timeout_s: 1\nqueries:\n  - id: only\n    query: \"say hello\"\n{extra}"
    );
    project.write("spec.yaml", &spec).display().to_string()
}

fn exit_of(project: &Project, spec: &str, mode: &str) -> (i32, String) {
    let out = project.agentci(&[mode, "--spec", spec], &[]);
    (out.status.code().unwrap_or(-1), text(&out))
}

#[test]
fn exit_codes_follow_the_reference() {
    let project = Project::new();
    let pass = shell_spec(
        &project,
        "echo hello world",
        "    correctness: {expected_in_answer: [hello]}\n",
    );
    assert_eq!(exit_of(&project, &pass, "record").0, 0);
    assert_eq!(exit_of(&project, &pass, "replay").0, 0);

    let warn = shell_spec(
        &project,
        "echo hello world",
        "    correctness: {expected_in_answer: [hello]}\n    path: {expected_tools: [search], min_tool_recall: 1.0}\n",
    );
    let (code, out) = exit_of(&project, &warn, "replay");
    assert_eq!(code, 0, "warnings alone pass: {out}");
    assert!(out.contains("1 warned"), "{out}");

    let fail = shell_spec(
        &project,
        "echo hello world",
        "    correctness: {expected_in_answer: [goodbye]}\n",
    );
    let (code, out) = exit_of(&project, &fail, "replay");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("goodbye"), "the failing term is named: {out}");

    let crash = shell_spec(&project, "echo oops >&2; exit 3", "");
    let (code, out) = exit_of(&project, &crash, "replay");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("exited with code 3") && out.contains("oops"),
        "{out}"
    );

    let timeout = shell_spec(&project, "sleep 20", "");
    let (code, out) = exit_of(&project, &timeout, "replay");
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("timed out"), "{out}");

    // No cassette for a new case: a miss, naming the command that records it.
    let missing = format!(
        "{}  - id: brand-new\n    query: \"new\"\n",
        std::fs::read_to_string(&pass).unwrap()
    );
    std::fs::write(&pass, missing).unwrap();
    let (code, out) = exit_of(&project, &pass, "replay");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("agentci record --spec") && out.contains("--case brand-new"),
        "{out}"
    );

    // A reworded query no longer describes its cassette, even without the agent.
    let reworded = shell_spec(&project, "echo hello world", "");
    std::fs::write(
        &reworded,
        std::fs::read_to_string(&reworded)
            .unwrap()
            .replace("say hello", "say hello twice"),
    )
    .unwrap();
    let out = project.agentci(&["replay", "--spec", &reworded, "--cassettes-only"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    assert!(
        report.contains("[MISS] the spec's query changed")
            && report.contains("-say hello\n")
            && report.contains("+say hello twice"),
        "{report}"
    );

    let invalid = project.write("bad.yaml", "agent: x\nqueries: []\n");
    let (code, out) = exit_of(&project, invalid.to_str().unwrap(), "replay");
    assert_eq!(code, 2, "{out}");
}

#[test]
fn a_failed_recording_never_replaces_the_committed_cassette() {
    let project = Project::new();
    let good = shell_spec(&project, "echo first answer", "");
    assert_eq!(exit_of(&project, &good, "record").0, 0);
    let cassette = project.path("cassettes/shell-agent/only.jsonl");
    let before = std::fs::read(&cassette).unwrap();
    let crashing = shell_spec(&project, "echo partial; exit 9", "");
    assert_eq!(exit_of(&project, &crashing, "record").0, 2);
    assert_eq!(std::fs::read(&cassette).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(cassette.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        leftovers,
        vec!["only.jsonl".to_string()],
        "no scratch files left behind"
    );
}

/// The run commands cache the loaded spec; an edit to an included file must
/// still change the next run's verdict.
#[test]
fn an_edited_include_is_read_again_despite_the_spec_cache() {
    let project = Project::new();
    let spec = project.write(
        "spec.yaml",
        "agent: shell-agent\nrunner:\n  command: \"echo hello world\"\nqueries:\n  - $include: more.yaml\n",
    );
    let spec = spec.to_str().unwrap();
    let more = |term: &str| {
        project.write(
            "more.yaml",
            &format!("- id: only\n  query: \"say hello\"\n  correctness: {{expected_in_answer: [{term}]}}\n"),
        )
    };
    more("hello");
    assert_eq!(exit_of(&project, spec, "record").0, 0);
    let replay = || {
        let out = project.agentci(&["replay", "--cassettes-only", "--spec", spec], &[]);
        (out.status.code().unwrap_or(-1), text(&out))
    };
    assert_eq!(replay().0, 0);
    let cached = std::fs::read_dir(project.path(".agentci/cache"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(cached, 1, "the run cached its spec");

    more("goodbye");
    let (code, out) = replay();
    assert_eq!(code, 1, "the edited include was read: {out}");
    assert!(out.contains("goodbye"), "{out}");
    more("hello");
    assert_eq!(replay().0, 0);
}

#[test]
fn shards_merged_equal_the_unsharded_run() {
    let project = Project::new();
    let mut queries = String::new();
    for i in 0..9 {
        queries.push_str(&format!(
            "  - id: case-{i}\n    query: \"q{i}\"\n    correctness: {{expected_in_answer: [{}]}}\n",
            if i % 4 == 0 { "nope" } else { "q" }
        ));
    }
    let spec = project
        .write(
            "spec.yaml",
            &format!(
                "agent: sharded\nrunner:\n  command: \"echo $AGENTCI_QUERY\"\nqueries:\n{queries}"
            ),
        )
        .display()
        .to_string();
    assert_eq!(
        project
            .agentci(&["record", "--spec", &spec], &[])
            .status
            .code(),
        Some(1)
    );
    // The whole suite replayed at once is what the shards must add up to.
    assert_eq!(
        project
            .agentci(
                &["replay", "--spec", &spec, "--format", "json=all.json"],
                &[]
            )
            .status
            .code(),
        Some(1)
    );
    let mut run_files = Vec::new();
    for i in 1..=3 {
        let shard = format!("{i}/3");
        project.agentci(&["replay", "--spec", &spec, "--shard", &shard], &[]);
        let id = std::fs::read_to_string(project.path(".agentci/runs/latest")).unwrap();
        run_files.push(
            project
                .path(&format!(".agentci/runs/{}/run.json", id.trim()))
                .display()
                .to_string(),
        );
    }
    let mut args = vec!["merge".to_string()];
    args.extend(run_files);
    args.extend(["--format".into(), "json=merged.json".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged = project.agentci(&args, &[]);
    assert_eq!(merged.status.code(), Some(1), "{}", text(&merged));
    let all = outcomes(&project.path("all.json"));
    assert_eq!(all.len(), 9);
    assert_eq!(outcomes(&project.path("merged.json")), all);
}

#[test]
fn trials_of_a_flaky_agent_give_pass_at_k_and_pass_pow_k() {
    let project = Project::new();
    // Deterministically flaky: the second trial answers wrong.
    let spec = shell_spec(
        &project,
        "if [ \"$AGENTCI_TRIAL\" = 2 ]; then echo wrong; else echo right; fi",
        "    correctness: {expected_in_answer: [right]}\n",
    );
    let recorded = project.agentci(&["record", "--spec", &spec, "--trials", "3"], &[]);
    assert_eq!(
        recorded.status.code(),
        Some(1),
        "every trial must pass by default: {}",
        text(&recorded)
    );
    for name in ["only.jsonl", "only.trial-2.jsonl", "only.trial-3.jsonl"] {
        assert!(
            project
                .path(&format!("cassettes/shell-agent/{name}"))
                .is_file(),
            "{name}"
        );
    }
    let replayed = project.agentci(
        &[
            "replay",
            "--spec",
            &spec,
            "--min-pass-rate",
            "0.6",
            "--format",
            "console,json=trials.json",
        ],
        &[],
    );
    let out = text(&replayed);
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "2/3 passes a 0.6 gate: {out}"
    );
    assert!(out.contains("2/3 passed") && out.contains("flaky"), "{out}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path("trials.json")).unwrap())
            .unwrap();
    let trials = &json["results"][0]["trials"];
    assert_eq!(
        (trials["passed"].as_u64(), trials["total"].as_u64()),
        (Some(2), Some(3)),
        "{trials}"
    );
    let close = |v: &Value, want: &[f64]| {
        let got: Vec<f64> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-9)
    };
    // n = 3, c = 2: pass@k = 1 − C(1,k)/C(3,k); pass^k = C(2,k)/C(3,k).
    assert!(
        close(&trials["pass_at_k"], &[2.0 / 3.0, 1.0, 1.0]),
        "{trials}"
    );
    assert!(
        close(&trials["pass_pow_k"], &[2.0 / 3.0, 1.0 / 3.0, 0.0]),
        "{trials}"
    );
    assert_eq!(trials["flaky"], Value::Bool(true));
}

#[test]
fn github_annotations_point_at_the_query_line() {
    let project = Project::new();
    let spec = shell_spec(
        &project,
        "echo hello world",
        "    correctness: {expected_in_answer: [goodbye]}\n    cost: {max_latency_ms: 0}\n",
    );
    assert_eq!(exit_of(&project, &spec, "record").0, 1);
    let summary = project.path("summary.md");
    let out = project.agentci(
        &["replay", "--spec", &spec, "--format", "console"],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // `- id: only` is line 6 of the generated spec.
    let line = std::fs::read_to_string(&spec)
        .unwrap()
        .lines()
        .position(|l| l.contains("- id: only"))
        .unwrap()
        + 1;
    assert!(
        stdout.lines().any(
            |l| l.starts_with(&format!("::error file={spec},line={line},"))
                && l.contains("[CORRECTNESS] only:")
        ),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with(&format!("::warning file={spec},line={line},"))),
        "{stdout}"
    );
    assert!(
        std::fs::read_to_string(&summary).unwrap().contains("only"),
        "step summary appended"
    );
}

#[test]
fn a_forbidden_tool_fails_the_case_with_exit_1() {
    let project = Project::new();
    // A recorded conversation in which the model called get_weather.
    let fixture =
        support::repo_root().join("tests/fixtures/cassettes/openai-chat-tool-call-plain.jsonl");
    let cassette = project.path("cassettes/weather-bot/paris.jsonl");
    std::fs::create_dir_all(cassette.parent().unwrap()).unwrap();
    std::fs::copy(&fixture, &cassette).unwrap();
    let spec = project.write(
        "spec.yaml",
        "agent: weather-bot\nqueries:\n  - id: paris\n    query: \"What's the weather?\"\n    correctness: {expected_in_answer: [cloudy]}\n    path: {forbidden_tools: [get_weather]}\n",
    );
    let out = project.agentci(
        &[
            "replay",
            "--spec",
            spec.to_str().unwrap(),
            "--cassettes-only",
            "--format",
            "console,prometheus=m.prom",
        ],
        &[],
    );
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("[PATH] forbidden_tools") && shown.contains("get_weather"),
        "{shown}"
    );
    // Every report is written before the exit code is decided, and export-metrics reads the stored run.
    let prom = std::fs::read_to_string(project.path("m.prom")).unwrap();
    assert!(
        prom.contains("agentci_correctness_pass{agent=\"weather-bot\",case=\"paris\"} 1"),
        "{prom}"
    );
    let exported = project.agentci(
        &[
            "export-metrics",
            "--run",
            "latest",
            "--format",
            "prometheus",
        ],
        &[],
    );
    assert_eq!(exported.status.code(), Some(0), "{}", text(&exported));
    assert_eq!(String::from_utf8_lossy(&exported.stdout), prom);
}

fn read_json(project: &Project, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(project.path(name)).unwrap()).unwrap()
}

#[test]
fn an_upstream_503_is_retried_and_a_genuine_failure_is_not() {
    let project = Project::new();
    // The first call gets a 503, the second a completion.
    let upstream = ScriptedUpstream::start(
        &project,
        "rules:\n  - when: {first_user_contains: ping}\n    replies:\n      - error: {status: 503}\n      - {text: pong}\n",
    );
    // curl -f fails on the 503 like an agent without its own retries would.
    let agent = r#"curl -sSf "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' -d '{"model":"gpt-4o","messages":[{"role":"user","content":"ping"}]}' | grep -o pong"#;
    let spec = shell_spec(
        &project,
        agent,
        "    correctness: {expected_in_answer: [pong]}\n",
    );
    let out = upstream.record(
        &project,
        &spec,
        &["--format", "console,json=retry.json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json = read_json(&project, "retry.json");
    assert_eq!(json["results"][0]["runs"][0]["attempts"], 2, "{json}");
    assert_eq!(upstream.fake.request_count(), 2);

    // A wrong answer is not an infrastructure problem: one attempt only.
    let wrong = shell_spec(
        &project,
        agent,
        "    correctness: {expected_in_answer: [ping-pong-champion]}\n",
    );
    let out = upstream.record(&project, &wrong, &["--format", "json=wrong.json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let json = read_json(&project, "wrong.json");
    assert_eq!(json["results"][0]["runs"][0]["attempts"], 1, "{json}");
    upstream.stop();
}

#[test]
fn a_secret_in_a_request_body_is_scrubbed_and_still_replays() {
    let project = Project::new();
    let upstream = ScriptedUpstream::start(
        &project,
        "rules:\n  - when: {first_user_contains: token}\n    reply: {text: accepted}\n",
    );
    // The agent puts a secret from its environment into the prompt itself.
    let agent = r#"curl -sSf "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' -d "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"token $MY_SERVICE_TOKEN\"}]}" | grep -o accepted"#;
    let spec = shell_spec(
        &project,
        agent,
        "    correctness: {expected_in_answer: [accepted]}\n",
    );
    let secret = ("MY_SERVICE_TOKEN", "tok-0123456789-do-not-store");
    let out = upstream.record(&project, &spec, &[], &[secret]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let cassette =
        std::fs::read_to_string(project.path("cassettes/shell-agent/only.jsonl")).unwrap();
    assert!(!cassette.contains(secret.1), "{cassette}");
    assert!(
        cassette.contains("<redacted:MY_SERVICE_TOKEN>"),
        "{cassette}"
    );
    upstream.stop();
    let out = project.agentci(&["replay", "--spec", &spec], &[secret]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the scrubbed recording matches: {}",
        text(&out)
    );
}

#[test]
fn quiet_shows_only_failures_and_the_summary() {
    let project = Project::new();
    let spec = project.write(
        "spec.yaml",
        "agent: q\nrunner: {command: \"echo hi\"}\nqueries:\n  - id: good\n    query: x\n    correctness: {expected_in_answer: [hi]}\n  - id: bad\n    query: y\n    correctness: {expected_in_answer: [bye]}\n",
    );
    let out = project.agentci(
        &["record", "--spec", spec.to_str().unwrap(), "--quiet"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("FAIL  bad"), "{stdout}");
    assert!(!stdout.contains("good"), "{stdout}");
    // `good` warns (an echo agent sends nothing through the proxy) and is not shown.
    assert_eq!(
        lines.last(),
        Some(&"0 passed, 1 warned, 1 failed"),
        "{stdout}"
    );
}

#[test]
fn recording_reports_misses_and_missing_cassettes_like_replay_does() {
    let project = Project::new();
    let upstream = ScriptedUpstream::start(
        &project,
        "rules:\n  - when: {first_user_contains: ping}\n    reply: {text: pong}\n",
    );
    let agent = |word: &str| {
        format!(
            r#"curl -sS "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' -d '{{"model":"gpt-4o","messages":[{{"role":"user","content":"ping {word}"}}]}}'"#
        )
    };
    let spec = shell_spec(&project, &agent("one"), "");

    // `none` never records: no cassette is a miss naming the real file, not infrastructure.
    let out = upstream.record(&project, &spec, &["--record-mode", "none"], &[]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("[MISS] no cassette at ./cassettes/shell-agent/only.jsonl")
            && shown.contains("agentci record --spec")
            && !shown.contains(".recording")
            && !shown.contains("[INFRA]"),
        "{shown}"
    );

    let out = upstream.record(&project, &spec, &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // `once` replays the existing cassette: a changed request is a miss with its diff.
    let changed = shell_spec(&project, &agent("two"), "");
    let out = upstream.record(&project, &changed, &["--record-mode", "once"], &[]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown
            .contains("[MISS] 1 request(s) had no recording in ./cassettes/shell-agent/only.jsonl")
            && shown.contains("-      \"content\": \"ping one\"")
            && shown.contains("+      \"content\": \"ping two\"")
            && !shown.contains(".recording"),
        "{shown}"
    );

    // vcrpy's spelling of the mode and the kebab-case one both work.
    for mode in ["new_episodes", "new-episodes"] {
        let out = upstream.record(&project, &changed, &["--record-mode", mode], &[]);
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", text(&out));
    }

    // An agent that sends nothing through the proxy is called out while recording.
    let silent = shell_spec(&project, "echo hello", "");
    let out = upstream.record(&project, &silent, &[], &[]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("WARN")
            && shown.contains("no request went through agentci's proxy while recording"),
        "{shown}"
    );
    upstream.stop();
}
