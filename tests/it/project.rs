//! `agentci init` and `agentci install-hooks` from the user's side: a scaffold
//! that validates and passes actionlint, and a pre-push hook that lets a good
//! push through and stops one whose spec or agent no longer matches its
//! cassettes, with the miss diff on the terminal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::project::{Project, ScriptedUpstream, text};
use crate::support::{self, sdk};

/// Runs git in `dir` with a fixed identity, no user or system config, and the
/// agentci under test first on PATH (the hook calls `agentci`).
fn git_in(dir: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let bin_dir = support::agentci_bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("AGENTCI_HOME", home)
        .env("NO_COLOR", "1");
    for var in [
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "AGENTCI_SKIP_HOOK",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run git")
}

fn git(project: &Project, args: &[&str], env: &[(&str, &str)]) -> Output {
    git_in(project.dir.path(), &project.path(".home"), args, env)
}

fn git_ok(project: &Project, args: &[&str]) {
    let out = git(project, args, &[]);
    assert!(out.status.success(), "git {args:?}\n{}", text(&out));
}

/// A git repository with a bare remote `origin` (outside the work tree).
fn repo_with_remote() -> (Project, tempfile::TempDir) {
    let project = Project::new();
    let remote = support::temp_dir();
    git_ok(&project, &["init", "-q", "-b", "main"]);
    let bare = git_in(
        remote.path(),
        &project.path(".home"),
        &["init", "-q", "--bare", "-b", "main"],
        &[],
    );
    assert!(bare.status.success(), "{}", text(&bare));
    git_ok(
        &project,
        &["remote", "add", "origin", remote.path().to_str().unwrap()],
    );
    (project, remote)
}

fn commit_all(project: &Project, message: &str) {
    git_ok(project, &["add", "-A"]);
    git_ok(project, &["commit", "-q", "-m", message]);
}

fn output_of(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `agentci init --yes` with `extra` arguments in `project`; must succeed.
fn init(project: &Project, extra: &[&str]) -> String {
    let mut args = vec!["init", "--yes"];
    args.extend_from_slice(extra);
    let out = project.agentci(&args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `text` with the lines between `start` and `end` (markers excluded) uncommented.
fn uncomment(text: &str, start: &str, end: Option<&str>) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.contains(start) {
            inside = true;
        } else if end.is_some_and(|e| line.contains(e)) {
            inside = false;
        } else if inside {
            let line = line
                .strip_prefix("  # ")
                .map(|rest| format!("  {rest}"))
                .unwrap_or_else(|| line.trim_end_matches('#').trim_end().to_string());
            out.push_str(&line);
            out.push('\n');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn init_writes_a_scaffold_that_validates_and_passes_actionlint() {
    let mut workflows: Vec<PathBuf> = Vec::new();
    let keep = support::temp_dir();
    for (i, command) in ["python3 agent.py", "npx tsx agent.ts", "./bin/agent --fast"]
        .iter()
        .enumerate()
    {
        let (project, _remote) = repo_with_remote();
        let stdout = init(&project, &["--agent", "support-bot", "--command", command]);
        for line in [
            "created   specs/support-bot.yaml",
            "created   specs/agentci.schema.json",
            "created   cassettes/.gitkeep",
            "created   .gitattributes",
            "created   .gitignore",
            "created   .github/workflows/agentci.yml",
            "created   .git/hooks/pre-push  (pre-push hook, via git)",
            "  agentci validate specs/support-bot.yaml",
            "  agentci record --spec specs/support-bot.yaml",
            "  agentci replay --spec specs/support-bot.yaml",
        ] {
            assert!(stdout.contains(line), "{line:?} missing:\n{stdout}");
        }
        let spec = std::fs::read_to_string(project.path("specs/support-bot.yaml")).unwrap();
        assert!(spec.starts_with("# yaml-language-server: $schema=agentci.schema.json\n"));
        let attrs = std::fs::read_to_string(project.path(".gitattributes")).unwrap();
        assert_eq!(attrs, "cassettes/**/*.jsonl linguist-generated=true\n");
        let validate = project.agentci(&["validate", "specs/support-bot.yaml"], &[]);
        assert_eq!(validate.status.code(), Some(0), "{}", text(&validate));

        // The commented example of every layer is a valid query once uncommented.
        let full = uncomment(&spec, "Every layer, as a commented example", None);
        project.write("specs/every-layer.yaml", &full);
        let validate = project.agentci(&["validate", "specs/every-layer.yaml"], &[]);
        assert_eq!(
            validate.status.code(),
            Some(0),
            "{}\n{full}",
            text(&validate)
        );
        assert!(
            String::from_utf8_lossy(&validate.stdout).contains("2 queries"),
            "{}",
            text(&validate)
        );

        // The workflow, and its commented sharded variant switched on.
        let workflow =
            std::fs::read_to_string(project.path(".github/workflows/agentci.yml")).unwrap();
        let plain = keep.path().join(format!("agentci-{i}.yml"));
        std::fs::write(&plain, &workflow).unwrap();
        let sharded = keep.path().join(format!("agentci-{i}-sharded.yml"));
        let with_shards = uncomment(&workflow, ">>> sharded replay >>>", Some("<<< sharded"));
        assert!(with_shards.contains("\n  replay-merge:\n"), "{with_shards}");
        std::fs::write(&sharded, &with_shards).unwrap();
        workflows.extend([plain, sharded]);
    }
    // This repository's own workflow too.
    workflows.push(support::repo_root().join(".github/workflows/ci.yml"));
    sdk::actionlint(&workflows).unwrap_or_else(|findings| panic!("actionlint: {findings}"));

    // The linter can fail: an undefined context property is reported.
    let broken = keep.path().join("broken.yml");
    let text_broken = std::fs::read_to_string(&workflows[0])
        .unwrap()
        .replace("${{ runner.os }}", "${{ runner.nope }}");
    std::fs::write(&broken, text_broken).unwrap();
    let findings = sdk::actionlint(&[broken]).expect_err("a broken workflow must not pass");
    assert!(findings.contains("nope"), "{findings}");
}

#[test]
fn init_keeps_existing_files_unless_forced_and_works_outside_git() {
    let project = Project::new();
    let stdout = init(&project, &["--agent", "bot"]);
    assert!(
        stdout.contains("pre-push hook: skipped (not a git repository"),
        "{stdout}"
    );
    project.write("specs/bot.yaml", "# mine\n");
    std::fs::write(project.path(".gitattributes"), "*.png binary\n").unwrap();

    let again = init(&project, &["--agent", "bot"]);
    assert!(
        again.contains("kept      specs/bot.yaml (it exists; --force replaces it)"),
        "{again}"
    );
    assert!(again.contains("updated   .gitattributes"), "{again}");
    assert!(
        again.contains("unchanged .github/workflows/agentci.yml"),
        "{again}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path("specs/bot.yaml")).unwrap(),
        "# mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(project.path(".gitattributes")).unwrap(),
        "*.png binary\ncassettes/**/*.jsonl linguist-generated=true\n"
    );

    let forced = init(&project, &["--agent", "bot", "--force"]);
    assert!(forced.contains("replaced  specs/bot.yaml"), "{forced}");

    let bad = project.agentci(&["init", "--yes", "--agent", "../escape"], &[]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("cannot name a spec file"),
        "{}",
        text(&bad)
    );
}

/// A stdlib-only Python agent: one chat call through OPENAI_BASE_URL.
const AGENT: &str = r#"import json, os, urllib.request

PROMPT = "You are the account helper. [prompt v1]"

body = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": os.environ["AGENTCI_QUERY"]},
    ],
}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
with urllib.request.urlopen(request) as response:
    print(json.load(response)["choices"][0]["message"]["content"])
"#;

const QUERY: &str = "What can you help me with?";

#[test]
fn a_push_runs_the_hook_and_a_changed_prompt_stops_it_with_the_miss_diff() {
    let (project, remote) = repo_with_remote();
    project.write("agent.py", AGENT);
    let stdout = init(
        &project,
        &["--agent", "demo", "--command", "python3 agent.py"],
    );
    assert!(stdout.contains("(pre-push hook, via git)"), "{stdout}");
    let hook = std::fs::read_to_string(project.path(".git/hooks/pre-push")).unwrap();
    assert!(hook.contains("agentci replay --cassettes-only --quiet --spec"));

    // Record the generated example against the scripted fake provider.
    let upstream = ScriptedUpstream::start(
        &project,
        "rules:\n  - when: {first_user_contains: help}\n    reply: {text: \"I can answer questions about your account.\"}\n",
    );
    let recorded = upstream.record(
        &project,
        "specs/demo.yaml",
        &[],
        &[("OPENAI_API_KEY", "sk-test-hook-0123456789")],
    );
    assert_eq!(recorded.status.code(), Some(0), "{}", text(&recorded));
    upstream.stop();
    assert!(project.path("cassettes/demo/smoke.jsonl").is_file());
    std::fs::remove_file(project.path("fake-ca.pem")).unwrap();
    commit_all(&project, "agent, spec and cassettes");

    // The hook replays the spec (the run store shows it ran) and lets the push through.
    std::fs::remove_dir_all(project.path(".agentci")).unwrap();
    let push = git(&project, &["push", "-q", "origin", "main"], &[]);
    assert!(push.status.success(), "{}", text(&push));
    assert!(project.path(".agentci/runs/latest").is_file());

    // A changed query no longer matches the committed cassette: the push stops.
    let spec = std::fs::read_to_string(project.path("specs/demo.yaml")).unwrap();
    project.write(
        "specs/demo.yaml",
        &spec.replace(QUERY, "What can you do for my account?"),
    );
    commit_all(&project, "reword the smoke query");
    let push = git(&project, &["push", "-q", "origin", "main"], &[]);
    let output = output_of(&push);
    assert!(!push.status.success(), "{output}");
    for expected in [
        "[MISS] the spec's query changed since ./cassettes/demo/smoke.jsonl was recorded",
        "-What can you help me with?",
        "+What can you do for my account?",
        "hint: re-record it with `agentci record --spec specs/demo.yaml --case smoke`",
        "agentci: the replay failed, push stopped",
    ] {
        assert!(output.contains(expected), "{expected:?} missing:\n{output}");
    }
    let remote_head = git_in(
        remote.path(),
        &project.path(".home"),
        &["log", "--format=%s", "-1", "main"],
        &[],
    );
    assert_eq!(
        String::from_utf8_lossy(&remote_head.stdout).trim(),
        "agent, spec and cassettes"
    );
    // Skipping is explicit and works.
    let skipped = git(
        &project,
        &["push", "-q", "origin", "main"],
        &[("AGENTCI_SKIP_HOOK", "1")],
    );
    assert!(skipped.status.success(), "{}", text(&skipped));

    // The full hook runs the agent through the replaying proxy: back on the
    // recorded query it passes; a changed system prompt in the code is a miss.
    project.write("specs/demo.yaml", &spec);
    commit_all(&project, "restore the smoke query");
    let full = project.agentci(&["install-hooks", "--full"], &[]);
    assert_eq!(full.status.code(), Some(0), "{}", text(&full));
    assert!(
        String::from_utf8_lossy(&full.stdout).contains("updated   .git/hooks/pre-push"),
        "{}",
        text(&full)
    );
    let push = git(&project, &["push", "-q", "origin", "main"], &[]);
    assert!(push.status.success(), "{}", text(&push));

    project.write("agent.py", &AGENT.replace("[prompt v1]", "[prompt v2]"));
    commit_all(&project, "new system prompt");
    let push = git(&project, &["push", "-q", "origin", "main"], &[]);
    let output = output_of(&push);
    assert!(!push.status.success(), "{output}");
    for expected in [
        "[MISS] 1 request(s) had no recording in ./cassettes/demo/smoke.jsonl",
        "[prompt v1]",
        "[prompt v2]",
        "agentci: the replay failed, push stopped",
    ] {
        assert!(output.contains(expected), "{expected:?} missing:\n{output}");
    }
}

#[test]
fn install_hooks_chains_an_existing_hook_and_uses_the_repos_hook_manager() {
    // Plain git: the earlier hook is kept, runs first, and gets the pushed refs.
    let (project, _remote) = repo_with_remote();
    project.write(
        ".git/hooks/pre-push",
        "#!/bin/sh\ncat > \"$(git rev-parse --show-toplevel)/earlier-hook-saw.txt\"\n",
    );
    std::fs::set_permissions(
        project.path(".git/hooks/pre-push"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = project.agentci(&["install-hooks"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        stdout.contains("the earlier pre-push hook is now .git/hooks/pre-push.agentci-chained"),
        "{stdout}"
    );
    let again = project.agentci(&["install-hooks"], &[]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("unchanged .git/hooks/pre-push"),
        "{}",
        text(&again)
    );
    project.write("README.md", "hello\n");
    commit_all(&project, "first");
    let push = git(&project, &["push", "-q", "origin", "main"], &[]);
    assert!(push.status.success(), "{}", text(&push));
    let saw = std::fs::read_to_string(project.path("earlier-hook-saw.txt")).unwrap();
    assert!(saw.starts_with("refs/heads/main "), "{saw:?}");

    // Hook managers: the block goes into their own files.
    let managers: [(&str, Option<&str>, &str, Option<&str>); 3] = [
        (".husky/pre-push", None, ".husky/pre-push", None),
        (
            "lefthook.yml",
            Some("pre-commit:\n  commands:\n    fmt:\n      run: cargo fmt --check\n"),
            "lefthook.yml",
            Some("run `lefthook install` so lefthook picks the hook up"),
        ),
        (
            ".pre-commit-config.yaml",
            Some(
                "repos:\n  - repo: https://github.com/psf/black\n    rev: 24.1.0\n    hooks:\n      - id: black\n",
            ),
            ".pre-commit-config.yaml",
            Some("run `pre-commit install --hook-type pre-push`"),
        ),
    ];
    for (marker, content, written, next) in managers {
        let (project, _remote) = repo_with_remote();
        match content {
            Some(content) => {
                project.write(marker, content);
            }
            None => std::fs::create_dir_all(project.path(".husky")).unwrap(),
        }
        let out = project.agentci(&["install-hooks"], &[]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let file = std::fs::read_to_string(project.path(written)).unwrap();
        assert!(
            file.contains("agentci replay --cassettes-only --quiet --spec"),
            "{file}"
        );
        if let Some(content) = content {
            assert!(file.starts_with(content), "{file}");
        }
        if let Some(next) = next {
            assert!(stdout.contains(next), "{stdout}");
        }
        assert!(!project.path(".git/hooks/pre-push").exists());
    }

    let outside = Project::new();
    let out = outside.agentci(&["install-hooks"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not inside a git repository") && stderr.contains("git init"),
        "{stderr}"
    );
}
