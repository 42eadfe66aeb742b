//! Reading a cassette for its trace alone. A request carries the whole
//! conversation so far and every tool definition, and derivation reads a few
//! fields of it: building all of it as `serde_json::Value`, only to drop it,
//! was most of the cost of `replay --cassettes-only`. Each provider's rule
//! below names what its `parse_request` reads; the rest of the body is
//! skipped without being built. `tests` checks that the traces are identical.

use std::fmt;
use std::path::Path;

use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::Result;
use crate::vcr::cassette::Cassette;

/// Reads a cassette keeping of each request body only what [`super::derive`]
/// reads; the trace is the same as from [`Cassette::read`]. Not for writing back.
pub fn read_for_trace(path: &Path) -> Result<Cassette> {
    Cassette::read_lean::<TraceRequestBody>(path)
}

/// A JSON request body reduced to [`REQUEST`] while it is parsed.
pub(crate) struct TraceRequestBody(Value);

impl<'de> serde::Deserialize<'de> for TraceRequestBody {
    fn deserialize<D: Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        Prune(&REQUEST).deserialize(de).map(TraceRequestBody)
    }
}

impl From<TraceRequestBody> for Value {
    fn from(body: TraceRequestBody) -> Value {
        body.0
    }
}

/// What to keep of a JSON value. A value of another shape than the rule
/// expects is kept whole, so an odd body reads exactly as before.
#[derive(Debug)]
enum Keep {
    /// The whole value.
    All,
    /// Of an object, these keys, each by its own rule.
    Fields(&'static [(&'static str, Keep)]),
    /// Of an array, every item by this rule.
    Each(&'static Keep),
}

const NAME: Keep = Keep::Fields(&[("name", Keep::All)]);

/// Everything a provider's `parse_request` reads: the model, the names of the
/// tools offered, and the tool results in the conversation. One rule for all
/// providers, because the URL that names the provider sorts after the body;
/// their keys barely overlap, and where they do the rule keeps the larger part.
const REQUEST: Keep = Keep::Fields(&[
    // Gemini: `contents[].parts[]` with calls and responses.
    (
        "contents",
        Keep::Each(&Keep::Fields(&[(
            "parts",
            Keep::Each(&Keep::Fields(&[
                ("functionCall", Keep::All),
                ("functionResponse", Keep::All),
                ("function_call", Keep::All),
                ("function_response", Keep::All),
            ])),
        )])),
    ),
    // OpenAI Chat, legacy functions.
    ("functions", Keep::Each(&NAME)),
    // OpenAI Responses: `function_call_output` items.
    (
        "input",
        Keep::Each(&Keep::Fields(&[
            ("call_id", Keep::All),
            ("output", Keep::All),
            ("type", Keep::All),
        ])),
    ),
    // OpenAI Chat (`role: tool` messages, whose `content` is the result) and
    // Anthropic (`tool_result` blocks inside `content`).
    (
        "messages",
        Keep::Each(&Keep::Fields(&[
            ("content", Keep::All),
            ("role", Keep::All),
            ("tool_call_id", Keep::All),
        ])),
    ),
    ("model", Keep::All),
    // Chat `function.name`, Anthropic and Responses `name`, Responses built-in
    // `type`, Gemini `functionDeclarations[].name`.
    (
        "tools",
        Keep::Each(&Keep::Fields(&[
            ("function", NAME),
            ("functionDeclarations", Keep::Each(&NAME)),
            ("function_declarations", Keep::Each(&NAME)),
            ("name", Keep::All),
            ("type", Keep::All),
        ])),
    ),
]);

/// Deserializes a JSON value as the rule keeps it.
struct Prune(&'static Keep);

impl<'de> DeserializeSeed<'de> for Prune {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> std::result::Result<Value, D::Error> {
        match self.0 {
            Keep::All => serde::Deserialize::deserialize(de),
            Keep::Fields(_) | Keep::Each(_) => de.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for Prune {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        // As `Value` itself: a float JSON can hold, else null.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let Keep::Each(item) = self.0 else {
            return Value::deserialize(de::value::SeqAccessDeserializer::new(seq));
        };
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element_seed(Prune(item))? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let Keep::Fields(fields) = self.0 else {
            return Value::deserialize(de::value::MapAccessDeserializer::new(map));
        };
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(FieldOf(fields))? {
            match key {
                Some(i) => {
                    let (name, rule) = &fields[i];
                    out.insert((*name).to_string(), map.next_value_seed(Prune(rule))?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// Reads an object key as the index of the rule's field it names, without
/// allocating it; `None` for a key the rule skips.
struct FieldOf(&'static [(&'static str, Keep)]);

impl<'de> DeserializeSeed<'de> for FieldOf {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(
        self,
        de: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FieldOf {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
        Ok(self.0.iter().position(|(name, _)| *name == v))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn prune(rule: &'static Keep, value: &Value) -> Value {
        let text = value.to_string();
        let mut de = serde_json::Deserializer::from_str(&text);
        Prune(rule).deserialize(&mut de).expect("valid JSON prunes")
    }

    #[test]
    fn a_chat_request_keeps_the_model_tool_names_and_messages_fields() {
        let body = json!({
            "model": "gpt-4o",
            "temperature": 0.2,
            "tools": [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}],
            "messages": [
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]},
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]}
            ]
        });
        assert_eq!(
            prune(&REQUEST, &body),
            json!({
                "model": "gpt-4o",
                "tools": [{"type": "function", "function": {"name": "search"}}],
                "messages": [
                    {"role": "assistant", "content": null},
                    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]}
                ]
            })
        );
    }

    #[test]
    fn a_value_of_another_shape_than_the_rule_expects_is_kept_whole() {
        for body in [
            json!({"model": "m", "messages": "not a list"}),
            json!({"model": "m", "contents": [{"parts": "plain text"}]}),
            json!([{"model": "m", "temperature": 1}]),
            json!("text"),
            json!({"tools": {"name": {"deep": [1, 2.5, -3, true, null]}}}),
        ] {
            assert_eq!(prune(&REQUEST, &body), body, "{body}");
        }
    }

    #[test]
    fn bodies_that_are_not_json_read_as_in_the_full_read() {
        let exchange = |seq: u64, body: &str| {
            format!(
                r#"{{"match_key":"sha256:00","request":{{{body}"method":"POST","url":"https://api.openai.com/v1/chat/completions"}},"response":{{"status":200}},"seq":{seq},"timing":{{"start_ms":0,"total_ms":1,"ttfb_ms":1}}}}"#
            )
        };
        let text = [
            r#"{"_meta":{"case_id":"c","format":1,"record_mode":"once","recorded_at":"2026-01-01T00:00:00Z","tool_version":"0"}}"#.to_string(),
            exchange(0, ""),
            exchange(1, r#""body":{"text":"not json"},"#),
            exchange(2, r#""body":{"base64":"aGk="},"#),
            exchange(3, r#""body":{"text":"{\"model\":\"m\"}"},"#),
        ]
        .join("\n");
        let path = Path::new("c.jsonl");
        let full = Cassette::parse(&text, path).expect("full read");
        assert_eq!(full.exchanges.len(), 4);
        assert_eq!(
            Cassette::parse_lean::<TraceRequestBody>(&text, path).expect("lean read"),
            full
        );
    }

    /// Every committed cassette: the lean read derives the same trace as the
    /// full one, and is refused by the same message when the full one is.
    #[test]
    fn the_lean_read_derives_the_trace_of_the_full_read_for_every_committed_cassette() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in [
            "tests/fixtures/cassettes",
            "cassettes/dev-agent",
            "cassettes/rag-agent",
            "cassettes/support-router",
        ] {
            for entry in std::fs::read_dir(root.join(dir)).expect("cassette folder") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|e| e == "jsonl") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() >= 50, "found only {} cassettes", files.len());
        let opts = super::super::DeriveOptions::default();
        let mut tool_results = 0;
        for path in &files {
            let full = Cassette::read(path).map(|c| super::super::derive(&c, &opts));
            let lean = read_for_trace(path).map(|c| super::super::derive(&c, &opts));
            match (full, lean) {
                (Ok(full), Ok(lean)) => {
                    tool_results += full
                        .tool_calls
                        .iter()
                        .filter(|c| c.result.is_some())
                        .count();
                    assert_eq!(full, lean, "{}", path.display());
                }
                (Err(full), Err(lean)) => {
                    assert_eq!(full.to_string(), lean.to_string(), "{}", path.display())
                }
                (full, lean) => panic!(
                    "{}: full read {:?}, lean read {:?}",
                    path.display(),
                    full.map(|_| ()),
                    lean.map(|_| ())
                ),
            }
        }
        // The comparison means something only if the results were found at all.
        assert!(tool_results >= 40, "only {tool_results} tool results");
    }
}
