//! `agentci cassettes lint [DIR]`: the secret scan of cassette writes, run on files already on disk.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, ExitStatus, Result};
use crate::vcr::redact::scan_for_secrets;

/// Arguments of `agentci cassettes`.
#[derive(Debug, clap::Args)]
pub struct CassettesArgs {
    /// What to do with the cassettes.
    #[command(subcommand)]
    pub command: CassettesCommand,
}

/// The `cassettes` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CassettesCommand {
    /// Scan cassette files (*.jsonl, recursively) for key-shaped secrets; exit 1 on a find.
    Lint(LintArgs),
}

/// Arguments of `agentci cassettes lint`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// A cassette directory (searched recursively) or a single cassette file.
    #[arg(default_value = "cassettes")]
    pub dir: PathBuf,
}

/// Runs `agentci cassettes`.
pub fn run(args: CassettesArgs) -> Result<ExitStatus> {
    match args.command {
        CassettesCommand::Lint(lint) => run_lint(&lint.dir),
    }
}

fn run_lint(root: &Path) -> Result<ExitStatus> {
    let files = if root.is_file() {
        vec![root.to_path_buf()]
    } else {
        let mut files = Vec::new();
        collect_jsonl(root, &mut files)?;
        files
    };
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    let (mut finds, mut unreadable) = (0usize, 0usize);
    for file in &files {
        let text = match std::fs::read(file) {
            // Lossy: an invalid byte must not hide a key on the same line.
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                unreadable += 1;
                // Output to a closed pipe is not worth failing over; the exit code still tells.
                let _ = writeln!(stderr, "error: {}: {e}", file.display());
                continue;
            }
        };
        for finding in scan_for_secrets(&text) {
            finds += 1;
            let _ = writeln!(
                stdout,
                "{}:{}: {} ({})",
                file.display(),
                finding.line,
                finding.kind,
                finding.excerpt
            );
        }
    }
    let _ = writeln!(
        stderr,
        "{} cassette file(s) scanned, {finds} secret(s) found{}",
        files.len(),
        if unreadable > 0 {
            format!(", {unreadable} unreadable")
        } else {
            String::new()
        }
    );
    if finds > 0 {
        let _ = writeln!(
            stderr,
            "hint: delete the cassette and re-record it with the key's variable in the environment (names ending in _KEY, _TOKEN or _SECRET are redacted), then rotate the key"
        );
    }
    Ok(if unreadable > 0 {
        ExitStatus::Error
    } else if finds > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Every `*.jsonl` under `dir`, sorted, so output is stable.
fn collect_jsonl(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in entries {
        paths.push(entry.map_err(|e| Error::io(dir, e))?.path());
    }
    paths.sort();
    for path in paths {
        // symlink_metadata: a symlinked directory is not followed, so a link loop cannot recurse forever.
        let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_dir {
            collect_jsonl(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}
