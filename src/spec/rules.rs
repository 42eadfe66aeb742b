//! Checks the schema cannot express: blank text, regexes that compile, JSON
//! Schema documents that are valid, judge rubrics that name a rule or a known
//! template, safe ids. Each runs on the node tree, so it reports the exact place.

use super::RUBRIC_TEMPLATES;
use super::shape::{Finding, suggest};
use super::yaml::{Kind, Node};

/// An id or agent name: it names files and folders, so it stays path-safe.
pub(crate) fn is_safe_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.len() <= 128
}

/// Checks the root's own values (not the queries): agent name, judge settings.
pub(crate) fn check_root(root: &Node, errors: &mut Vec<Finding>, warnings: &mut Vec<Finding>) {
    if let Some(agent) = root.get("agent")
        && let Kind::Str(name) = &agent.kind
    {
        if name.trim().is_empty() {
            errors.push(Finding {
                pos: agent.pos,
                message: "agent: must not be blank".into(),
                hint: Some("name the agent, e.g. `agent: rag-agent`; it names the cassette and baseline folders".into()),
            });
        } else if !is_safe_name(name) {
            errors.push(Finding {
                pos: agent.pos,
                message: format!("agent: `{name}` is not a safe folder name"),
                hint: Some("use letters, digits, `-`, `_` and `.` (starting with a letter or digit); it names the cassette and baseline folders".into()),
            });
        }
    }
    if let Some(judge) = root.get("judge_config") {
        if let Some(t) = judge.get("temperature") {
            let value = match t.kind {
                Kind::Int(i) => i as f64,
                Kind::UInt(u) => u as f64,
                Kind::Float(f) => f,
                _ => 0.0,
            };
            if value != 0.0 {
                warnings.push(Finding {
                    pos: t.pos,
                    message: format!(
                        "judge_config.temperature: {value} makes verdicts vary from run to run"
                    ),
                    hint: Some(
                        "use `temperature: 0` so the same answer gets the same verdict".into(),
                    ),
                });
            }
        }
        if let Some(ensemble) = judge.get("ensemble")
            && ensemble.get("enabled").map(|e| &e.kind) == Some(&Kind::Bool(true))
        {
            let empty = match ensemble.get("models").map(|m| &m.kind) {
                None => true,
                Some(Kind::Seq(models)) => models.is_empty(),
                Some(_) => false,
            };
            if empty {
                errors.push(Finding {
                    pos: ensemble.pos,
                    message: "judge_config.ensemble: enabled but `models` is empty".into(),
                    hint: Some("list the judge models, e.g. `models: [claude-sonnet-4-5, gpt-4o-mini, gpt-4o-mini]`".into()),
                });
            }
        }
    }
}

/// Checks one query as written (`path` names it in messages).
pub(crate) fn check_query(query: &Node, path: &str, errors: &mut Vec<Finding>) {
    if let Some(text) = query.get("query")
        && let Kind::Str(s) = &text.kind
        && s.trim().is_empty()
    {
        errors.push(Finding {
            pos: text.pos,
            message: format!("{path}.query: must not be blank"),
            hint: Some("write the input the agent receives (AGENTCI_QUERY)".into()),
        });
    }
    if let Some(id) = query.get("id")
        && let Kind::Str(s) = &id.kind
        && !is_safe_name(s)
    {
        errors.push(Finding {
            pos: id.pos,
            message: format!("{path}.id: `{s}` is not a valid case id"),
            hint: Some("use letters, digits, `-`, `_` and `.` (starting with a letter or digit, at most 128); ids name cassette files".into()),
        });
    }
    check_assertions(query, path, errors);
}

/// Checks the assertion blocks (`correctness`, `path`) of a query or of `defaults`.
pub(crate) fn check_assertions(node: &Node, path: &str, errors: &mut Vec<Finding>) {
    if let Some(correctness) = node.get("correctness") {
        let here = format!("{path}.correctness");
        if let Some(regex) = correctness.get("regex_match") {
            check_regex(regex, &format!("{here}.regex_match"), errors);
        }
        if let Some(schema) = correctness.get("json_schema") {
            check_json_schema(schema, &format!("{here}.json_schema"), errors);
        }
        if let Some(Kind::Seq(rubrics)) = correctness.get("llm_judge").map(|n| &n.kind) {
            for (i, rubric) in rubrics.iter().enumerate() {
                check_rubric(rubric, &format!("{here}.llm_judge[{i}]"), errors);
            }
        }
        for name in ["safety_check", "hallucination_check"] {
            if let Some(rubric) = correctness.get(name) {
                check_rubric(rubric, &format!("{here}.{name}"), errors);
            }
        }
    }
    if let Some(Kind::Seq(expectations)) = node
        .get("path")
        .and_then(|p| p.get("expected_tool_args"))
        .map(|n| &n.kind)
    {
        for (i, expectation) in expectations.iter().enumerate() {
            let regex_mode =
                expectation.get("mode").map(|m| &m.kind) == Some(&Kind::Str("regex".to_string()));
            if let (true, Some(args)) = (regex_mode, expectation.get("args")) {
                check_regex_values(
                    args,
                    &format!("{path}.path.expected_tool_args[{i}].args"),
                    errors,
                );
            }
        }
    }
}

fn check_regex(node: &Node, path: &str, errors: &mut Vec<Finding>) {
    let Kind::Str(pattern) = &node.kind else {
        return;
    };
    if let Err(err) = regex::Regex::new(pattern) {
        errors.push(Finding {
            pos: node.pos,
            message: format!("{path}: invalid regex `{pattern}`: {}", regex_reason(&err)),
            hint: Some("the syntax is Rust's `regex` crate (no look-around or backreferences); escape literal characters with `\\`".into()),
        });
    }
}

/// In `mode: regex`, every string value (at any depth) is a regex.
fn check_regex_values(node: &Node, path: &str, errors: &mut Vec<Finding>) {
    match &node.kind {
        Kind::Str(_) => check_regex(node, path, errors),
        Kind::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                check_regex_values(item, &format!("{path}[{i}]"), errors);
            }
        }
        Kind::Map(entries) => {
            for (key, value) in entries {
                check_regex_values(value, &format!("{path}.{}", key.name), errors);
            }
        }
        _ => {}
    }
}

/// The regex crate's message is several lines (pattern, caret, reason); keep the reason.
fn regex_reason(err: &regex::Error) -> String {
    let text = err.to_string();
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or_else(|| text.lines().last().unwrap_or("invalid"))
        .trim()
        .to_string()
}

fn check_json_schema(node: &Node, path: &str, errors: &mut Vec<Finding>) {
    let schema = node.to_json();
    // Only the meta-schema check: compiling would try to resolve `$ref`s.
    if let Err(err) = jsonschema::meta::validate(&schema) {
        let at = err.instance_path().to_string();
        let place = if at.is_empty() {
            String::new()
        } else {
            format!(" at `{at}`")
        };
        errors.push(Finding {
            pos: node.pos,
            message: format!("{path}: not a valid JSON Schema{place}: {err}"),
            hint: Some("write a JSON Schema document (draft 2020-12), e.g. `{type: object, required: [answer]}`".into()),
        });
    }
}

fn check_rubric(rubric: &Node, path: &str, errors: &mut Vec<Finding>) {
    if rubric.as_map().is_none() {
        return;
    }
    let rule = rubric.get("rule");
    let template = rubric.get("template");
    let blank = |n: Option<&Node>| match n.map(|n| &n.kind) {
        None | Some(Kind::Null) => true,
        Some(Kind::Str(s)) => s.trim().is_empty(),
        Some(_) => false,
    };
    if blank(rule) && blank(template) {
        errors.push(Finding {
            pos: rubric.pos,
            message: format!("{path}: a judge rubric needs a `rule` or a `template`"),
            hint: Some(format!(
                "write `rule: \"Politely declines\"`, or use a built-in template: {}",
                RUBRIC_TEMPLATES.join(", ")
            )),
        });
    }
    if let Some(node) = template
        && let Kind::Str(name) = &node.kind
        && !name.trim().is_empty()
        && !RUBRIC_TEMPLATES.contains(&name.as_str())
    {
        let hint = match suggest(name, RUBRIC_TEMPLATES.iter().copied()) {
            Some(s) => format!(
                "did you mean `{s}`? built-in templates: {}",
                RUBRIC_TEMPLATES.join(", ")
            ),
            None => format!("built-in templates: {}", RUBRIC_TEMPLATES.join(", ")),
        };
        errors.push(Finding {
            pos: node.pos,
            message: format!("{path}.template: unknown template `{name}`"),
            hint: Some(hint),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::yaml::parse;

    fn messages(yaml: &str) -> Vec<String> {
        let node = parse(yaml).unwrap();
        let mut errors = Vec::new();
        check_query(&node, "q", &mut errors);
        errors.into_iter().map(|f| f.message).collect()
    }

    #[test]
    fn regexes_schemas_and_rubrics_are_checked() {
        let got = messages(
            "query: ' '\ncorrectness:\n  regex_match: '(unclosed'\n  json_schema: {type: objekt}\n  llm_judge: [{threshold: 0.5}, {template: polite_refusl}]\n",
        );
        assert_eq!(got.len(), 5, "{got:?}");
        assert!(got[0].contains("must not be blank"));
        assert!(
            got[1].starts_with("q.correctness.regex_match: invalid regex `(unclosed`"),
            "{}",
            got[1]
        );
        assert!(
            got[2].starts_with("q.correctness.json_schema: not a valid JSON Schema"),
            "{}",
            got[2]
        );
        assert!(got[3].contains("needs a `rule` or a `template`"));
        assert!(got[4].contains("unknown template `polite_refusl`"));
    }

    #[test]
    fn regex_mode_tool_args_are_regexes() {
        let got = messages(
            "query: q\npath:\n  expected_tool_args:\n    - {tool: search, mode: regex, args: {q: '[a-'}}\n    - {tool: search, args: {q: '[a-'}}\n",
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].starts_with("q.path.expected_tool_args[0].args.q: invalid regex"));
    }

    #[test]
    fn safe_names() {
        assert!(is_safe_name("weather-oos_2.v1"));
        assert!(!is_safe_name("../etc"));
        assert!(!is_safe_name("a/b"));
        assert!(!is_safe_name(""));
        assert!(!is_safe_name("-x"));
    }
}
