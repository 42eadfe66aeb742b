//! Structural validation of a node tree against the spec's JSON Schema.
//!
//! The schema generated from the model (the same one `agentci schema` prints and
//! editors use) is the single description of the spec's shape: keys, types,
//! enums and ranges. Walking it here, instead of stopping at serde's first
//! error, lets `validate` report every problem with its line, a "did you mean"
//! for unknown keys, and the field's own doc comment as the hint.
//! Only the keywords schemars emits for this model are understood.

use serde_json::{Map, Value};

use super::yaml::{Kind, Node, Pos};

/// One structural problem at a place in the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

/// The spec schema, ready to check nodes against.
pub(crate) struct Shape {
    root: Value,
}

impl Shape {
    /// The schema of [`super::Spec`], generated from the model.
    pub fn for_spec() -> Shape {
        Shape {
            root: schema_value(),
        }
    }

    /// Checks `node` against the definition `name` (a key of `$defs`, or `""` for
    /// the root), skipping the values of `skip` keys at the top. Returns the node
    /// as JSON, with scalars coerced where the schema wants a string.
    pub fn check_def(
        &self,
        name: &str,
        node: &Node,
        path: &str,
        skip: &[&str],
        out: &mut Vec<Finding>,
    ) -> Value {
        let schema = if name.is_empty() {
            &self.root
        } else {
            self.root
                .get("$defs")
                .and_then(|d| d.get(name))
                .unwrap_or(&Value::Bool(true))
        };
        self.check(node, schema, path, skip, out)
    }

    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        let mut schema = schema;
        // A `$ref` chain in schemars output is one step; bounded anyway.
        for _ in 0..8 {
            match schema.get("$ref").and_then(Value::as_str) {
                Some(reference) => {
                    let name = reference.trim_start_matches("#/$defs/");
                    match self.root.get("$defs").and_then(|d| d.get(name)) {
                        Some(target) => schema = target,
                        None => return &Value::Bool(true),
                    }
                }
                None => break,
            }
        }
        schema
    }

    fn check(
        &self,
        node: &Node,
        schema: &Value,
        path: &str,
        skip: &[&str],
        out: &mut Vec<Finding>,
    ) -> Value {
        // The field's own description (next to a `$ref`) is the best hint.
        let description = schema.get("description").and_then(Value::as_str);
        let target = self.resolve(schema);
        let description = description.or_else(|| target.get("description").and_then(Value::as_str));
        let hint = Hint { path, description };

        if let Some(alternatives) = target
            .get("anyOf")
            .or_else(|| target.get("oneOf"))
            .and_then(Value::as_array)
        {
            return self.check_alternatives(node, alternatives, path, hint, out);
        }
        let Some(types) = types_of(target) else {
            // No `type`: anything goes (free-form JSON such as `json_schema`).
            return node.to_json();
        };
        match (&node.kind, types.as_slice()) {
            (Kind::Null, t) if t.contains(&"null") => Value::Null,
            (Kind::Map(entries), t) if t.contains(&"object") => {
                self.check_object(node.pos, entries, target, path, skip, out)
            }
            (Kind::Seq(items), t) if t.contains(&"array") => {
                self.check_array(node.pos, items, target, path, hint, out)
            }
            (Kind::Str(s), t) if t.contains(&"string") => {
                if let Some(expected) = target.get("const").and_then(Value::as_str)
                    && expected != s
                {
                    out.push(Finding {
                        pos: node.pos,
                        message: format!("{path}: expected `{expected}`, found `{s}`"),
                        hint: hint.text(),
                    });
                }
                Value::String(s.clone())
            }
            // A plain scalar where text is expected is taken as its text (`exact_match: 42`).
            (Kind::Int(_) | Kind::UInt(_) | Kind::Float(_) | Kind::Bool(_), t)
                if t.contains(&"string") && !t.contains(&"integer") && !t.contains(&"number") =>
            {
                Value::String(scalar_text(&node.kind))
            }
            (Kind::Bool(b), t) if t.contains(&"boolean") => Value::Bool(*b),
            (Kind::Int(_) | Kind::UInt(_), t)
                if t.contains(&"integer") || t.contains(&"number") =>
            {
                self.check_number(node, target, path, hint, out)
            }
            (Kind::Float(_), t) if t.contains(&"number") => {
                self.check_number(node, target, path, hint, out)
            }
            (Kind::Float(f), t) if t.contains(&"integer") => {
                out.push(Finding {
                    pos: node.pos,
                    message: format!(
                        "{path}: expected {}, found {f}",
                        describe_number(target, true)
                    ),
                    hint: hint.text(),
                });
                Value::Null
            }
            (kind, t) => {
                let expected = if t.contains(&"integer") || t.contains(&"number") {
                    describe_number(target, t.contains(&"integer"))
                } else {
                    describe_types(t)
                };
                out.push(Finding {
                    pos: node.pos,
                    message: format!("{path}: expected {expected}, found {}", kind.describe()),
                    hint: hint.text(),
                });
                Value::Null
            }
        }
    }

    fn check_alternatives(
        &self,
        node: &Node,
        alternatives: &[Value],
        path: &str,
        hint: Hint<'_>,
        out: &mut Vec<Finding>,
    ) -> Value {
        // `Option<T>`: null, or T with T's own messages.
        let non_null: Vec<&Value> = alternatives
            .iter()
            .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if non_null.len() < alternatives.len() {
            if node.kind == Kind::Null {
                return Value::Null;
            }
            if let [only] = non_null.as_slice() {
                return self.check(node, only, path, &[], out);
            }
        }
        // A string enum: one `const` per variant.
        let consts: Vec<&str> = non_null
            .iter()
            .filter_map(|a| self.resolve(a).get("const").and_then(Value::as_str))
            .collect();
        if consts.len() == non_null.len() && !consts.is_empty() {
            let text = match &node.kind {
                Kind::Str(s) => s.clone(),
                Kind::Seq(_) | Kind::Map(_) | Kind::Null => String::new(),
                other => scalar_text(other),
            };
            if consts.contains(&text.as_str()) {
                return Value::String(text);
            }
            let shown = if text.is_empty() {
                node.kind.describe().to_string()
            } else {
                format!("`{text}`")
            };
            let suggestion = suggest(&text, consts.iter().copied())
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            out.push(Finding {
                pos: node.pos,
                message: format!("{path}: {shown} is not one of {}", consts.join(", ")),
                hint: Some(format!(
                    "{suggestion}{}",
                    hint.text().unwrap_or_else(|| format!(
                        "{}: one of {}",
                        leaf(path),
                        consts.join(", ")
                    ))
                )),
            });
            return Value::Null;
        }
        // Anything else (the runner command): the first alternative that fits.
        let mut first_findings = None;
        for alternative in &non_null {
            let mut scratch = Vec::new();
            let value = self.check(node, alternative, path, &[], &mut scratch);
            if scratch.is_empty() {
                return value;
            }
            // Keep the findings of the alternative whose type matched, they say more.
            if first_findings.is_none() && type_matches(node, self.resolve(alternative)) {
                first_findings = Some(scratch);
            }
        }
        if let Some(findings) = first_findings {
            out.extend(findings);
        } else {
            let names: Vec<&str> = non_null
                .iter()
                .filter_map(|a| types_of(self.resolve(a)))
                .flatten()
                .collect();
            out.push(Finding {
                pos: node.pos,
                message: format!(
                    "{path}: expected {}, found {}",
                    describe_types(&names),
                    node.kind.describe()
                ),
                hint: hint.text(),
            });
        }
        Value::Null
    }

    fn check_object(
        &self,
        pos: Pos,
        entries: &[(super::yaml::Key, Node)],
        schema: &Value,
        path: &str,
        skip: &[&str],
        out: &mut Vec<Finding>,
    ) -> Value {
        let empty = Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let additional = schema.get("additionalProperties");
        let mut result = Map::new();
        for (key, value) in entries {
            let child_path = join(path, &key.name);
            if skip.contains(&key.name.as_str()) {
                result.insert(key.name.clone(), Value::Null);
                continue;
            }
            let child_schema = match (properties.get(&key.name), additional) {
                (Some(s), _) => s,
                (None, Some(Value::Bool(false))) => {
                    let names = properties.keys().map(String::as_str);
                    let hint = match suggest(&key.name, names) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!(
                            "known keys here: {}",
                            properties.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    };
                    out.push(Finding {
                        pos: key.pos,
                        message: format!("{child_path}: unknown key `{}`", key.name),
                        hint: Some(hint),
                    });
                    continue;
                }
                (None, Some(s)) => s,
                (None, None) => &Value::Bool(true),
            };
            let v = self.check(value, child_schema, &child_path, &[], out);
            result.insert(key.name.clone(), v);
        }
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !entries.iter().any(|(k, _)| k.name == name) {
                    let description = properties
                        .get(name)
                        .and_then(|p| p.get("description"))
                        .and_then(Value::as_str);
                    out.push(Finding {
                        pos,
                        message: format!("{}: missing required key `{name}`", display(path)),
                        hint: description.map(|d| format!("{name}: {}", one_line(d))),
                    });
                }
            }
        }
        Value::Object(result)
    }

    fn check_array(
        &self,
        pos: Pos,
        items: &[Node],
        schema: &Value,
        path: &str,
        hint: Hint<'_>,
        out: &mut Vec<Finding>,
    ) -> Value {
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < min
        {
            out.push(Finding {
                pos,
                message: format!(
                    "{path}: needs at least {min} item(s), found {}",
                    items.len()
                ),
                hint: hint.text(),
            });
        }
        let item_schema = schema.get("items").unwrap_or(&Value::Bool(true));
        let values = items
            .iter()
            .enumerate()
            .map(|(i, item)| self.check(item, item_schema, &format!("{path}[{i}]"), &[], out))
            .collect();
        Value::Array(values)
    }

    fn check_number(
        &self,
        node: &Node,
        schema: &Value,
        path: &str,
        hint: Hint<'_>,
        out: &mut Vec<Finding>,
    ) -> Value {
        let (value, as_f64) = match node.kind {
            Kind::Int(i) => (Value::from(i), i as f64),
            Kind::UInt(u) => (Value::from(u), u as f64),
            Kind::Float(f) => match serde_json::Number::from_f64(f) {
                Some(n) => (Value::Number(n), f),
                None => {
                    out.push(Finding {
                        pos: node.pos,
                        message: format!("{path}: expected a finite number, found {f}"),
                        hint: hint.text(),
                    });
                    return Value::Null;
                }
            },
            _ => return Value::Null,
        };
        let (min, max, exclusive_min) = bounds(schema);
        let below = min.is_some_and(|m| as_f64 < m) || exclusive_min.is_some_and(|m| as_f64 <= m);
        let above = max.is_some_and(|m| as_f64 > m);
        if below || above {
            let integer = types_of(schema).is_some_and(|t| t.contains(&"integer"));
            out.push(Finding {
                pos: node.pos,
                message: format!(
                    "{path}: expected {}, found {}",
                    describe_number(schema, integer),
                    scalar_text(&node.kind)
                ),
                hint: hint.text(),
            });
            return Value::Null;
        }
        value
    }
}

/// The JSON Schema of the spec format, as generated from the model.
pub(crate) fn schema_value() -> Value {
    serde_json::to_value(schemars::schema_for!(super::Spec)).unwrap_or(Value::Bool(true))
}

fn types_of(schema: &Value) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(s) => Some(vec![s.as_str()]),
        Value::Array(list) => Some(list.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn type_matches(node: &Node, schema: &Value) -> bool {
    let Some(types) = types_of(schema) else {
        return true;
    };
    let name = match node.kind {
        Kind::Null => "null",
        Kind::Bool(_) => "boolean",
        Kind::Int(_) | Kind::UInt(_) => "integer",
        Kind::Float(_) => "number",
        Kind::Str(_) => "string",
        Kind::Seq(_) => "array",
        Kind::Map(_) => "object",
    };
    types.contains(&name) || (name == "integer" && types.contains(&"number"))
}

/// Numeric bounds from `minimum`/`maximum`/`exclusiveMinimum` and the integer `format`.
fn bounds(schema: &Value) -> (Option<f64>, Option<f64>, Option<f64>) {
    let min = schema.get("minimum").and_then(Value::as_f64);
    let format_max = match schema.get("format").and_then(Value::as_str) {
        Some("uint8") => Some(f64::from(u8::MAX)),
        Some("uint16") => Some(f64::from(u16::MAX)),
        Some("uint32") => Some(f64::from(u32::MAX)),
        _ => None,
    };
    let max = match (schema.get("maximum").and_then(Value::as_f64), format_max) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let exclusive_min = schema.get("exclusiveMinimum").and_then(Value::as_f64);
    (min, max, exclusive_min)
}

fn describe_number(schema: &Value, integer: bool) -> String {
    let kind = if integer { "an integer" } else { "a number" };
    let show = |v: f64| {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            format!("{}", v as i64)
        } else {
            v.to_string()
        }
    };
    match bounds(schema) {
        (Some(lo), Some(hi), _) if hi < 1e15 => format!("{kind} in [{}, {}]", show(lo), show(hi)),
        (Some(lo), _, _) => format!("{kind} >= {}", show(lo)),
        (None, _, Some(lo)) => format!("{kind} > {}", show(lo)),
        (None, Some(hi), None) => format!("{kind} <= {}", show(hi)),
        (None, None, None) => kind.to_string(),
    }
}

fn describe_types(types: &[&str]) -> String {
    let names: Vec<&str> = types
        .iter()
        .filter(|t| **t != "null")
        .map(|t| match *t {
            "object" => "a mapping",
            "array" => "a list",
            "string" => "a string",
            "integer" => "an integer",
            "number" => "a number",
            "boolean" => "a boolean (true or false)",
            other => other,
        })
        .collect();
    match names.as_slice() {
        [] => "null".to_string(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn scalar_text(kind: &Kind) -> String {
    match kind {
        Kind::Null => "null".to_string(),
        Kind::Bool(b) => b.to_string(),
        Kind::Int(i) => i.to_string(),
        Kind::UInt(u) => u.to_string(),
        Kind::Float(f) => f.to_string(),
        Kind::Str(s) => s.clone(),
        Kind::Seq(_) | Kind::Map(_) => String::new(),
    }
}

/// The closest candidate to `given`, when it is close enough to be a likely typo.
pub(crate) fn suggest<'a>(
    given: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::jaro_winkler(given, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// A finding's hint: the field's doc comment, formatted only when a finding
/// needs it (a 10,000-query spec has hundreds of thousands of nodes, almost all fine).
#[derive(Debug, Clone, Copy)]
struct Hint<'a> {
    path: &'a str,
    description: Option<&'a str>,
}

impl Hint<'_> {
    fn text(self) -> Option<String> {
        self.description
            .map(|d| format!("{}: {}", leaf(self.path), one_line(d)))
    }
}

/// Doc comments wrap; a hint is one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn leaf(path: &str) -> &str {
    let last = path.rsplit('.').next().unwrap_or(path);
    if last.is_empty() { "value" } else { last }
}

fn display(path: &str) -> &str {
    if path.is_empty() { "spec" } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::yaml::parse;

    fn findings(def: &str, yaml: &str) -> Vec<String> {
        let shape = Shape::for_spec();
        let node = parse(yaml).unwrap();
        let mut out = Vec::new();
        shape.check_def(def, &node, "q", &[], &mut out);
        out.iter()
            .map(|f| format!("{}:{}: {}", f.pos.line, f.pos.column, f.message))
            .collect()
    }

    #[test]
    fn a_valid_query_has_no_findings() {
        let yaml = "query: hi\ntags: [a]\npath: {max_tool_calls: 2, match_mode: strict}\n";
        assert_eq!(findings("Query", yaml), Vec::<String>::new());
    }

    #[test]
    fn unknown_keys_types_enums_and_ranges_are_all_reported() {
        let yaml = "quer: hi\npath:\n  match_mode: strikt\n  max_tool_calls: -1\n  min_tool_recall: 1.5\ncost: {max_llm_calls: many}\n";
        let got = findings("Query", yaml);
        assert_eq!(
            got,
            vec![
                "1:1: q.quer: unknown key `quer`",
                "3:15: q.path.match_mode: `strikt` is not one of strict, unordered, subset, superset",
                "4:19: q.path.max_tool_calls: expected an integer >= 0, found -1",
                "5:20: q.path.min_tool_recall: expected a number in [0, 1], found 1.5",
                "6:23: q.cost.max_llm_calls: expected an integer >= 0, found a string",
                "1:1: q: missing required key `query`",
            ]
        );
    }

    #[test]
    fn plain_scalars_are_accepted_as_text() {
        let shape = Shape::for_spec();
        let node = parse("query: 42\ncorrectness: {exact_match: true}\n").unwrap();
        let mut out = Vec::new();
        let value = shape.check_def("Query", &node, "q", &[], &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(value["query"], "42");
        assert_eq!(value["correctness"]["exact_match"], "true");
    }

    #[test]
    fn suggestions_need_to_be_close() {
        let keys = ["query", "tags", "path"];
        assert_eq!(suggest("quer", keys.iter().copied()), Some("query"));
        assert_eq!(suggest("zzzzz", keys.iter().copied()), None);
    }
}
