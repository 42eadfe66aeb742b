//! The judge against the fake provider over real HTTPS on loopback: verdicts,
//! ensembles, parsing, retries, short-circuit and the verdict cache.

use std::path::{Path, PathBuf};

use agentci::engine::judge::{Endpoints, Judge, JudgeOptions};
use agentci::engine::{self, QueryResult, Status, VerdictLabel};
use agentci::fake::{FakeOptions, FakeProvider, Script};
use agentci::spec::{Case, Correctness, Ensemble, JudgeConfig, JudgeRubric, Query};
use agentci::trace::{ToolCall, Trace};
use serde_json::json;

/// A fake provider serving `script`, plus a temp dir holding its CA.
struct Fixture {
    fake: FakeProvider,
    dir: tempfile::TempDir,
}

impl Fixture {
    async fn start(script: &str) -> Fixture {
        let script = Script::parse(script).unwrap_or_else(|e| panic!("script: {e}"));
        let fake = FakeProvider::start(script, FakeOptions::default())
            .await
            .unwrap_or_else(|e| panic!("fake: {e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        fake.write_ca_pem(&dir.path().join("ca.pem"))
            .unwrap_or_else(|e| panic!("{e}"));
        Fixture { fake, dir }
    }

    fn endpoints(&self) -> Endpoints {
        endpoints_at(self.fake.base_url(), &self.dir.path().join("ca.pem"))
    }

    fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("cassettes").join("agent")
    }

    fn judge(&self, config: JudgeConfig) -> Judge {
        Judge::new(
            config,
            JudgeOptions {
                endpoints: self.endpoints(),
                cache_dir: Some(self.cache_dir()),
                ..JudgeOptions::default()
            },
        )
    }
}

fn endpoints_at(base: &str, ca: &Path) -> Endpoints {
    Endpoints {
        openai_base_url: format!("{base}/v1"),
        anthropic_base_url: base.to_string(),
        openai_api_key: Some("sk-test-openai".into()),
        anthropic_api_key: Some("sk-ant-test".into()),
        extra_ca: vec![ca.to_path_buf()],
        ..Endpoints::default()
    }
}

fn rubric(threshold: f64) -> JudgeRubric {
    JudgeRubric {
        rule: Some("Politely declines out-of-scope requests".into()),
        template: None,
        threshold,
        scale: vec![],
        few_shot_examples: vec![],
        model: None,
    }
}

fn case(correctness: Correctness) -> Case {
    Case {
        id: "weather-oos".into(),
        file: PathBuf::from("specs/agent.yaml"),
        line: 1,
        query: Query {
            id: Some("weather-oos".into()),
            query: "What's the weather in Tokyo?".into(),
            description: None,
            tags: vec![],
            correctness: Some(correctness),
            path: None,
            cost: None,
        },
    }
}

fn judged(threshold: f64) -> Case {
    case(Correctness {
        llm_judge: vec![rubric(threshold)],
        ..Correctness::default()
    })
}

fn trace(answer: &str) -> Trace {
    Trace {
        case_id: "weather-oos".into(),
        answer: Some(answer.into()),
        ..Trace::default()
    }
}

fn verdict(score: u8, label: &str) -> String {
    json!({"rationale": format!("scored {score}"), "score": score, "label": label}).to_string()
}

/// A script answering every request with `text` (YAML-quoted).
fn always(text: &str) -> String {
    format!("default: {{text: {}}}", json!(text))
}

async fn run(judge: &Judge, case: &Case, trace: &Trace) -> QueryResult {
    engine::evaluate(case, trace, None, "transfer_to_", judge)
        .await
        .unwrap_or_else(|e| panic!("evaluate: {e}"))
}

#[tokio::test]
async fn passing_verdict_from_anthropic() {
    let fx = Fixture::start(&always(&verdict(5, "pass"))).await;
    let result = run(
        &fx.judge(JudgeConfig::default()),
        &judged(0.8),
        &trace("Sorry, I can only help with billing."),
    )
    .await;
    assert_eq!(result.correctness.status, Status::Pass);
    assert!(!result.hard_fail);
    let outcome = &result.judge[0];
    assert_eq!(
        (outcome.score, outcome.threshold_score, outcome.label),
        (5.0, 4, VerdictLabel::Pass)
    );
    assert_eq!(result.judge_usage.calls, 1);
    assert!(result.judge_usage.input_tokens > 0);

    let seen = fx.fake.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(
        seen[0].headers.get("x-api-key").map(String::as_str),
        Some("sk-ant-test")
    );
    assert_eq!(seen[0].body["model"], "claude-sonnet-4-5");
    assert_eq!(seen[0].body["temperature"], 0.0);
    assert!(
        seen[0].body["system"]
            .as_str()
            .unwrap_or("")
            .contains("\"rationale\"")
    );
    let user = seen[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or("");
    assert!(user.contains("Politely declines") && user.contains("Sorry, I can only help"));
}

#[tokio::test]
async fn failing_verdict_fails_correctness() {
    let fx = Fixture::start(&always(&verdict(2, "fail"))).await;
    let result = run(
        &fx.judge(JudgeConfig::default()),
        &judged(0.8),
        &trace("It is 21 degrees."),
    )
    .await;
    assert_eq!(result.correctness.status, Status::Fail);
    assert!(result.hard_fail);
    assert_eq!(
        result.correctness.messages,
        ["llm_judge[0]: judged Fail with score 2.00 (needs ≥ 4): scored 2"]
    );
}

#[tokio::test]
async fn borderline_verdict_passes_on_score_against_the_threshold() {
    let fx = Fixture::start(&always(&verdict(3, "borderline"))).await;
    let judge = fx.judge(JudgeConfig::default());
    let low = run(&judge, &judged(0.5), &trace("Maybe.")).await;
    assert_eq!(low.correctness.status, Status::Pass);
    assert_eq!(low.judge[0].label, VerdictLabel::Borderline);
    let high = run(&judge, &judged(0.8), &trace("Maybe.")).await;
    assert_eq!(high.correctness.status, Status::Fail);
}

fn ensemble_config() -> JudgeConfig {
    JudgeConfig {
        ensemble: Some(Ensemble {
            enabled: true,
            models: vec![
                "claude-sonnet-4-5".into(),
                "gpt-4o-mini".into(),
                "gpt-4o-mini".into(),
            ],
            strategy: Default::default(),
        }),
        ..JudgeConfig::default()
    }
}

fn split_vote_script() -> String {
    format!(
        "rules:\n  - when: {{model: claude-sonnet-4-5}}\n    reply: {{text: {}}}\n  - when: {{model: gpt-4o-mini}}\n    replies: [{{text: {}}}, {{text: {}}}]\n",
        json!(verdict(5, "pass")),
        json!(verdict(2, "fail")),
        json!(verdict(4, "pass"))
    )
}

#[tokio::test]
async fn ensemble_split_vote_majority_label_and_mean_score() {
    let fx = Fixture::start(&split_vote_script()).await;
    let result = run(&fx.judge(ensemble_config()), &judged(0.6), &trace("No.")).await;
    let outcome = &result.judge[0];
    assert!(outcome.ensemble);
    let votes: Vec<(String, u8)> = outcome
        .votes
        .iter()
        .map(|v| (v.model.clone(), v.verdict.score))
        .collect();
    assert_eq!(
        votes,
        [
            ("claude-sonnet-4-5".into(), 5),
            ("gpt-4o-mini".into(), 2),
            ("gpt-4o-mini".into(), 4)
        ]
    );
    assert_eq!(outcome.label, VerdictLabel::Pass);
    assert!((outcome.score - 11.0 / 3.0).abs() < 1e-9);
    // 0.6 → 3: the majority passes and the mean 3.67 clears it.
    assert!(outcome.passed);
    assert_eq!(fx.fake.request_count(), 3);
    let paths: Vec<String> = fx.fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/v1/messages",
            "/v1/chat/completions",
            "/v1/chat/completions"
        ]
    );
}

#[tokio::test]
async fn ensemble_majority_pass_but_mean_below_threshold_fails() {
    let fx = Fixture::start(&split_vote_script()).await;
    let result = run(&fx.judge(ensemble_config()), &judged(0.8), &trace("No.")).await;
    // 0.8 → 4: the mean 3.67 falls short even though two of three judges said pass.
    assert_eq!(result.judge[0].label, VerdictLabel::Pass);
    assert!(!result.judge[0].passed);
    assert_eq!(result.correctness.status, Status::Fail);
}

#[tokio::test]
async fn sample_ensemble_zero_uses_the_single_judge() {
    let fx = Fixture::start(&split_vote_script()).await;
    let judge = Judge::new(
        ensemble_config(),
        JudgeOptions {
            endpoints: fx.endpoints(),
            sample_ensemble: Some(0.0),
            ..JudgeOptions::default()
        },
    );
    let result = run(&judge, &judged(0.8), &trace("No.")).await;
    assert!(!result.judge[0].ensemble);
    assert_eq!(fx.fake.request_count(), 1);
}

#[tokio::test]
async fn fenced_verdict_in_prose_is_parsed() {
    let reply = format!(
        "Here is my evaluation.\n```json\n{}\n```\nLet me know!",
        verdict(4, "pass")
    );
    let fx = Fixture::start(&always(&reply)).await;
    let result = run(
        &fx.judge(JudgeConfig::default()),
        &judged(0.8),
        &trace("Sorry."),
    )
    .await;
    assert_eq!(result.correctness.status, Status::Pass);
    assert_eq!(fx.fake.request_count(), 1);
}

#[tokio::test]
async fn malformed_verdict_is_retried_once_with_a_correction() {
    let script = format!(
        "rules:\n  - when: {{last_user_contains: \"not a valid verdict\"}}\n    reply: {{text: {}}}\ndefault: {{text: \"I think the answer is fine.\"}}\n",
        json!(verdict(5, "pass"))
    );
    let fx = Fixture::start(&script).await;
    let result = run(
        &fx.judge(JudgeConfig::default()),
        &judged(0.8),
        &trace("Sorry."),
    )
    .await;
    assert_eq!(result.correctness.status, Status::Pass);
    assert_eq!(result.judge_usage.calls, 2);
    let seen = fx.fake.requests();
    assert_eq!(seen.len(), 2);
    let turns = seen[1].body["messages"].as_array().map_or(0, Vec::len);
    assert_eq!(turns, 3, "the retry carries the bad reply and a correction");
}

#[tokio::test]
async fn malformed_twice_is_an_infrastructure_error() {
    let fx = Fixture::start(&always("{\"rationale\": \"cut off")).await;
    let err = engine::evaluate(
        &judged(0.8),
        &trace("Sorry."),
        None,
        "transfer_to_",
        &fx.judge(JudgeConfig::default()),
    )
    .await
    .err()
    .unwrap_or_else(|| panic!("expected a judge error"));
    assert!(matches!(err, agentci::Error::Judge(_)), "{err}");
    assert_eq!(err.exit_status().code(), 2);
    assert!(err.to_string().contains("after one retry"), "{err}");
    assert_eq!(fx.fake.request_count(), 2);
}

#[tokio::test]
async fn server_error_is_retried_then_succeeds() {
    let script = format!(
        "rules:\n  - replies: [{{error: {{status: 500}}}}, {{text: {}}}]\n",
        json!(verdict(5, "pass"))
    );
    let fx = Fixture::start(&script).await;
    let result = run(
        &fx.judge(JudgeConfig::default()),
        &judged(0.8),
        &trace("Sorry."),
    )
    .await;
    assert_eq!(result.correctness.status, Status::Pass);
    assert_eq!(fx.fake.request_count(), 2);
}

#[tokio::test]
async fn client_error_is_an_infrastructure_error_without_retry() {
    let fx = Fixture::start("default: {error: {status: 401, message: bad key}}").await;
    let err = engine::evaluate(
        &judged(0.8),
        &trace("Sorry."),
        None,
        "transfer_to_",
        &fx.judge(JudgeConfig::default()),
    )
    .await
    .err()
    .unwrap_or_else(|| panic!("expected a judge error"));
    assert!(matches!(err, agentci::Error::Judge(_)));
    assert!(err.to_string().contains("401"), "{err}");
    assert!(
        !err.to_string().contains("sk-ant-test"),
        "keys never appear in errors"
    );
    assert_eq!(fx.fake.request_count(), 1);
}

#[tokio::test]
async fn failing_deterministic_check_never_calls_the_judge() {
    let fx = Fixture::start(&always(&verdict(5, "pass"))).await;
    let c = case(Correctness {
        not_in_answer: vec!["degrees".into()],
        llm_judge: vec![rubric(0.8)],
        hallucination_check: Some(rubric(0.8)),
        ..Correctness::default()
    });
    let result = run(
        &fx.judge(JudgeConfig::default()),
        &c,
        &trace("It is 21 degrees."),
    )
    .await;
    assert_eq!(result.correctness.status, Status::Fail);
    assert!(result.judge.is_empty());
    assert_eq!(
        result.correctness.messages.len(),
        3,
        "{:?}",
        result.correctness.messages
    );
    assert_eq!(fx.fake.request_count(), 0);
}

#[tokio::test]
async fn grounding_checks_see_tool_results_through_openai() {
    let fx = Fixture::start(&always(&verdict(5, "pass"))).await;
    let mut t = trace("Tokyo has 14 million people.");
    t.tool_calls.push(ToolCall {
        id: "call_1".into(),
        name: "retriever_tool".into(),
        arguments: json!({"q": "tokyo population"}),
        result: Some(json!("Tokyo population: 14.0 million (2023)")),
        is_error: false,
        llm_call: 0,
    });
    let c = case(Correctness {
        llm_judge: vec![JudgeRubric {
            rule: None,
            template: Some("polite_refusal".into()),
            ..rubric(0.8)
        }],
        hallucination_check: Some(JudgeRubric {
            model: Some("gpt-4o-mini".into()),
            ..rubric(0.8)
        }),
        ..Correctness::default()
    });
    let result = run(&fx.judge(JudgeConfig::default()), &c, &t).await;
    assert_eq!(result.correctness.status, Status::Pass);
    let seen = fx.fake.requests();
    assert_eq!(seen.len(), 2);
    let user_text = |i: usize| {
        let messages = seen[i].body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str().map(String::from))
            .collect::<String>()
    };
    // polite_refusal gets no context; hallucination_check does.
    assert!(!user_text(0).contains("14.0 million"));
    assert!(user_text(1).contains("Tokyo population: 14.0 million"));
    assert_eq!(seen[1].path, "/v1/chat/completions");
    assert_eq!(
        seen[1].headers.get("authorization").map(String::as_str),
        Some("Bearer sk-test-openai")
    );
    assert_eq!(seen[1].body["response_format"]["type"], "json_object");
}

#[tokio::test]
async fn cached_verdicts_replay_with_the_provider_stopped_and_no_key() {
    let fx = Fixture::start(&always(&verdict(5, "pass"))).await;
    let c = judged(0.8);
    let t = trace("Sorry, I can only help with billing.");
    let first = run(&fx.judge(ensemble_config()), &c, &t).await;
    assert_eq!(first.judge_usage.calls, 3);
    let cache_file = fx.cache_dir().join("weather-oos.judge.jsonl");
    let text = std::fs::read_to_string(&cache_file).unwrap_or_default();
    assert_eq!(text.lines().count(), 3, "one entry per sample");
    assert!(!text.contains("sk-"), "no key reaches the cache");

    let base = fx.fake.base_url().to_string();
    let ca = fx.dir.path().join("ca.pem");
    let Fixture { fake, dir } = fx;
    fake.shutdown().await;

    let offline = Judge::new(
        ensemble_config(),
        JudgeOptions {
            endpoints: Endpoints {
                openai_api_key: None,
                anthropic_api_key: None,
                ..endpoints_at(&base, &ca)
            },
            cache_dir: Some(dir.path().join("cassettes").join("agent")),
            ..JudgeOptions::default()
        },
    );
    let replayed = run(&offline, &c, &t).await;
    assert_eq!(replayed.correctness, first.correctness);
    assert_eq!(replayed.judge_usage.calls, 0);
    assert_eq!(replayed.judge_usage.cache_hits, 3);
    assert_eq!(replayed.judge_usage.cost_usd, 0.0);
    assert!(replayed.judge[0].votes.iter().all(|v| v.cached));

    // A changed answer is a cache miss: it needs the provider (and here has no key).
    let err = engine::evaluate(
        &c,
        &trace("Different answer"),
        None,
        "transfer_to_",
        &offline,
    )
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("ANTHROPIC_API_KEY is not set"), "{err}");
}
