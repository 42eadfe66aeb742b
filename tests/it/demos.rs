//! The demo agents as a new user meets them: every spec in `specs/` validates,
//! every spec with committed cassettes replays green from them alone, and each
//! demo agent (Python, official openai SDK) replays green offline through the
//! proxy from a copy of the repository. Also: the demos' assertions bite (a
//! changed prompt misses the cassette; a changed tool path breaks strict mode).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support;

/// The three demos: spec name and number of queries.
const DEMOS: [(&str, usize); 3] = [("rag-agent", 3), ("support-router", 14), ("dev-agent", 7)];

/// A temporary copy of the repository's demo material (specs, cassettes,
/// baselines, examples), so runs never write into the checkout.
struct Checkout {
    dir: tempfile::TempDir,
}

impl Checkout {
    fn new() -> Checkout {
        let dir = support::temp_dir();
        let root = support::repo_root();
        for sub in ["specs", "cassettes", "baselines", "examples"] {
            support::copy_dir(&root.join(sub), &dir.path().join(sub));
        }
        Checkout { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// agentci in the copy, with `python3` on PATH resolving to `python` when given
    /// (the specs start their agents as `python3 examples/…`), and none of the
    /// caller's proxy settings or API keys.
    fn agentci(&self, args: &[&str], python: Option<&Path>) -> Output {
        let mut cmd = Command::new(support::agentci_bin());
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("AGENTCI_HOME", self.path(".home"))
            .env("NO_COLOR", "1");
        for var in [
            "GITHUB_ACTIONS",
            "GITHUB_STEP_SUMMARY",
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
        ] {
            cmd.env_remove(var);
        }
        if let Some(python) = python {
            let bin = python.parent().expect("venv bin directory");
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut dirs = vec![bin.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            cmd.env("PATH", std::env::join_paths(dirs).unwrap());
        }
        cmd.output().expect("run agentci")
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn summary(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .to_string()
}

/// `agentci validate` of one spec: (agent, number of queries), from its `ok` line.
fn validate(checkout: &Checkout, spec: &str) -> (String, usize) {
    let out = checkout.agentci(&["validate", spec], None);
    assert_eq!(out.status.code(), Some(0), "{spec}: {}", text(&out));
    // "ok specs/x.yaml: 14 queries, agent x"
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (count, agent) = line
        .split_once(": ")
        .and_then(|(_, rest)| rest.split_once(" queries, agent "))
        .unwrap_or_else(|| panic!("unexpected validate output: {line}"));
    (agent.to_string(), count.parse().unwrap())
}

/// An included list of queries (`$include`), not a spec of its own.
fn is_query_list(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| l.starts_with("- "))
}

#[test]
fn every_spec_validates_and_every_spec_with_cassettes_replays_green_from_them() {
    let checkout = Checkout::new();
    let mut specs: Vec<String> = std::fs::read_dir(checkout.path("specs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml"))
        .filter(|name| !is_query_list(&checkout.path(&format!("specs/{name}"))))
        .collect();
    specs.sort();
    let mut replayed = Vec::new();
    for name in &specs {
        let spec = format!("specs/{name}");
        let (agent, queries) = validate(&checkout, &spec);
        // The convention `agentci init` writes: specs/<agent>.yaml records into
        // cassettes/<agent>/. (specs/example.yaml shares rag-agent's folder but has
        // cases of its own, never recorded: it is a reference, not a demo.)
        let cassettes = checkout.path(&format!("cassettes/{agent}"));
        let has_cassettes = std::fs::read_dir(&cassettes)
            .map(|d| {
                d.flatten()
                    .any(|e| e.path().extension() == Some("jsonl".as_ref()))
            })
            .unwrap_or(false);
        if name.as_str() != format!("{agent}.yaml") || !has_cassettes {
            continue;
        }
        let out = checkout.agentci(&["replay", "--cassettes-only", "--spec", &spec], None);
        assert_eq!(out.status.code(), Some(0), "{spec}: {}", text(&out));
        assert_eq!(
            summary(&out),
            format!("{queries} passed, 0 warned, 0 failed"),
            "{spec}: {}",
            text(&out)
        );
        replayed.push(agent);
    }
    for (demo, _) in DEMOS {
        assert!(
            replayed.iter().any(|a| a == demo),
            "{demo} has no committed cassettes (replayed: {replayed:?})"
        );
    }
}

/// The full replay: the real agent on the official SDK, through the proxy, offline.
fn replay_demo_agent(demo: &str, queries: usize) {
    let python = support::sdk::python();
    let checkout = Checkout::new();
    let spec = format!("specs/{demo}.yaml");
    let out = checkout.agentci(&["replay", "--spec", &spec], Some(&python));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        summary(&out),
        format!("{queries} passed, 0 warned, 0 failed"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_rag_agent_replays_offline_through_the_proxy() {
    replay_demo_agent(DEMOS[0].0, DEMOS[0].1);
}

#[test]
fn the_support_router_replays_offline_through_the_proxy() {
    replay_demo_agent(DEMOS[1].0, DEMOS[1].1);
}

#[test]
fn the_dev_agent_replays_offline_through_the_proxy() {
    replay_demo_agent(DEMOS[2].0, DEMOS[2].1);
}

#[test]
fn a_changed_prompt_in_a_demo_agent_misses_its_cassette() {
    let python = support::sdk::python();
    let checkout = Checkout::new();
    let agent = checkout.path("examples/support-router/agent.py");
    let source = std::fs::read_to_string(&agent).unwrap();
    let changed = source.replacen("Politely", "Kindly", 1);
    assert_ne!(source, changed, "the triage prompt moved; update this test");
    std::fs::write(&agent, changed).unwrap();

    let out = checkout.agentci(
        &[
            "replay",
            "--spec",
            "specs/support-router.yaml",
            "--case",
            "off-topic-poem",
        ],
        Some(&python),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("[MISS]"), "{shown}");
    assert!(
        shown.contains("agentci record --spec specs/support-router.yaml --case off-topic-poem"),
        "the hint names the fix: {shown}"
    );
    // The diff against the recorded request shows the changed system prompt.
    assert!(
        shown
            .lines()
            .any(|l| l.trim_start().starts_with('+') && l.contains("Kindly decline")),
        "{shown}"
    );
}

#[test]
fn the_dev_agent_strict_match_mode_warns_when_the_tool_path_changes() {
    let checkout = Checkout::new();
    // Make v1 remember a different path for python-line-count: largest-file's
    // (it also counts README.md), so today's path no longer matches exactly.
    let v1 = checkout.path("baselines/dev-agent/v1");
    let largest = std::fs::read_to_string(v1.join("largest-file.json")).unwrap();
    let mut baseline: serde_json::Value = serde_json::from_str(&largest).unwrap();
    baseline["case"] = "python-line-count".into();
    std::fs::write(
        v1.join("python-line-count.json"),
        serde_json::to_string_pretty(&baseline).unwrap(),
    )
    .unwrap();

    let out = checkout.agentci(
        &[
            "replay",
            "--cassettes-only",
            "--spec",
            "specs/dev-agent.yaml",
            "--case",
            "python-line-count",
        ],
        None,
    );
    // Path is a soft layer: a warning, not a failure.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("match_mode strict: tools [list_files, count_lines, count_lines"),
        "{shown}"
    );
    assert_eq!(summary(&out), "0 passed, 1 warned, 0 failed", "{shown}");
}
