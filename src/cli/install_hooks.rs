//! `agentci install-hooks [--full] [--force]`

use std::io::Write;

use crate::error::{Error, ExitStatus, Result};
use crate::project::hooks::{self, HookOptions, Installed};

/// Arguments of `agentci install-hooks`.
#[derive(Debug, clap::Args)]
pub struct InstallHooksArgs {
    /// Run the agent through the replaying proxy in the hook (catches changed
    /// prompts and code as cassette misses), not only the cassettes' scoring.
    #[arg(long)]
    pub full: bool,
    /// Move an existing git hook aside even when an older chained hook is there.
    #[arg(long)]
    pub force: bool,
}

/// Runs `agentci install-hooks` for the repository holding the current folder.
pub fn run(args: InstallHooksArgs) -> Result<ExitStatus> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let root = hooks::repo_root(&cwd)?;
    let installed = hooks::install(
        &root,
        HookOptions {
            full: args.full,
            force: args.force,
        },
    )?;
    print(&mut std::io::stdout().lock(), &installed);
    Ok(ExitStatus::Success)
}

/// What was installed, for `install-hooks` and `init`. Write errors (a closed
/// pipe) are ignored: the hook is installed either way.
pub fn print(out: &mut impl Write, installed: &Installed) {
    let _ = writeln!(
        out,
        "{}  (pre-push hook, via {})",
        installed.change,
        installed.manager.name()
    );
    if let Some(chained) = &installed.chained {
        let _ = writeln!(
            out,
            "the earlier pre-push hook is now {} and runs first",
            chained.display()
        );
    }
    if let Some(step) = &installed.next_step {
        let _ = writeln!(
            out,
            "run `{step}` so {} picks the hook up",
            installed.manager.name()
        );
    }
}
