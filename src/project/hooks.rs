//! `agentci install-hooks`: a pre-push hook that replays the specs under
//! `specs/` before every push, installed through whichever hook manager the
//! repository already uses (husky, lefthook, pre-commit), else as the git hook
//! itself, keeping any hook that was there by chaining it.
//!
//! The hook's shell block sits between `# >>> agentci >>>` and `# <<< agentci <<<`
//! markers in every manager's file, so running the command again updates the
//! block in place instead of adding a second one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::atomic::{self, Visibility};
use crate::error::{Error, Result};

use super::{Action, FileChange, read_optional};

const BLOCK_TEMPLATE: &str = include_str!("templates/hook-block.sh");
const GIT_HOOK_HEADER: &str = include_str!("templates/git-pre-push.sh");
const START: &str = "# >>> agentci >>>";
const END: &str = "# <<< agentci <<<";
/// Where an existing git hook is moved to; the new hook runs it first.
pub const CHAINED_NAME: &str = "pre-push.agentci-chained";

/// The hook managers we know, in the order they are looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manager {
    /// husky: `.husky/pre-push`.
    Husky,
    /// lefthook: a `pre-push` command in this config file.
    Lefthook(PathBuf),
    /// pre-commit: a local hook in `.pre-commit-config.yaml` at the `pre-push` stage.
    PreCommit,
    /// No manager: the `pre-push` file in git's hooks directory.
    Git,
}

impl Manager {
    /// The manager's name as users know it.
    pub fn name(&self) -> &'static str {
        match self {
            Manager::Husky => "husky",
            Manager::Lefthook(_) => "lefthook",
            Manager::PreCommit => "pre-commit",
            Manager::Git => "git",
        }
    }
}

/// How the hook replays.
#[derive(Debug, Clone, Copy, Default)]
pub struct HookOptions {
    /// Run the agent through the replaying proxy (catches changed prompts and
    /// code as cassette misses) instead of scoring the cassettes alone.
    pub full: bool,
    /// Move an existing git hook aside even when a chained hook is already there.
    pub force: bool,
}

/// What `install` did.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The manager the hook went into.
    pub manager: Manager,
    /// The file written.
    pub change: FileChange,
    /// An earlier git hook, now run first from here.
    pub chained: Option<PathBuf>,
    /// What the user still has to run for the manager to pick the hook up.
    pub next_step: Option<String>,
}

/// The replay command the hook runs for each spec.
pub fn replay_command(full: bool) -> &'static str {
    if full {
        "agentci replay --quiet"
    } else {
        "agentci replay --cassettes-only --quiet"
    }
}

/// The hook's shell block, markers included, unindented.
pub fn block(full: bool) -> String {
    BLOCK_TEMPLATE.replace("@REPLAY@", replay_command(full))
}

/// The manager a repository uses, from the files it holds.
pub fn detect(root: &Path) -> Manager {
    if root.join(".husky").is_dir() {
        return Manager::Husky;
    }
    for name in [
        "lefthook.yml",
        ".lefthook.yml",
        "lefthook.yaml",
        ".lefthook.yaml",
    ] {
        if root.join(name).is_file() {
            return Manager::Lefthook(PathBuf::from(name));
        }
    }
    if root.join(".pre-commit-config.yaml").is_file() {
        return Manager::PreCommit;
    }
    Manager::Git
}

/// Installs the hook in the repository at `root` (its top-level folder).
pub fn install(root: &Path, opts: HookOptions) -> Result<Installed> {
    let block = block(opts.full);
    let manager = detect(root);
    let (change, chained, next_step) = match &manager {
        Manager::Husky => (
            script_hook(root, ".husky/pre-push".as_ref(), &block)?,
            None,
            None,
        ),
        Manager::Lefthook(file) => (
            yaml_hook(root, file, &block, lefthook_insert, lefthook_has_hook)?,
            None,
            Some("lefthook install".into()),
        ),
        Manager::PreCommit => (
            yaml_hook(
                root,
                ".pre-commit-config.yaml".as_ref(),
                &block,
                pre_commit_insert,
                pre_commit_has_hook,
            )?,
            None,
            Some("pre-commit install --hook-type pre-push".into()),
        ),
        Manager::Git => {
            let (change, chained) = git_hook(root, &block, opts.force)?;
            (change, chained, None)
        }
    };
    Ok(Installed {
        manager,
        change,
        chained,
        next_step,
    })
}

/// `text` with every non-empty line of `block` indented by `n` spaces.
fn indent(block: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    block
        .lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("{pad}{l}\n")
            }
        })
        .collect()
}

/// `text` with its marked agentci block replaced by `block` (at the start
/// marker's indentation); `None` when `text` holds no complete block.
fn replace_block(text: &str, block: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with(START))?;
    let end = start + lines[start..].iter().position(|l| l.trim() == END)?;
    let pad = lines[start].len() - lines[start].trim_start().len();
    let mut out: String = lines[..start].concat();
    out.push_str(&indent(block, pad));
    out.push_str(&lines[end + 1..].concat());
    Some(out)
}

/// Writes `text` to `rel` and says how, or `Unchanged` when it is already there.
fn put(
    root: &Path,
    rel: &Path,
    old: Option<&str>,
    text: &str,
    visibility: Visibility,
) -> Result<FileChange> {
    let action = match old {
        Some(old) if old == text => Action::Unchanged,
        Some(_) => Action::Extended,
        None => Action::Created,
    };
    if action != Action::Unchanged {
        atomic::write(&root.join(rel), text.as_bytes(), visibility)?;
    }
    Ok(FileChange {
        path: rel.to_path_buf(),
        action,
    })
}

/// A shell-script hook file (husky): the block added, or updated in place.
fn script_hook(root: &Path, rel: &Path, block: &str) -> Result<FileChange> {
    let old = read_optional(&root.join(rel))?;
    let text = match &old {
        Some(old) => replace_block(old, block).unwrap_or_else(|| {
            let sep = if old.is_empty() || old.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            format!("{old}{sep}{block}")
        }),
        None => format!("#!/usr/bin/env sh\n{block}"),
    };
    put(root, rel, old.as_deref(), &text, Visibility::Executable)
}

/// Runs `git ARGS` in `dir` and returns its trimmed stdout.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| {
            Error::other(
                format!("cannot run git: {e}"),
                Some(
                    "install git, or add the hook to your hook manager by hand (see docs/ci.md)"
                        .into(),
                ),
            )
        })?;
    if !output.status.success() {
        return Err(Error::other(
            format!(
                "{} is not inside a git repository: {}",
                dir.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Some("run `git init` first, or run the command inside your repository".into()),
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The top-level folder of the git repository holding `dir`.
pub fn repo_root(dir: &Path) -> Result<PathBuf> {
    git(dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from)
}

/// git's hooks directory (honours `core.hooksPath` and worktrees).
fn git_hooks_dir(root: &Path) -> Result<PathBuf> {
    git(
        root,
        &["rev-parse", "--path-format=absolute", "--git-path", "hooks"],
    )
    .map(PathBuf::from)
}

/// The git hook itself; an existing foreign hook is moved aside and chained.
fn git_hook(root: &Path, block: &str, force: bool) -> Result<(FileChange, Option<PathBuf>)> {
    let dir = git_hooks_dir(root)?;
    let hook = dir.join("pre-push");
    let shown = hook.strip_prefix(root).unwrap_or(&hook).to_path_buf();
    let old = read_optional(&hook)?;
    if let Some(updated) = old.as_deref().and_then(|o| replace_block(o, block)) {
        let change = put(
            &dir,
            "pre-push".as_ref(),
            old.as_deref(),
            &updated,
            Visibility::Executable,
        )?;
        return Ok((
            FileChange {
                path: shown,
                action: change.action,
            },
            None,
        ));
    }
    let mut chained = None;
    if old.is_some() {
        let aside = dir.join(CHAINED_NAME);
        if aside.exists() && !force {
            return Err(Error::other(
                format!(
                    "{} exists and is not agentci's, and {} is taken too",
                    hook.display(),
                    aside.display()
                ),
                Some("look at both hooks; --force moves the current one aside, replacing the older chained one".into()),
            ));
        }
        std::fs::rename(&hook, &aside).map_err(|e| Error::io(&hook, e))?;
        chained = Some(aside.strip_prefix(root).unwrap_or(&aside).to_path_buf());
    }
    let text = format!("{GIT_HOOK_HEADER}{block}");
    atomic::write(&hook, text.as_bytes(), Visibility::Executable)?;
    let action = if chained.is_some() {
        Action::Extended
    } else {
        Action::Created
    };
    Ok((
        FileChange {
            path: shown,
            action,
        },
        chained,
    ))
}

/// A YAML config (lefthook, pre-commit): the block updated in place, or an entry
/// inserted as text so the user's comments and layout survive; the result must
/// parse and hold our hook, else nothing is written.
fn yaml_hook(
    root: &Path,
    rel: &Path,
    block: &str,
    insert: fn(&str, &str) -> Option<String>,
    has_hook: fn(&Value) -> bool,
) -> Result<FileChange> {
    let path = root.join(rel);
    let old = read_optional(&path)?.unwrap_or_default();
    let text = replace_block(&old, block).or_else(|| insert(&old, block));
    let parsed = text
        .as_deref()
        .and_then(|t| serde_saphyr::from_str::<Value>(t).ok());
    match (text, parsed) {
        (Some(text), Some(value)) if has_hook(&value) => {
            put(root, rel, Some(&old), &text, Visibility::Public)
        }
        _ => Err(Error::other(
            format!(
                "cannot add the agentci pre-push hook to {} automatically",
                path.display()
            ),
            Some(format!(
                "add it by hand; the shell it should run is:\n{block}"
            )),
        )),
    }
}

/// The lines of `text`, and the index of the top-level `key:` line.
fn top_level_key(lines: &[&str], key: &str) -> Option<usize> {
    lines.iter().position(|l| {
        l.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(':'))
            .is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'))
    })
}

/// Where the block of the top-level line `at` ends (the next top-level line).
fn block_end(lines: &[&str], at: usize, items_at_column_0: bool) -> usize {
    lines[at + 1..]
        .iter()
        .position(|l| {
            let top = !l.is_empty() && !l.starts_with([' ', '\t', '#', '\n', '\r']);
            top && !(items_at_column_0 && l.starts_with("- "))
        })
        .map_or(lines.len(), |i| at + 1 + i)
}

fn lefthook_entry(block: &str, pad: usize) -> String {
    let mut entry = format!("{}agentci:\n{}  run: |\n", " ".repeat(pad), " ".repeat(pad));
    entry.push_str(&indent(block, pad + 4));
    entry
}

/// Adds `pre-push: commands: agentci: run: |` to a lefthook config.
fn lefthook_insert(text: &str, block: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let Some(at) = top_level_key(&lines, "pre-push") else {
        let sep = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        return Some(format!(
            "{text}{sep}pre-push:\n  commands:\n{}",
            lefthook_entry(block, 4)
        ));
    };
    let end = block_end(&lines, at, false);
    let commands = (at + 1..end).find(|&i| lines[i].trim_end() == "  commands:");
    let mut out: String;
    match commands {
        Some(c) => {
            let pad = lines[c + 1..end]
                .iter()
                .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                .map_or(4, |l| l.len() - l.trim_start().len());
            out = lines[..=c].concat();
            out.push_str(&lefthook_entry(block, pad));
            out.push_str(&lines[c + 1..].concat());
        }
        None => {
            out = lines[..=at].concat();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("  commands:\n");
            out.push_str(&lefthook_entry(block, 4));
            out.push_str(&lines[at + 1..].concat());
        }
    }
    Some(out)
}

fn lefthook_has_hook(config: &Value) -> bool {
    config["pre-push"]["commands"]["agentci"]["run"]
        .as_str()
        .is_some_and(|run| run.contains("agentci replay"))
}

/// The pre-commit local hook, as a `repos:` item at `pad`.
fn pre_commit_entry(block: &str, pad: usize) -> String {
    let p = " ".repeat(pad);
    let mut entry = format!(
        "{p}- repo: local\n{p}  hooks:\n{p}    - id: agentci-replay\n{p}      name: agentci replay\n\
         {p}      language: system\n{p}      pass_filenames: false\n{p}      always_run: true\n\
         {p}      stages: [pre-push]\n{p}      entry: sh -c\n{p}      args:\n{p}        - |\n"
    );
    entry.push_str(&indent(block, pad + 10));
    entry
}

/// Appends a local hook to the `repos:` list of a pre-commit config.
fn pre_commit_insert(text: &str, block: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let Some(at) = top_level_key(&lines, "repos") else {
        let sep = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        return Some(format!("{text}{sep}repos:\n{}", pre_commit_entry(block, 2)));
    };
    let first_item = lines[at + 1..]
        .iter()
        .find(|l| l.trim_start().starts_with("- "))?;
    let pad = first_item.len() - first_item.trim_start().len();
    let end = block_end(&lines, at, pad == 0);
    let mut out = lines[..end].concat();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&pre_commit_entry(block, pad));
    out.push_str(&lines[end..].concat());
    Some(out)
}

fn pre_commit_has_hook(config: &Value) -> bool {
    config["repos"].as_array().is_some_and(|repos| {
        repos.iter().any(|repo| {
            repo["hooks"].as_array().is_some_and(|hooks| {
                hooks.iter().any(|h| {
                    h["id"] == "agentci-replay"
                        && h["args"][0]
                            .as_str()
                            .is_some_and(|a| a.contains("agentci replay"))
                })
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Value {
        serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn the_block_replays_each_spec_and_is_replaced_in_place() {
        let quick = block(false);
        assert!(quick.contains("agentci replay --cassettes-only --quiet --spec \"$agentci_spec\""));
        assert!(block(true).contains("agentci replay --quiet --spec"));
        let text = format!("echo before\n{quick}echo after\n");
        let replaced = replace_block(&text, &block(true)).unwrap();
        assert_eq!(
            replaced,
            format!("echo before\n{}echo after\n", block(true))
        );
        assert_eq!(replace_block("echo only\n", &quick), None);
    }

    #[test]
    fn lefthook_configs_gain_a_pre_push_command() {
        let block = block(false);
        let cases = [
            "",
            "pre-commit:\n  commands:\n    fmt:\n      run: cargo fmt --check\n",
            "pre-push:\n  parallel: true\n",
            "# hooks\npre-push:\n  commands:\n      test:\n        run: make test\nother: 1\n",
        ];
        for before in cases {
            let after = lefthook_insert(before, &block).unwrap();
            let config = parse(&after);
            assert!(lefthook_has_hook(&config), "{after}");
            if before.contains("make test") {
                assert_eq!(config["pre-push"]["commands"]["test"]["run"], "make test");
                assert_eq!(config["other"], 1);
            }
            // Again: the block is found and left as it is.
            assert_eq!(replace_block(&after, &block).unwrap(), after);
        }
    }

    #[test]
    fn pre_commit_configs_gain_a_local_pre_push_hook() {
        let block = block(true);
        let cases = [
            "",
            "repos:\n  - repo: https://github.com/psf/black\n    rev: 24.1.0\n    hooks:\n      - id: black\n",
            "repos:\n- repo: local\n  hooks:\n  - id: x\n    name: x\n    entry: x\n    language: system\ndefault_stages: [pre-commit]\n",
        ];
        for before in cases {
            let after = pre_commit_insert(before, &block).unwrap();
            let config = parse(&after);
            assert!(pre_commit_has_hook(&config), "{after}");
            let repos = config["repos"].as_array().unwrap();
            assert_eq!(repos.len(), before.matches("repo:").count() + 1, "{after}");
            if before.contains("default_stages") {
                assert_eq!(config["default_stages"][0], "pre-commit");
            }
        }
    }

    #[test]
    fn managers_are_found_by_their_files() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect(dir.path()), Manager::Git);
        std::fs::write(dir.path().join(".pre-commit-config.yaml"), "repos: []\n").unwrap();
        assert_eq!(detect(dir.path()), Manager::PreCommit);
        std::fs::write(dir.path().join("lefthook.yml"), "").unwrap();
        assert_eq!(detect(dir.path()), Manager::Lefthook("lefthook.yml".into()));
        std::fs::create_dir(dir.path().join(".husky")).unwrap();
        assert_eq!(detect(dir.path()), Manager::Husky);
    }
}
