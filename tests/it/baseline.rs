//! Golden baselines from the user's side: the committed rag-agent story
//! (v1-broken → v2-fixed, both saved from real recordings of the demo agent),
//! saving from a stored run with its refusals, `--baseline` for the engine,
//! broken input, and `compare` of two runs.

use std::path::PathBuf;
use std::process::Output;

use crate::support;

/// A project folder holding a copy of the rag-agent spec, its committed cassettes and baselines.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn rag_agent() -> Project {
        let dir = support::temp_dir();
        let root = support::repo_root();
        support::copy_dir(
            &root.join("cassettes/rag-agent"),
            &dir.path().join("cassettes/rag-agent"),
        );
        support::copy_dir(
            &root.join("baselines/rag-agent"),
            &dir.path().join("baselines/rag-agent"),
        );
        support::copy_dir(&root.join("specs"), &dir.path().join("specs"));
        Project { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn agentci(&self, args: &[&str]) -> Output {
        std::process::Command::new(support::agentci_bin())
            .args(args)
            .current_dir(self.dir.path())
            .env("AGENTCI_HOME", self.path(".home"))
            .env("NO_COLOR", "1")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("run agentci")
    }

    /// `replay --cassettes-only` with `spec`; returns the stored run's id.
    fn stored_run(&self, spec: &str) -> String {
        let out = self.agentci(&["replay", "--cassettes-only", "--spec", spec]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
        std::fs::read_to_string(self.path(".agentci/runs/latest"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// The rag-agent spec with `edit` applied to its text, written as `specs/<name>.yaml`.
    fn spec_variant(&self, name: &str, edit: impl Fn(String) -> String) -> String {
        let text = std::fs::read_to_string(self.path("specs/rag-agent.yaml")).unwrap();
        let rel = format!("specs/{name}.yaml");
        std::fs::write(self.path(&rel), edit(text)).unwrap();
        rel
    }

    fn files_under(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(rel))
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const SPEC: &str = "specs/rag-agent.yaml";

#[test]
fn the_rag_agent_story_diff_from_v1_broken_to_v2_fixed() {
    let project = Project::rag_agent();
    let out = project.agentci(&[
        "diff",
        "--spec",
        SPEC,
        "--baseline",
        "v1-broken",
        "--compare",
        "v2-fixed",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    let weather = shown
        .split("┌─ ")
        .find(|b| b.starts_with("weather-oos"))
        .unwrap_or_else(|| panic!("{shown}"));
    let row = |name: &str| {
        weather
            .lines()
            .find(|l| l.trim_start_matches("│ ").trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {weather}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("tool calls"), "│ tool calls 11 0 ▼ 100.0%");
    assert!(
        row("cost (USD)").ends_with("▼ 92.8%"),
        "{}",
        row("cost (USD)")
    );
    assert!(row("LLM calls").starts_with("│ LLM calls 12 1 ▼"));
    assert!(weather.contains("CORRECTNESS  fail → pass"));
    insta::assert_snapshot!("rag_agent_diff_console", shown);

    let md = project.agentci(&[
        "diff",
        "--spec",
        SPEC,
        "--baseline",
        "v1-broken",
        "--compare",
        "v2-fixed",
        "--case",
        "weather-oos",
        "--format",
        "markdown",
    ]);
    assert_eq!(md.status.code(), Some(0), "{}", text(&md));
    insta::assert_snapshot!(
        "rag_agent_diff_markdown",
        String::from_utf8_lossy(&md.stdout)
    );

    let github = project.agentci(&[
        "diff",
        "--spec",
        SPEC,
        "--baseline",
        "v1-broken",
        "--compare",
        "v2-fixed",
        "--format",
        "github",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&github.stdout),
        "::warning title=agentci diff weather-oos::v1-broken → v2-fixed: tools_changed, sequence_changed, output_changed, steps_changed\n"
    );

    let json = project.agentci(&[
        "diff",
        "--spec",
        SPEC,
        "--baseline",
        "v1-broken",
        "--compare",
        "v2-fixed",
        "--format",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let weather = &report["cases"][1];
    assert_eq!(weather["case"], "weather-oos");
    assert_eq!(
        weather["categories"],
        serde_json::json!([
            "tools_changed",
            "sequence_changed",
            "output_changed",
            "steps_changed"
        ])
    );
    assert_eq!(weather["path"][0]["before"], 11.0);
    assert_eq!(weather["path"][0]["after"], 0.0);
}

#[test]
fn the_committed_baselines_list_with_their_precheck() {
    let project = Project::rag_agent();
    let out = project.agentci(&["baselines", "--spec", SPEC]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    insta::with_settings!({filters => vec![(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "[DATE]")]}, {
        insta::assert_snapshot!("rag_agent_baselines", String::from_utf8_lossy(&out.stdout));
    });
}

#[test]
fn save_refuses_a_failing_case_and_an_existing_version_and_writes_nothing() {
    let project = Project::rag_agent();
    std::fs::remove_dir_all(project.path("baselines")).unwrap();
    // A spec under which the v2 install answer fails correctness.
    let strict = project.spec_variant("strict", |t| {
        t.replace(
            r#"expected_in_answer: ["pip install"]"#,
            r#"expected_in_answer: ["pip install", "brew install"]"#,
        )
    });
    project.stored_run(&strict);
    let refused = project.agentci(&["save", "--spec", &strict, "--version", "v3"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("install:") && err.contains("\"brew install\""),
        "{err}"
    );
    assert!(
        err.contains("hint:") && err.contains("--force-save"),
        "{err}"
    );
    assert!(project.files_under("baselines/rag-agent").is_empty());

    // Only the passing cases: saved.
    let saved = project.agentci(&[
        "save",
        "--spec",
        &strict,
        "--version",
        "v3",
        "--case",
        "weather-oos",
        "--case",
        "aws-alb",
    ]);
    assert_eq!(saved.status.code(), Some(0), "{}", text(&saved));
    assert_eq!(
        project.files_under("baselines/rag-agent/v3"),
        ["aws-alb.json", "weather-oos.json"]
    );
    let baseline: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path("baselines/rag-agent/v3/aws-alb.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(baseline["version"], "v3");
    assert_eq!(baseline["agent"], "rag-agent");
    assert_eq!(baseline["case"], "aws-alb");
    assert_eq!(
        baseline["metadata"]["models"],
        serde_json::json!(["gpt-4o"])
    );
    assert!(
        baseline["metadata"]["spec_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(baseline["metadata"]["precheck_passed"], true);
    assert_eq!(baseline["trace"]["case_id"], "aws-alb");

    let again = project.agentci(&["save", "--spec", &strict, "--version", "v3", "--force-save"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--overwrite"));
    assert_eq!(project.files_under("baselines/rag-agent/v3").len(), 2);

    // --force-save --overwrite replaces the whole version, recording the failed precheck.
    let forced = project.agentci(&[
        "save",
        "--spec",
        &strict,
        "--version",
        "v3",
        "--force-save",
        "--overwrite",
    ]);
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    assert_eq!(
        project.files_under("baselines/rag-agent").len(),
        1,
        "no temp dirs left"
    );
    assert_eq!(project.files_under("baselines/rag-agent/v3").len(), 3);
    let list = project.agentci(&["baselines", "--spec", &strict]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("FAILED (forced)"));
}

#[test]
fn missing_runs_and_versions_and_corrupt_files_are_clear_errors() {
    let project = Project::rag_agent();
    let no_run = project.agentci(&["save", "--spec", SPEC, "--version", "v9"]);
    assert_eq!(no_run.status.code(), Some(2), "{}", text(&no_run));
    assert!(String::from_utf8_lossy(&no_run.stderr).contains("no stored run"));

    project.stored_run(SPEC);
    let no_case = project.agentci(&["save", "--spec", SPEC, "--version", "v9", "--case", "nope"]);
    assert_eq!(no_case.status.code(), Some(2), "{}", text(&no_case));
    assert!(String::from_utf8_lossy(&no_case.stderr).contains("has no case nope"));
    assert!(!project.path("baselines/rag-agent/v9").exists());

    let missing = project.agentci(&[
        "diff",
        "--spec",
        SPEC,
        "--baseline",
        "v0",
        "--compare",
        "v2-fixed",
    ]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("no baseline version v0") && err.contains("hint:"),
        "{err}"
    );

    let bad_name = project.agentci(&[
        "diff",
        "--spec",
        SPEC,
        "--baseline",
        "../x",
        "--compare",
        "v2-fixed",
    ]);
    assert_eq!(bad_name.status.code(), Some(2), "{}", text(&bad_name));

    std::fs::write(
        project.path("baselines/rag-agent/v2-fixed/install.json"),
        "{\"version\": \"v2-fixed\",\n  \"agent\": ",
    )
    .unwrap();
    let corrupt = project.agentci(&[
        "diff",
        "--spec",
        SPEC,
        "--baseline",
        "v1-broken",
        "--compare",
        "v2-fixed",
    ]);
    assert_eq!(corrupt.status.code(), Some(2), "{}", text(&corrupt));
    let err = String::from_utf8_lossy(&corrupt.stderr);
    assert!(
        err.contains("baselines/rag-agent/v2-fixed/install.json:2:")
            && err.contains("not a valid baseline"),
        "{err}"
    );
    let replay = project.agentci(&[
        "replay",
        "--cassettes-only",
        "--spec",
        SPEC,
        "--baseline",
        "v2-fixed",
    ]);
    assert_eq!(replay.status.code(), Some(2), "{}", text(&replay));
}

#[test]
fn the_engine_uses_the_named_baseline_and_a_run_diffs_against_it() {
    let project = Project::rag_agent();
    // A similarity floor against the baseline: v2's weather-oos path (no tools) matches v2-fixed, not v1-broken.
    let spec = project.spec_variant("similar", |t| {
        t.replace(
            "      max_tool_calls: 0",
            "      max_tool_calls: 0\n      min_sequence_similarity: 1.0",
        )
    });
    let against_v2 = project.agentci(&[
        "replay",
        "--cassettes-only",
        "--spec",
        &spec,
        "--baseline",
        "v2-fixed",
        "--format",
        "json=v2.json",
    ]);
    assert_eq!(against_v2.status.code(), Some(0), "{}", text(&against_v2));
    let report = std::fs::read_to_string(project.path("v2.json")).unwrap();
    assert!(report.contains("\"baseline\": \"v2-fixed\""), "{report}");
    assert!(!report.contains("no baseline to compare with"), "{report}");
    assert!(!report.contains("below 1.00"), "{report}");

    let against_v1 = project.agentci(&[
        "replay",
        "--cassettes-only",
        "--spec",
        &spec,
        "--baseline",
        "v1-broken",
        "--format",
        "json=v1.json",
    ]);
    assert_eq!(against_v1.status.code(), Some(0), "{}", text(&against_v1));
    let report = std::fs::read_to_string(project.path("v1.json")).unwrap();
    assert!(
        report.contains("min_sequence_similarity: 0.00 below 1.00 against the baseline"),
        "{report}"
    );

    let without = project.agentci(&[
        "replay",
        "--cassettes-only",
        "--spec",
        &spec,
        "--format",
        "json=none.json",
    ]);
    assert_eq!(without.status.code(), Some(0), "{}", text(&without));
    let report = std::fs::read_to_string(project.path("none.json")).unwrap();
    assert!(report.contains("no baseline to compare with"), "{report}");

    // A run is diffed against a version with `run:latest`.
    project.agentci(&["replay", "--cassettes-only", "--spec", SPEC]);
    let diff = project.agentci(&[
        "diff",
        "--spec",
        SPEC,
        "--baseline",
        "v1-broken",
        "--compare",
        "run:latest",
        "--case",
        "weather-oos",
        "--format",
        "json",
    ]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff));
    let report: serde_json::Value = serde_json::from_slice(&diff.stdout).unwrap();
    assert!(report["after"].as_str().unwrap().starts_with("run:"));
    assert_eq!(report["cases"][0]["path"][0]["after"], 0.0);
}

#[test]
fn compare_shows_one_regressed_and_one_improved_case() {
    let project = Project::rag_agent();
    let fail_alb = project.spec_variant("a", |t| {
        t.replace(
            r#"expected_in_answer: ["documentation"]"#,
            r#"expected_in_answer: ["documentation", "kubernetes"]"#,
        )
    });
    let fail_install = project.spec_variant("b", |t| {
        t.replace(
            r#"expected_in_answer: ["pip install"]"#,
            r#"expected_in_answer: ["pip install", "brew install"]"#,
        )
    });
    let a = project.stored_run(&fail_alb);
    let b = project.stored_run(&fail_install);
    let out = project.agentci(&["compare", &a, &b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout)
        .replace(&a, "[RUN_A]")
        .replace(&b, "[RUN_B]");
    insta::assert_snapshot!("compare_regressed_and_improved", shown);
    let gate = project.agentci(&["compare", &a, &b, "--fail-on-regression"]);
    assert_eq!(gate.status.code(), Some(1), "{}", text(&gate));
    let same = project.agentci(&["compare", &a, &a, "--fail-on-regression"]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
}
