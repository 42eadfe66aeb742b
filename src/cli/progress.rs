//! A progress bar on stderr, case by case, only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::run::CaseRun;

/// Progress of a run; silent when stderr is not a terminal or with `--quiet`.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar when stderr is a terminal and not `quiet`.
    pub fn new(quiet: bool) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(0);
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        Progress { bar }
    }

    /// One case finished.
    pub fn case_done(&self, case: &CaseRun, done: usize, total: usize) {
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(format!("{} {}", case.case_id, case.status.as_str()));
        }
    }

    /// Clears the bar before the report is printed.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
