//! `agentci validate SPEC...`

use std::io::Write;
use std::path::PathBuf;

use crate::error::{Error, ExitStatus, Result};
use crate::spec::{self, Filter};

/// Arguments of `agentci validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Spec files to check.
    #[arg(required = true)]
    pub specs: Vec<PathBuf>,
}

/// Runs `agentci validate`: a summary line per valid file on stdout, every
/// finding on stderr; exit 1 when any file is invalid.
pub fn run(args: ValidateArgs) -> Result<ExitStatus> {
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    let mut invalid = 0usize;
    let mut errors = 0usize;
    // Write failures (a closed pipe) leave nobody to tell; the exit status still does.
    for path in &args.specs {
        match spec::load(path, &Filter::default()) {
            Ok(loaded) => {
                for warning in &loaded.warnings {
                    let _ = writeln!(
                        stderr,
                        "{}",
                        warning.to_string().replacen(": ", ": warning: ", 1)
                    );
                }
                let n = loaded.cases.len();
                let _ = writeln!(
                    stdout,
                    "ok {}: {n} quer{}, agent {}",
                    path.display(),
                    if n == 1 { "y" } else { "ies" },
                    loaded.spec.agent
                );
            }
            Err(Error::Spec(diagnostics)) => {
                invalid += 1;
                errors += diagnostics.len();
                for diagnostic in &diagnostics {
                    let _ = writeln!(stderr, "{diagnostic}");
                }
            }
            Err(other) => return Err(other),
        }
    }
    if invalid == 0 {
        return Ok(ExitStatus::Success);
    }
    let _ = writeln!(
        stderr,
        "error: {invalid} of {} spec file{} invalid ({errors} error{})",
        args.specs.len(),
        if args.specs.len() == 1 { "" } else { "s" },
        if errors == 1 { "" } else { "s" }
    );
    Ok(ExitStatus::Failure)
}
