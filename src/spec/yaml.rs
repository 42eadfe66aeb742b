//! YAML text → a plain tree of nodes that remember their line and column.
//!
//! The spec is first read into this untyped tree (not straight into the model)
//! so that validation can report *every* problem at its exact place, and so that
//! defaults can be merged on what the user wrote rather than on filled-in values.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Spanned, budget::Budget};

/// A 1-based line and column in one YAML file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// One YAML node and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// Where the node starts.
    pub pos: Pos,
    /// Its value.
    pub kind: Kind,
}

/// A mapping key and where it is written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    /// The key's text.
    pub name: String,
    /// Where the key starts.
    pub pos: Pos,
}

/// The value of a node, with YAML's core-schema scalar types resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// `null`, `~` or nothing.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer too large for `i64`.
    UInt(u64),
    /// A float.
    Float(f64),
    /// Any other scalar.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in file order.
    Map(Vec<(Key, Node)>),
}

impl Kind {
    /// The name used in "expected X, found Y" messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool(_) => "a boolean",
            Kind::Int(_) | Kind::UInt(_) => "an integer",
            Kind::Float(_) => "a number",
            Kind::Str(_) => "a string",
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// The entries of a mapping node, if it is one.
    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.kind {
            Kind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The value under `name` in a mapping node.
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == name)
            .map(|(_, v)| v)
    }

    /// The key `name` of a mapping node (for its position).
    pub fn key(&self, name: &str) -> Option<&Key> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == name)
            .map(|(k, _)| k)
    }

    /// The node as JSON, as written (no defaults filled in).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Int(i) => Value::from(*i),
            Kind::UInt(u) => Value::from(*u),
            // Non-finite floats have no JSON form; the shape check reports them first.
            Kind::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Kind::Str(s) => Value::String(s.clone()),
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// A YAML syntax or structure error, at its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// Where, when the parser knows.
    pub pos: Option<Pos>,
    /// The parser's message, one line.
    pub message: String,
}

/// Parses one YAML document into a node tree.
pub(crate) fn parse(text: &str) -> Result<Node, SyntaxError> {
    // Large suites (10,000 queries) exceed the library's default node budget; the
    // limits stay finite so hostile input (alias bombs, deep nesting) still stops.
    let mut budget = Budget::default();
    budget.max_events = 20_000_000;
    budget.max_nodes = 10_000_000;
    budget.max_depth = 128;
    let options = serde_saphyr::options! {
        budget: Some(budget),
        with_snippet: false,
    };
    match serde_saphyr::from_str_with_options::<Option<Node>>(text, options) {
        Ok(Some(node)) => Ok(node),
        // An empty file is an empty document: a null at the top.
        Ok(None) => Ok(Node {
            pos: Pos { line: 1, column: 1 },
            kind: Kind::Null,
        }),
        Err(err) => Err(syntax_error(&err)),
    }
}

fn syntax_error(err: &serde_saphyr::Error) -> SyntaxError {
    let pos = err.location().and_then(|loc| {
        (loc.line() > 0).then(|| Pos {
            line: usize::try_from(loc.line()).unwrap_or(usize::MAX),
            column: usize::try_from(loc.column()).unwrap_or(usize::MAX).max(1),
        })
    });
    let options = serde_saphyr::render_options! {
        snippets: serde_saphyr::SnippetMode::Off,
    };
    let rendered = err.without_snippet().render_with_options(options);
    // The plain rendering ends with " at line L, column C"; we print the place first instead.
    let first = rendered.lines().next().unwrap_or("invalid YAML").trim();
    let message = match first.rfind(" at line ") {
        Some(i) if pos.is_some() => first[..i].to_string(),
        _ => first.to_string(),
    };
    SyntaxError { pos, message }
}

fn pos_of(loc: &serde_saphyr::Location) -> Pos {
    Pos {
        line: usize::try_from(loc.line()).unwrap_or(usize::MAX),
        column: usize::try_from(loc.column()).unwrap_or(usize::MAX),
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Kind>::deserialize(deserializer)?;
        Ok(Node {
            pos: pos_of(&spanned.referenced),
            kind: spanned.value,
        })
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        Kind::deserialize(d)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Kind, E> {
        Ok(Kind::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Kind, E> {
        Ok(Kind::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Kind, E> {
        Ok(i64::try_from(v).map_or(Kind::UInt(v), Kind::Int))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Kind, E> {
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(i), _) => Ok(Kind::Int(i)),
            (_, Ok(u)) => Ok(Kind::UInt(u)),
            _ => Ok(Kind::Float(v as f64)),
        }
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Kind, E> {
        Ok(u64::try_from(v).map_or(Kind::Float(v as f64), |u| {
            i64::try_from(u).map_or(Kind::UInt(u), Kind::Int)
        }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Kind, E> {
        Ok(Kind::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Kind, E> {
        Ok(Kind::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Kind, E> {
        Ok(Kind::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Kind, E> {
        Ok(Kind::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Kind::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1024));
        while let Some(key) = map.next_key::<Spanned<KeyText>>()? {
            let value = map.next_value::<Node>()?;
            entries.push((
                Key {
                    name: key.value.0,
                    pos: pos_of(&key.referenced),
                },
                value,
            ));
        }
        Ok(Kind::Map(entries))
    }
}

/// A mapping key as text: scalar keys of any type (`1: x`, `true: y`) become their text.
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Kind::deserialize(deserializer)? {
            Kind::Str(s) => Ok(KeyText(s)),
            Kind::Int(i) => Ok(KeyText(i.to_string())),
            Kind::UInt(u) => Ok(KeyText(u.to_string())),
            Kind::Float(f) => Ok(KeyText(f.to_string())),
            Kind::Bool(b) => Ok(KeyText(b.to_string())),
            Kind::Null => Ok(KeyText("null".to_string())),
            Kind::Seq(_) | Kind::Map(_) => Err(de::Error::custom(
                "a mapping key must be a plain scalar, not a list or mapping",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_remember_lines_and_columns() {
        let node = parse("agent: a\nqueries:\n  - query: hi\n    tags: [x]\n").unwrap();
        let queries = node.get("queries").unwrap();
        assert_eq!(queries.pos.line, 3);
        let Kind::Seq(items) = &queries.kind else {
            panic!("not a list")
        };
        assert_eq!(items[0].pos, Pos { line: 3, column: 5 });
        assert_eq!(
            items[0].key("tags").unwrap().pos,
            Pos { line: 4, column: 5 }
        );
        assert_eq!(node.key("queries").unwrap().pos, Pos { line: 2, column: 1 });
    }

    #[test]
    fn scalars_resolve_to_core_types() {
        let node = parse("a: 1\nb: -2\nc: 1.5\nd: true\ne: ~\nf: '1'\ng: x\n").unwrap();
        let json = node.to_json();
        assert_eq!(
            json,
            serde_json::json!({"a": 1, "b": -2, "c": 1.5, "d": true, "e": null, "f": "1", "g": "x"})
        );
    }

    #[test]
    fn syntax_errors_have_a_place() {
        let err = parse("agent: a\nqueries: [\n").unwrap_err();
        assert!(err.pos.is_some(), "{err:?}");
        let err = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(err.pos.map(|p| p.line), Some(2), "{err:?}");
    }

    #[test]
    fn empty_text_is_null() {
        assert_eq!(parse("").unwrap().kind, Kind::Null);
        assert_eq!(parse("# only a comment\n").unwrap().kind, Kind::Null);
    }
}
