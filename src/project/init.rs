//! `agentci init`: the scaffold of a new project. Every file comes from a
//! template under `src/project/templates/`, filled with the agent's name and
//! command; nothing existing is overwritten unless asked.

use std::path::Path;

use crate::atomic::Visibility;
use crate::error::{Error, Result};
use crate::spec::Command;

use super::{FileChange, ensure_lines, write_file};

const SPEC_TEMPLATE: &str = include_str!("templates/spec.yaml");
const WORKFLOW_TEMPLATE: &str = include_str!("templates/workflow.yml");
const SETUP_PYTHON: &str = include_str!("templates/setup-python.yml");
const SETUP_NODE: &str = include_str!("templates/setup-node.yml");
const SETUP_OTHER: &str = include_str!("templates/setup-other.yml");

/// Cassettes are generated files: collapsed in pull-request views and left out
/// of language statistics, but still diffable (never `-diff`).
pub const GITATTRIBUTES_LINE: &str = "cassettes/**/*.jsonl linguist-generated=true";
/// The run store is local state, never committed.
pub const GITIGNORE_LINE: &str = "/.agentci/";
/// The command written when none is given.
pub const DEFAULT_COMMAND: &str = "python3 agent.py";

/// What `agentci init` writes.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// The agent's name: the spec's file name, `agent:` and the cassette folder.
    pub agent: String,
    /// How the agent is started.
    pub command: Command,
    /// Replace existing files.
    pub force: bool,
}

/// The language the agent's command runs, for the workflow's setup steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// `python`, `python3`, `uv`, `poetry`, …
    Python,
    /// `node`, `npm`, `npx`, `pnpm`, `yarn`, `bun`, `deno`.
    Node,
    /// Anything else: the workflow says where to add the setup.
    Other,
}

impl Runtime {
    /// The runtime of a command, from its program's name.
    pub fn of(command: &Command) -> Runtime {
        let program = match command {
            Command::Argv(argv) => argv.first().map(String::as_str).unwrap_or(""),
            Command::Shell(line) => line.split_whitespace().next().unwrap_or(""),
        };
        let name = Path::new(program)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if name.starts_with("python") || ["uv", "poetry", "pipenv", "pdm"].contains(&name) {
            Runtime::Python
        } else if ["node", "npm", "npx", "pnpm", "yarn", "bun", "deno", "tsx"].contains(&name) {
            Runtime::Node
        } else {
            Runtime::Other
        }
    }
}

/// Parses `--command`: an argv list when the line needs no shell, else a
/// string for `sh -c` (pipes, redirections, variables, globs, assignments).
pub fn parse_command(line: &str) -> Result<Command> {
    let line = line.trim();
    let argv = shell_words::split(line).map_err(|e| {
        Error::other(
            format!("--command {line:?}: {e}"),
            Some("quote the command like a shell would, e.g. --command 'python3 agent.py'".into()),
        )
    })?;
    if argv.is_empty() {
        return Err(Error::other(
            "--command is empty",
            Some(
                "give the command that starts the agent, e.g. --command 'python3 agent.py'".into(),
            ),
        ));
    }
    const SHELL: &[char] = &[
        '|', '&', ';', '<', '>', '(', ')', '$', '`', '*', '?', '[', ']', '{', '}', '~', '\n',
    ];
    let needs_shell = line.contains(SHELL) || argv[0].contains('=');
    Ok(if needs_shell {
        Command::Shell(line.to_string())
    } else {
        Command::Argv(argv)
    })
}

/// The default agent name: the project folder's name as a slug.
pub fn default_agent_name(root: &Path) -> String {
    let name = root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .unwrap_or_default();
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "agent".into()
    } else {
        slug.into()
    }
}

/// Checks an agent name: it names a spec file and a cassette folder.
pub fn check_agent_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with(['.', '-']);
    if ok {
        Ok(())
    } else {
        Err(Error::other(
            format!("agent name {name:?} cannot name a spec file and a cassette folder"),
            Some("use letters, digits, '-', '_' and '.', not starting with '.' or '-' (e.g. --agent support-bot)".into()),
        ))
    }
}

/// The spec file for `agent`, started by `command`.
pub fn spec_text(agent: &str, command: &Command) -> String {
    // JSON strings and arrays are valid YAML flow scalars and sequences, with
    // every character escaped correctly.
    let command = match command {
        Command::Argv(argv) => serde_json::to_string(argv),
        Command::Shell(line) => serde_json::to_string(line),
    }
    .unwrap_or_else(|_| "\"\"".into());
    SPEC_TEMPLATE
        .replace("@AGENT@", agent)
        .replace("@COMMAND@", &command)
}

/// The GitHub Actions workflow for `agent`, with setup steps for `runtime`.
pub fn workflow_text(agent: &str, runtime: Runtime) -> String {
    let setup = match runtime {
        Runtime::Python => SETUP_PYTHON,
        Runtime::Node => SETUP_NODE,
        Runtime::Other => SETUP_OTHER,
    };
    // The sharded variant is commented out: the same steps behind "  # ".
    let shard_setup: String = setup
        .lines()
        .map(|line| format!("  # {}\n", line.strip_prefix("  ").unwrap_or(line)))
        .collect();
    WORKFLOW_TEMPLATE
        .replace("@SETUP@\n", setup)
        .replace("@SHARD_SETUP@\n", &shard_setup)
        .replace("@AGENT@", agent)
        .replace("@VERSION@", crate::VERSION)
}

/// Writes the scaffold under `root`; returns what happened to each file.
pub fn scaffold(root: &Path, opts: &InitOptions) -> Result<Vec<FileChange>> {
    check_agent_name(&opts.agent)?;
    let schema = serde_json::to_string_pretty(&crate::spec::json_schema())
        .map_err(|e| Error::other(e.to_string(), None))?;
    let spec = spec_text(&opts.agent, &opts.command);
    let workflow = workflow_text(&opts.agent, Runtime::of(&opts.command));
    let spec_path = format!("specs/{}.yaml", opts.agent);
    Ok(vec![
        write_file(
            root,
            spec_path.as_ref(),
            &spec,
            Visibility::Public,
            opts.force,
        )?,
        // The schema the spec's first line points editors at (`--force` refreshes
        // it after an upgrade, like every other file).
        write_file(
            root,
            "specs/agentci.schema.json".as_ref(),
            &(schema + "\n"),
            Visibility::Public,
            opts.force,
        )?,
        write_file(
            root,
            "cassettes/.gitkeep".as_ref(),
            "",
            Visibility::Public,
            false,
        )?,
        ensure_lines(root, ".gitattributes".as_ref(), &[GITATTRIBUTES_LINE])?,
        ensure_lines(root, ".gitignore".as_ref(), &[GITIGNORE_LINE])?,
        write_file(
            root,
            ".github/workflows/agentci.yml".as_ref(),
            &workflow,
            Visibility::Public,
            opts.force,
        )?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_stay_argv_unless_they_need_a_shell() {
        let argv = |v: &[&str]| Command::Argv(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            parse_command("python3 agent.py").unwrap(),
            argv(&["python3", "agent.py"])
        );
        assert_eq!(
            parse_command("node 'my agent.js' --fast").unwrap(),
            argv(&["node", "my agent.js", "--fast"])
        );
        for shell in [
            "cd agent && python3 main.py",
            "LOG=1 python3 a.py",
            "python3 $AGENT",
        ] {
            assert_eq!(parse_command(shell).unwrap(), Command::Shell(shell.into()));
        }
        assert!(parse_command("python3 'unclosed").is_err());
        assert!(parse_command("  ").is_err());
    }

    #[test]
    fn runtimes_come_from_the_program_name() {
        assert_eq!(
            Runtime::of(&parse_command("python3 a.py").unwrap()),
            Runtime::Python
        );
        assert_eq!(
            Runtime::of(&parse_command("/usr/bin/python a.py").unwrap()),
            Runtime::Python
        );
        assert_eq!(
            Runtime::of(&parse_command("uv run agent").unwrap()),
            Runtime::Python
        );
        assert_eq!(
            Runtime::of(&parse_command("npx tsx agent.ts").unwrap()),
            Runtime::Node
        );
        assert_eq!(
            Runtime::of(&parse_command("./agent --fast").unwrap()),
            Runtime::Other
        );
    }

    #[test]
    fn agent_names_are_slugs() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("My Support Bot!");
        std::fs::create_dir(&project).unwrap();
        assert_eq!(default_agent_name(&project), "my-support-bot");
        assert!(check_agent_name("support-bot_2.v1").is_ok());
        for bad in ["", "../x", "a b", ".hidden", "-flag"] {
            assert!(check_agent_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn odd_commands_are_written_as_valid_yaml() {
        let command = parse_command(r#"python3 -c "print('a: b # c')""#).unwrap();
        let text = spec_text("bot", &command);
        let spec: crate::spec::Spec = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(spec.runner.unwrap().command, command);
    }
}
