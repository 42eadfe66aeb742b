//! GitHub Actions workflow commands: `::error` for failures and errors,
//! `::warning` for path and cost warnings, each pointing at the query's line in
//! the spec so the annotation lands on the pull request's diff.

use std::fmt::Write as _;

use super::{RenderOptions, Severity, findings, groups, run_label};
use crate::run::RunRecord;

/// Renders one workflow command per finding, then one per run warning.
pub fn render(run: &RunRecord, opts: &RenderOptions) -> String {
    let mut out = String::new();
    for g in groups(run, opts) {
        for case in &g.runs {
            let label = run_label(case, g.has_trials());
            for f in findings(case) {
                let (command, kind) = match f.severity {
                    Severity::Failure => ("error", "failed"),
                    Severity::Error => ("error", "error"),
                    Severity::Warning => ("warning", "warning"),
                    Severity::Note => continue,
                };
                let title = format!("agentci {kind}: {label}");
                let message = format!("[{}] {label}: {}", f.label, f.message);
                let _ = writeln!(
                    out,
                    "::{command} file={},line={},title={}::{}",
                    escape_property(&case.file),
                    case.line,
                    escape_property(&title),
                    escape_data(&message)
                );
            }
        }
        if let Some(first) = g.runs.first().filter(|_| g.flaky()) {
            let message = format!(
                "[FLAKY] {}: {}/{} trials passed",
                g.id,
                g.passed,
                g.runs.len()
            );
            let _ = writeln!(
                out,
                "::warning file={},line={},title={}::{}",
                escape_property(&first.file),
                first.line,
                escape_property(&format!("agentci flaky: {}", g.id)),
                escape_data(&message)
            );
        }
    }
    for w in &run.warnings {
        let _ = writeln!(
            out,
            "::warning title={}::{}",
            escape_property("agentci run warning"),
            escape_data(&format!("[RUN] {w}"))
        );
    }
    out
}

/// Escapes a message (after `::`) per the workflow-command rules: `%`, CR, LF.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value (`file=`, `title=`): the message rules plus `:` and `,`,
/// which would otherwise end the value.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_per_workflow_command_rules() {
        assert_eq!(escape_data("50% done\r\nnext"), "50%25 done%0D%0Anext");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        // `%` is escaped first, so an existing escape is not taken as one.
        assert_eq!(escape_data("%0A"), "%250A");
    }
}
