//! `agentci trace` through the real binary, and the committed JSON Schema of its `--json` output.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    crate::trace::fixture_dir().join(name)
}

fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/trace.schema.json")
}

fn agentci() -> Command {
    let mut cmd = Command::cargo_bin("agentci").unwrap();
    cmd.env("NO_COLOR", "1");
    cmd
}

#[test]
fn trace_prints_a_readable_tree() {
    let out = agentci()
        .args(["trace"])
        .arg(fixture("agents-sdk-handoff.jsonl"))
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!("trace_tree_handoff", stdout);

    let out = agentci()
        .args(["trace"])
        .arg(fixture("anthropic-multi-tool-sse.jsonl"))
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!("trace_tree_anthropic_stream", stdout);
}

#[test]
fn trace_json_validates_against_the_committed_schema() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let dir = crate::trace::fixture_dir();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    // Every fixture through the binary would be slow; take one per provider plus the mixed run.
    for name in names
        .iter()
        .filter(|n| n.contains("parallel-tool-calls-sse") || n.starts_with("agents-sdk"))
    {
        let out = agentci()
            .args(["trace", "--json"])
            .arg(dir.join(name))
            .assert()
            .success();
        let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
        assert!(json["totals"]["llm_calls"].as_u64().unwrap() >= 2);
    }
}

#[test]
fn trace_schema_is_current() {
    let generated =
        serde_json::to_string_pretty(&schemars::schema_for!(agentci::trace::Trace)).unwrap() + "\n";
    if std::env::var_os("AGENTCI_UPDATE_SCHEMA").is_some() {
        std::fs::write(schema_path(), &generated).unwrap();
    }
    let committed = std::fs::read_to_string(schema_path()).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/trace.schema.json is stale: rerun with AGENTCI_UPDATE_SCHEMA=1"
    );
}

#[test]
fn trace_prices_file_overrides_and_bad_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"acme-billing-ft": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06, "cache_read_input_token_cost": 5e-07}}"#,
    )
    .unwrap();
    let out = agentci()
        .args(["trace", "--json", "--prices"])
        .arg(&prices)
        .arg(fixture("agents-sdk-handoff.jsonl"))
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    // 388 uncached × $1 + 512 cached × $0.50 + 14 out × $2, per 1M.
    let cost = json["llm_calls"][1]["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - (388.0 + 256.0 + 28.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    assert_eq!(json["warnings"], serde_json::json!([]));

    std::fs::write(&prices, "{not json").unwrap();
    let out = agentci()
        .args(["trace", "--prices"])
        .arg(&prices)
        .arg(fixture("agents-sdk-handoff.jsonl"))
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("prices.json: prices file: not valid JSON"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: --prices takes LiteLLM"), "{stderr}");

    let missing = dir.path().join("missing.jsonl");
    let out = agentci().arg("trace").arg(&missing).assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("missing.jsonl"), "{stderr}");
}
