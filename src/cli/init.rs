//! `agentci init [--agent NAME] [--command CMD] [--yes] [--force]`

use std::io::{IsTerminal, Write};
use std::path::Path;

use crate::error::{Error, ExitStatus, Result};
use crate::project::hooks::{self, HookOptions};
use crate::project::init::{self, DEFAULT_COMMAND, InitOptions};

/// Arguments of `agentci init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The agent's name: names specs/<NAME>.yaml and cassettes/<NAME>/ [default: this folder's name]
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// The command that starts the agent, e.g. 'python3 agent.py' [default: python3 agent.py]
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// Take the defaults without asking, and install the pre-push hook.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Replace files that exist (they are kept otherwise).
    #[arg(long)]
    pub force: bool,
}

/// Runs `agentci init` in the current folder: asks on a terminal, writes the
/// scaffold, offers the pre-push hook, prints the next three commands.
pub fn run(args: InitArgs) -> Result<ExitStatus> {
    let root = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let interactive =
        !args.yes && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let agent = match args.agent {
        Some(agent) => agent,
        None if interactive => ask("Agent name", &init::default_agent_name(&root))?,
        None => init::default_agent_name(&root),
    };
    init::check_agent_name(&agent)?;
    let command = match args.command {
        Some(command) => command,
        None if interactive => ask("Command that starts the agent", DEFAULT_COMMAND)?,
        None => DEFAULT_COMMAND.to_string(),
    };
    let opts = InitOptions {
        agent: agent.clone(),
        command: init::parse_command(&command)?,
        force: args.force,
    };
    let changes = init::scaffold(&root, &opts)?;
    // Write errors (a closed pipe) are ignored: the files are written either way.
    let out = &mut std::io::stdout().lock();
    for change in changes {
        let _ = writeln!(out, "{change}");
    }
    offer_hook(out, &root, args.yes, interactive)?;
    let _ = writeln!(out, "\nNext:");
    let _ = writeln!(
        out,
        "  agentci validate specs/{agent}.yaml          # after adding your queries"
    );
    let _ = writeln!(
        out,
        "  agentci record --spec specs/{agent}.yaml     # live APIs -> cassettes/{agent}/ (needs your API keys)"
    );
    let _ = writeln!(
        out,
        "  agentci replay --spec specs/{agent}.yaml     # offline, $0; commit specs/ and cassettes/"
    );
    Ok(ExitStatus::Success)
}

fn offer_hook(out: &mut impl Write, root: &Path, yes: bool, interactive: bool) -> Result<()> {
    let Ok(repo) = hooks::repo_root(root) else {
        let _ = writeln!(
            out,
            "pre-push hook: skipped (not a git repository; run `git init`, then `agentci install-hooks`)"
        );
        return Ok(());
    };
    let wanted = yes
        || (interactive
            && dialoguer::Confirm::new()
                .with_prompt(
                    "Install a pre-push hook that replays the cassettes before every push?",
                )
                .default(true)
                .interact()
                .map_err(prompt_error)?);
    if !wanted {
        let _ = writeln!(
            out,
            "pre-push hook: not installed (`agentci install-hooks` adds it)"
        );
        return Ok(());
    }
    let installed = hooks::install(&repo, HookOptions::default())?;
    super::install_hooks::print(out, &installed);
    Ok(())
}

fn ask(prompt: &str, default: &str) -> Result<String> {
    dialoguer::Input::<String>::new()
        .with_prompt(prompt)
        .default(default.to_string())
        .interact_text()
        .map_err(prompt_error)
}

fn prompt_error(e: dialoguer::Error) -> Error {
    Error::other(
        format!("cannot read the answer: {e}"),
        Some("pass --agent, --command and --yes to run without prompts".into()),
    )
}
