//! The spec through the real binary (`validate`, `schema`) and the loader API:
//! invalid specs fail at the right line, defaults merge, includes, filters.

use std::path::{Path, PathBuf};
use std::process::Output;

use agentci::spec::{self, Filter};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/specs")
}

/// Runs the binary in `dir` (so paths in its output are relative and stable).
fn agentci(dir: &Path, args: &[&str]) -> Output {
    assert_cmd::cargo::cargo_bin_cmd!("agentci")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the agentci binary runs")
}

/// Windows path separators and OS error numbers differ; the messages do not.
fn path_filters() -> Vec<(&'static str, &'static str)> {
    vec![(r"(\w)\\(\w)", "$1/$2"), (r" \(os error \d+\)", "")]
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Each file in `invalid/` starts with `# expect: LINE: FRAGMENT`: validate must
/// exit 1 and report FRAGMENT at that line. The whole output is snapshotted too.
#[test]
fn every_invalid_spec_fails_at_its_line_with_its_message() {
    let dir = fixtures().join("invalid");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "only {} invalid variants", names.len());
    for name in &names {
        let source = std::fs::read_to_string(dir.join(name)).unwrap();
        let expect = source
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{name}: first line must be `# expect: LINE: FRAGMENT`"));
        let (line, fragment) = expect.split_once(": ").unwrap();
        let out = agentci(&dir, &["validate", name]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}: {}", text(&out.stdout));
        // The fragment and the line are on the same diagnostic line (included files name themselves).
        let hit = stderr.lines().any(|l| {
            l.contains(fragment)
                && (l.starts_with(&format!("{name}:{line}:")) || l.contains(&format!(":{line}:")))
        });
        assert!(
            hit,
            "{name}: expected `{fragment}` at line {line}, got:\n{stderr}"
        );
        assert!(
            stderr.contains("\nhint: "),
            "{name}: no hint line:\n{stderr}"
        );
        insta::with_settings!({
            snapshot_suffix => name.trim_end_matches(".yaml"),
            prepend_module_to_snapshot => false,
            filters => path_filters(),
        }, {
            insta::assert_snapshot!("invalid", stderr);
        });
    }
}

#[test]
fn validate_reports_every_file_and_every_error() {
    let root = fixtures();
    let out = agentci(
        &root,
        &[
            "validate",
            "valid/main.yaml",
            "invalid/many-errors.yaml",
            "no-such-spec.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    insta::with_settings!({filters => path_filters()}, {
    insta::assert_snapshot!(format!(
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    ));
    });
}

#[test]
fn validate_accepts_the_example_spec() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = agentci(repo, &["validate", "specs/example.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "ok specs/example.yaml: 4 queries, agent rag-agent\n"
    );
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn a_judge_temperature_above_zero_is_a_warning_not_an_error() {
    let out = agentci(&fixtures(), &["validate", "valid/warn.yaml"]);
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(format!(
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    ));
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = agentci(repo, &["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let committed =
        std::fs::read_to_string(repo.join("docs/agentci_spec.schema.json")).unwrap_or_default();
    assert!(
        committed == text(&out.stdout),
        "docs/agentci_spec.schema.json is stale; regenerate it with:\n    cargo run -- schema > docs/agentci_spec.schema.json"
    );
}

#[test]
fn the_example_spec_conforms_to_the_committed_schema() {
    // Editors validate with the schema alone (no includes resolved, no rules), so
    // the example must pass it as written.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join("docs/agentci_spec.schema.json")).unwrap(),
    )
    .unwrap();
    let example: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(repo.join("specs/example.yaml")).unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&example)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn defaults_merge_deeply_and_lists_replace() {
    let loaded = spec::load(&fixtures().join("valid/merge.yaml"), &Filter::default()).unwrap();
    let by_id = |id: &str| &loaded.cases.iter().find(|c| c.id == id).unwrap().query;

    let inherits = by_id("inherits");
    let c = inherits.correctness.as_ref().unwrap();
    assert_eq!(c.not_in_answer, ["forecast", "degrees"]);
    assert_eq!(c.hallucination_check.as_ref().unwrap().threshold, 0.8);
    assert_eq!(inherits.path.as_ref().unwrap().max_tool_calls, Some(3));
    assert_eq!(inherits.cost.as_ref().unwrap().max_llm_calls, Some(4));

    let overrides = by_id("overrides");
    let c = overrides.correctness.as_ref().unwrap();
    assert_eq!(c.not_in_answer, ["rain"], "lists replace, never append");
    let check = c.hallucination_check.as_ref().unwrap();
    assert_eq!(check.threshold, 0.9);
    assert_eq!(
        check.rule.as_deref(),
        Some("Grounded in context"),
        "nested keys not set stay"
    );
    let cost = overrides.cost.as_ref().unwrap();
    assert_eq!(
        (cost.max_llm_calls, cost.max_cost_multiplier),
        (Some(1), Some(2.0))
    );
    assert_eq!(
        overrides.path.as_ref().unwrap().forbidden_tools,
        ["web_search"]
    );

    let removes = by_id("removes");
    assert_eq!(
        removes.correctness.as_ref().unwrap().hallucination_check,
        None
    );
    assert_eq!(
        removes.correctness.as_ref().unwrap().not_in_answer,
        ["forecast", "degrees"]
    );
    assert_eq!(removes.path, None, "an explicit null drops the default");

    // The parsed model keeps the queries as written.
    assert_eq!(loaded.spec.queries[0].correctness, None);
}

#[test]
fn includes_splice_in_order_relative_to_the_including_file() {
    let root = fixtures().join("valid");
    let loaded = spec::load(&root.join("main.yaml"), &Filter::default()).unwrap();
    let got: Vec<(String, String, usize)> = loaded
        .cases
        .iter()
        .map(|c| {
            let file = c
                .file
                .strip_prefix(&root)
                .unwrap_or(&c.file)
                .to_string_lossy()
                .replace('\\', "/");
            (c.id.clone(), file, c.line)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("first-in-main".to_string(), "main.yaml".to_string(), 3),
            ("from-more".to_string(), "sub/more.yaml".to_string(), 2),
            ("leaf-case".to_string(), "sub/../leaf.yaml".to_string(), 1),
            ("last-in-main".to_string(), "main.yaml".to_string(), 6),
        ]
    );
    assert_eq!(
        loaded.spec.queries.len(),
        4,
        "the model holds the spec after includes"
    );
}

#[test]
fn tag_and_case_filters() {
    let path = fixtures().join("valid/main.yaml");
    let ids = |filter: Filter| -> Vec<String> {
        spec::load(&path, &filter)
            .unwrap()
            .cases
            .into_iter()
            .map(|c| c.id)
            .collect()
    };
    let tags = |t: &[&str]| Filter {
        tags: t.iter().map(|s| s.to_string()).collect(),
        ..Filter::default()
    };
    assert_eq!(ids(tags(&["smoke"])), ["first-in-main", "from-more"]);
    assert_eq!(
        ids(tags(&["docs", "slow"])),
        ["from-more", "last-in-main"],
        "any tag matches"
    );
    assert_eq!(ids(tags(&["nothing"])), Vec::<String>::new());
    let cases = Filter {
        cases: vec!["leaf-case".into(), "first-in-main".into()],
        tags: vec![],
    };
    assert_eq!(
        ids(cases),
        ["first-in-main", "leaf-case"],
        "file order, not argument order"
    );
    let both = Filter {
        cases: vec!["leaf-case".into(), "from-more".into()],
        tags: vec!["smoke".into()],
    };
    assert_eq!(ids(both), ["from-more"]);

    let err = spec::load(
        &path,
        &Filter {
            cases: vec!["leaf-cas".into()],
            tags: vec![],
        },
    )
    .unwrap_err();
    let message = format!("{err}\nhint: {}", err.hint().unwrap_or_default());
    assert!(message.contains("no case with id `leaf-cas`"), "{message}");
    assert!(message.contains("did you mean `leaf-case`?"), "{message}");
    assert!(
        message.contains("known ids: first-in-main, from-more, leaf-case, last-in-main"),
        "{message}"
    );
}

#[test]
fn the_spec_hash_ignores_formatting_but_not_content() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        spec::load(&p, &Filter::default()).unwrap().hash
    };
    let a = write(
        "a.yaml",
        "agent: a\nqueries:\n  - query: hi\n    tags: [x]\n",
    );
    let b = write(
        "b.yaml",
        "# a comment\nqueries: [{tags: [x], query: hi}]\nagent: a\n",
    );
    let c = write(
        "c.yaml",
        "agent: a\nqueries:\n  - query: hi\n    tags: [y]\n",
    );
    assert!(a.starts_with("sha256:") && a.len() == 7 + 64, "{a}");
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn ids_are_slugs_of_the_query_unless_given() {
    let loaded = spec::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/example.yaml"),
        &Filter::default(),
    )
    .unwrap();
    let ids: Vec<&str> = loaded.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "weather-oos",
            "how-do-i-install-agentci",
            "billing-handoff",
            "give-me-three-steps-to-rotate-an-api-key",
        ]
    );
}

/// YAML 1.1 would read `yes`/`no`/`on`/`off` as booleans; a spec's text stays text.
#[test]
fn yes_and_no_stay_text_in_a_spec() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("norway.yaml");
    std::fs::write(
        &path,
        "agent: a\nqueries:\n  - query: q\n    correctness: {expected_in_answer: [yes, no, on, off, NO]}\n",
    )
    .unwrap();
    let spec = agentci::spec::load(&path, &agentci::spec::Filter::default()).unwrap();
    let correctness = spec.cases[0].query.correctness.clone().unwrap();
    assert_eq!(
        correctness.expected_in_answer,
        ["yes", "no", "on", "off", "NO"]
    );
}
