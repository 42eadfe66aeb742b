//! JUnit XML (the Ant/Jenkins dialect every CI reads): one `<testcase>` per case
//! run (per trial with trials), `<failure>` for correctness and forbidden tools,
//! `<error>` for runs that could not be evaluated, figures as `<properties>`.
//! Written with quick-xml, which escapes text and attributes.

use std::io;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use super::{Figures, RenderOptions, Severity, figures, findings, groups, path_figure};
use crate::run::{CaseRun, CaseStatus, RunRecord};

/// Renders the JUnit XML report.
pub fn render(run: &RunRecord, opts: &RenderOptions) -> String {
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing into a Vec cannot fail.
    let _ = write_report(&mut writer, run, opts);
    let mut text = String::from_utf8(writer.into_inner()).unwrap_or_default();
    text.push('\n');
    text
}

fn write_report(w: &mut Writer<Vec<u8>>, run: &RunRecord, opts: &RenderOptions) -> io::Result<()> {
    let groups = groups(run, opts);
    let runs: Vec<(&CaseRun, bool)> = groups
        .iter()
        .flat_map(|g| g.runs.iter().map(move |c| (*c, g.has_trials())))
        .collect();
    let count = |s: CaseStatus| {
        runs.iter()
            .filter(|(c, _)| c.status == s)
            .count()
            .to_string()
    };
    let (tests, failures, errors) = (
        runs.len().to_string(),
        count(CaseStatus::Fail),
        count(CaseStatus::Error),
    );
    let time = seconds(run.duration_ms);
    let agent = xml_safe(&run.agent);

    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attributes([
            ("name", "agentci"),
            ("tests", tests.as_str()),
            ("failures", failures.as_str()),
            ("errors", errors.as_str()),
            ("time", time.as_str()),
        ])
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attributes([
                    ("name", agent.as_str()),
                    ("tests", tests.as_str()),
                    ("failures", failures.as_str()),
                    ("errors", errors.as_str()),
                    ("skipped", "0"),
                    ("time", time.as_str()),
                    ("timestamp", &xml_safe(&run.started_at)),
                ])
                .write_inner_content(|w| {
                    write_properties(
                        w,
                        &[
                            ("run_id", run.id.clone()),
                            ("mode", json_name(&run.mode)),
                            ("spec", run.spec_path.clone()),
                            ("spec_hash", run.spec_hash.clone()),
                            ("tool_version", run.tool_version.clone()),
                        ],
                    )?;
                    for (case, trials) in &runs {
                        write_testcase(w, case, *trials, &agent)?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    Ok(())
}

fn write_testcase(
    w: &mut Writer<Vec<u8>>,
    case: &CaseRun,
    trials: bool,
    agent: &str,
) -> io::Result<()> {
    let name = if trials {
        format!("{} [trial {}]", case.case_id, case.trial)
    } else {
        case.case_id.clone()
    };
    let figures = figures(case);
    let time = seconds(figures.map_or(0, |f| f.latency_ms));
    let found = findings(case);
    w.create_element("testcase")
        .with_attributes([
            ("name", xml_safe(&name).as_str()),
            ("classname", agent),
            ("time", time.as_str()),
            ("file", xml_safe(&case.file).as_str()),
            ("line", case.line.to_string().as_str()),
        ])
        .write_inner_content(|w| {
            write_properties(w, &properties(case, figures))?;
            let lines = |pick: &dyn Fn(Severity) -> bool| -> Vec<String> {
                found
                    .iter()
                    .filter(|f| pick(f.severity))
                    .map(|f| f.text())
                    .collect()
            };
            let errors = lines(&|s| s == Severity::Error);
            let failures = lines(&|s| s == Severity::Failure);
            if case.status == CaseStatus::Error {
                write_problem(w, "error", "error", &errors)?;
            } else if case.status == CaseStatus::Fail {
                let only_forbidden = found
                    .iter()
                    .filter(|f| f.severity == Severity::Failure)
                    .all(|f| f.label == "PATH");
                let kind = if only_forbidden {
                    "forbidden_tool"
                } else {
                    "correctness"
                };
                write_problem(w, "failure", kind, &failures)?;
            }
            let warnings = lines(&|s| s == Severity::Warning);
            if !warnings.is_empty() {
                w.create_element("system-out")
                    .write_text_content(BytesText::new(&xml_safe(&warnings.join("\n"))))?;
            }
            Ok(())
        })?;
    Ok(())
}

/// `<failure>`/`<error>`: the first line as `message`, every line as the text.
fn write_problem(
    w: &mut Writer<Vec<u8>>,
    element: &str,
    kind: &str,
    lines: &[String],
) -> io::Result<()> {
    let message = lines.first().cloned().unwrap_or_else(|| kind.to_string());
    w.create_element(element)
        .with_attributes([("message", xml_safe(&message).as_str()), ("type", kind)])
        .write_text_content(BytesText::new(&xml_safe(&lines.join("\n"))))?;
    Ok(())
}

fn properties(case: &CaseRun, figures: Option<Figures>) -> Vec<(&'static str, String)> {
    let mut props = Vec::new();
    if let Some(f) = figures {
        props.push(("cost_usd", format!("{:.6}", f.cost_usd)));
        props.push(("latency_ms", f.latency_ms.to_string()));
        props.push(("total_tokens", f.total_tokens.to_string()));
        props.push(("tool_calls", f.tool_calls.to_string()));
        props.push(("llm_calls", f.llm_calls.to_string()));
    }
    for key in ["tool_recall", "tool_precision"] {
        if let Some(v) = path_figure(case, key) {
            props.push((key, format!("{v:.4}")));
        }
    }
    props.push(("status", case.status.as_str().to_string()));
    props.push(("trial", case.trial.to_string()));
    props.push(("attempts", case.attempts.to_string()));
    props.push(("cassette", case.cassette.clone()));
    props
}

fn write_properties(w: &mut Writer<Vec<u8>>, props: &[(&str, String)]) -> io::Result<()> {
    w.create_element("properties").write_inner_content(|w| {
        for (name, value) in props {
            w.create_element("property")
                .with_attributes([("name", *name), ("value", xml_safe(value).as_str())])
                .write_empty()?;
        }
        Ok(())
    })?;
    Ok(())
}

fn json_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `0.812` seconds from milliseconds.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Replaces characters XML 1.0 cannot carry at all (control characters other
/// than tab, LF and CR; agent answers may hold them), which escaping cannot fix.
fn xml_safe(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_replaced() {
        assert_eq!(xml_safe("a\u{1}b\tc\n"), "a\u{FFFD}b\tc\n");
    }

    #[test]
    fn seconds_keep_milliseconds() {
        assert_eq!(seconds(812), "0.812");
        assert_eq!(seconds(8210), "8.210");
    }
}
