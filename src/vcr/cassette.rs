//! Cassette format version 1 (`docs/cassettes.md`): one JSONL file per case.
//!
//! Line 1 is `{"_meta":{…}}`, then one line per exchange ordered by request
//! start, then `{"_end":{…}}`. Every line is minified JSON with sorted keys.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Location, Result};

/// The cassette format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// A whole cassette in memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    /// The `_meta` line.
    pub meta: CassetteMeta,
    /// The exchanges, ordered by `seq`.
    pub exchanges: Vec<Exchange>,
    /// The `_end` line; absent while recording or when the agent never finished.
    pub end: Option<CassetteEnd>,
}

/// The first line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CassetteMeta {
    /// Always [`FORMAT_VERSION`].
    pub format: u32,
    /// The agentci version that wrote the file.
    pub tool_version: String,
    /// The case id (file stem for cassettes written by `agentci proxy`).
    pub case_id: String,
    /// The agent name from the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The query given to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// RFC 3339 UTC time the recording started.
    pub recorded_at: String,
    /// `sha256:<hex>` of the spec the case was recorded under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
    /// The record mode in force: `once`, `new_episodes`, `all` or `none`.
    pub record_mode: String,
    /// Trial number (1-based) when `--trials` recorded several cassettes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
}

/// One request/response pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// Position by request start, from 0.
    pub seq: u64,
    /// The request as sent (secrets removed).
    pub request: RecordedRequest,
    /// The response as received (volatile headers dropped).
    pub response: RecordedResponse,
    /// When it happened, relative to the start of the recording.
    pub timing: Timing,
    /// `sha256:<hex>` over the canonical request (see `vcr::matching`).
    pub match_key: String,
}

/// A recorded request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// HTTP method, upper case.
    pub method: String,
    /// Absolute upstream URL (`https://api.openai.com/v1/chat/completions`), secrets redacted.
    pub url: String,
    /// Allow-listed headers, names lower case.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The decoded body; absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
}

/// A recorded response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// HTTP status code (0 when no response arrived at all; see `error`).
    pub status: u16,
    /// Allow-listed headers, names lower case; no `content-encoding` (bodies are stored decoded).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The decoded body of a non-streaming response; absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
    /// The events of a `text/event-stream` response, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<SseEvent>>,
    /// The upstream cut the body short (reset, timeout) after the status line.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// What went wrong upstream (connection refused, TLS error, timeout), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A body, tagged by how it is stored: `{"json":…}`, `{"text":"…"}` or `{"base64":"…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Body {
    /// A JSON document, stored as itself (keys sorted).
    Json(Value),
    /// UTF-8 text that is not JSON.
    Text(String),
    /// Anything else, base64 (standard alphabet, padded).
    Base64(String),
}

/// An exchange line whose JSON request body is read as `B`, for
/// [`Cassette::parse_lean`]. Mirrors [`Exchange`] field for field, so it
/// accepts exactly the lines that [`Exchange`] does.
#[derive(Deserialize)]
struct LeanExchange<B> {
    seq: u64,
    request: LeanRequest<B>,
    response: RecordedResponse,
    timing: Timing,
    match_key: String,
}

#[derive(Deserialize)]
struct LeanRequest<B> {
    method: String,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    // A plain `default` would make serde require `B: Default`.
    #[serde(default = "Option::default")]
    body: Option<LeanBody<B>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum LeanBody<B> {
    Json(B),
    Text(String),
    Base64(String),
}

impl<B: Into<Value>> From<LeanExchange<B>> for Exchange {
    fn from(lean: LeanExchange<B>) -> Exchange {
        let LeanRequest {
            method,
            url,
            headers,
            body,
        } = lean.request;
        Exchange {
            seq: lean.seq,
            request: RecordedRequest {
                method,
                url,
                headers,
                body: body.map(|body| match body {
                    LeanBody::Json(json) => Body::Json(json.into()),
                    LeanBody::Text(t) => Body::Text(t),
                    LeanBody::Base64(b) => Body::Base64(b),
                }),
            },
            response: lean.response,
            timing: lean.timing,
            match_key: lean.match_key,
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SseEvent {
    /// Milliseconds after the response headers arrived.
    pub t_ms: u64,
    /// The `event:` field, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The `data:` payload: a JSON object or array stored as itself, anything
    /// else (`[DONE]`, plain text) as a string.
    pub data: Value,
    /// The `id:` field, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Timing of one exchange, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// Request start, relative to the start of the recording.
    pub start_ms: u64,
    /// Time from request start to the response headers.
    pub ttfb_ms: u64,
    /// Time from request start to the end of the response body.
    pub total_ms: u64,
}

/// The last line of a cassette: how the agent finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CassetteEnd {
    /// The agent's exit code; absent when it was killed (timeout, signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The agent's answer (its stdout, trimmed of one trailing newline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Wall time of the agent process.
    pub duration_ms: u64,
}

/// Returns `value` with every object's keys in sorted order, recursively.
///
/// Without serde_json's `preserve_order` feature maps are already sorted; with
/// it they keep insertion order, so inserting in sorted order makes the output
/// canonical either way.
pub fn sort_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let mut sorted = Map::new();
            for (k, v) in entries {
                sorted.insert(k.clone(), sort_keys(v));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

/// Minified JSON with keys sorted recursively: the one way cassettes spell JSON.
pub fn canonical_json(value: &Value) -> String {
    sort_keys(value).to_string()
}

/// Serialises a record line through `Value`, so key order never depends on field order.
fn record_line<T: Serialize>(tag: Option<&str>, record: &T) -> String {
    // Serialising these plain structs to a Value cannot fail (string keys, no
    // non-finite floats can come from parsed JSON); Null keeps the line valid JSON if it ever did.
    let value = serde_json::to_value(record).unwrap_or(Value::Null);
    let value = match tag {
        Some(tag) => {
            let mut map = Map::new();
            map.insert(tag.to_string(), value);
            Value::Object(map)
        }
        None => value,
    };
    canonical_json(&value)
}

/// What the parser was reading when a line went wrong; names the line in messages.
#[derive(Clone, Copy)]
enum LineKind {
    Meta,
    Record,
}

impl Cassette {
    /// Parses a cassette; any bad line is an `Error::Cassette` at `path:line` with a hint.
    pub fn parse(text: &str, path: &Path) -> Result<Cassette> {
        Cassette::parse_with(text, path, |line| {
            serde_json::from_str::<Exchange>(line).ok()
        })
    }

    /// [`Cassette::parse`] for a reader that needs only part of each JSON
    /// request body: the body is deserialized as `B`, which may skip what its
    /// reader never looks at, and converted to the `Value` kept. Reading a
    /// long conversation this way does not build the parts nobody reads. The
    /// result is for reading only: writing it back would lose what `B` skipped.
    ///
    /// Accepts and rejects exactly the files [`Cassette::parse`] does, with the same messages.
    pub fn parse_lean<B>(text: &str, path: &Path) -> Result<Cassette>
    where
        B: DeserializeOwned + Into<Value>,
    {
        Cassette::parse_with(text, path, |line| {
            serde_json::from_str::<LeanExchange<B>>(line)
                .ok()
                .map(Exchange::from)
        })
    }

    /// The parser; `fast` reads a plain exchange line, `None` sends it down the checked path.
    fn parse_with(
        text: &str,
        path: &Path,
        fast: impl Fn(&str) -> Option<Exchange>,
    ) -> Result<Cassette> {
        let fallback_id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "ID".into());
        let fail = |line: usize, message: String, case_id: &str| Error::Cassette {
            location: Location {
                path: path.to_path_buf(),
                line: Some(line),
                column: None,
            },
            message,
            hint: Some(format!(
                "re-record this case with agentci record --case {case_id}"
            )),
        };

        // Blank lines carry nothing; skipping them keeps hand-resolved merges readable.
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l))
            .filter(|(_, l)| !l.trim().is_empty());

        let Some((meta_no, meta_line)) = lines.next() else {
            return Err(fail(
                1,
                "cassette is empty (missing _meta line)".into(),
                &fallback_id,
            ));
        };
        let meta_value = parse_json_line(meta_line, LineKind::Meta)
            .map_err(|m| fail(meta_no, m, &fallback_id))?;
        let Some(meta_inner) = meta_value.get("_meta") else {
            return Err(fail(
                meta_no,
                "first line is not a _meta record (missing _meta)".into(),
                &fallback_id,
            ));
        };
        // Check the version before the shape: a newer format may have other fields.
        match meta_inner.get("format").and_then(Value::as_u64) {
            Some(v) if v == u64::from(FORMAT_VERSION) => {}
            Some(v) => {
                return Err(Error::Cassette {
                    location: Location {
                        path: path.to_path_buf(),
                        line: Some(meta_no),
                        column: None,
                    },
                    message: format!(
                        "unknown cassette format version {v} (this build reads version {FORMAT_VERSION})"
                    ),
                    hint: Some(format!(
                        "upgrade agentci, or re-record this case with agentci record --case {fallback_id}"
                    )),
                });
            }
            None => {
                return Err(fail(
                    meta_no,
                    "_meta has no numeric format version".into(),
                    &fallback_id,
                ));
            }
        }
        let meta: CassetteMeta = serde_json::from_value(meta_inner.clone()).map_err(|e| {
            fail(
                meta_no,
                format!("_meta line does not match format v1 ({e})"),
                &fallback_id,
            )
        })?;
        let case_id = meta.case_id.clone();

        let mut exchanges: Vec<Exchange> = Vec::new();
        let mut end: Option<CassetteEnd> = None;
        // These scans cover every byte of every cassette; memchr's searcher is
        // vectorised where `str::contains` is not.
        let end_tag = memchr::memmem::Finder::new("\"_end\"");
        let meta_tag = memchr::memmem::Finder::new("\"_meta\"");
        for (no, line) in lines {
            if end.is_some() {
                return Err(fail(no, "line after the _end record".into(), &case_id));
            }
            // Fast path: an exchange line straight into its struct. Going through
            // `Value` first builds every body twice and doubled the cost of
            // reading a suite. Anything unusual (a record tag anywhere in the
            // line, a parse error) takes the checked path below, unchanged.
            if end_tag.find(line.as_bytes()).is_none()
                && meta_tag.find(line.as_bytes()).is_none()
                && let Some(exchange) = fast(line)
            {
                push_exchange(&mut exchanges, exchange, no, &case_id, &fail)?;
                continue;
            }
            let value =
                parse_json_line(line, LineKind::Record).map_err(|m| fail(no, m, &case_id))?;
            if let Some(inner) = value.get("_end") {
                let parsed: CassetteEnd = serde_json::from_value(inner.clone()).map_err(|e| {
                    fail(
                        no,
                        format!("_end line does not match format v1 ({e})"),
                        &case_id,
                    )
                })?;
                end = Some(parsed);
                continue;
            }
            if value.get("_meta").is_some() {
                return Err(fail(no, "second _meta record".into(), &case_id));
            }
            let exchange: Exchange = serde_json::from_value(value).map_err(|e| {
                fail(
                    no,
                    format!("exchange line does not match format v1 ({e})"),
                    &case_id,
                )
            })?;
            push_exchange(&mut exchanges, exchange, no, &case_id, &fail)?;
        }
        Ok(Cassette {
            meta,
            exchanges,
            end,
        })
    }

    /// Reads and parses a cassette file.
    pub fn read(path: &Path) -> Result<Cassette> {
        Cassette::parse(&read_text(path)?, path)
    }

    /// Reads a cassette file with [`Cassette::parse_lean`].
    pub fn read_lean<B>(path: &Path) -> Result<Cassette>
    where
        B: DeserializeOwned + Into<Value>,
    {
        Cassette::parse_lean::<B>(&read_text(path)?, path)
    }

    /// The file contents: one minified line per record, keys sorted recursively.
    pub fn to_jsonl(&self) -> String {
        let mut out = record_line(Some("_meta"), &self.meta);
        out.push('\n');
        for exchange in &self.exchanges {
            out.push_str(&record_line(None, exchange));
            out.push('\n');
        }
        if let Some(end) = &self.end {
            out.push_str(&record_line(Some("_end"), end));
            out.push('\n');
        }
        out
    }

    /// Writes atomically after a secret scan; on a find or failure the previous file is untouched.
    pub fn write_atomic(&self, path: &Path) -> Result<()> {
        let text = self.to_jsonl();
        if let Some(finding) = super::redact::scan_for_secrets(&text).into_iter().next() {
            return Err(Error::SecretFound {
                path: path.to_path_buf(),
                finding: format!(
                    "line {}: {} ({})",
                    finding.line, finding.kind, finding.excerpt
                ),
            });
        }
        crate::atomic::write(path, text.as_bytes(), crate::atomic::Visibility::Public)
    }
}

/// A cassette file's text; bytes that are not UTF-8 are an error at their line.
fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e
            .as_bytes()
            .iter()
            .take(e.utf8_error().valid_up_to())
            .filter(|b| **b == b'\n')
            .count();
        Error::Cassette {
            location: Location {
                path: path.to_path_buf(),
                line: Some(line),
                column: None,
            },
            message: "cassette is not valid UTF-8".into(),
            hint: Some(
                "re-record this case with agentci record --case ID (cassettes are UTF-8 JSONL)"
                    .into(),
            ),
        }
    })?;
    Ok(text)
}

/// Parses one line as JSON, with serde_json's message reduced to the column
/// (every record is on one line, so `line 1` would only mislead).
fn parse_json_line(line: &str, kind: LineKind) -> std::result::Result<Value, String> {
    let what = match kind {
        LineKind::Meta => "_meta line",
        LineKind::Record => "exchange line",
    };
    let value: Value = serde_json::from_str(line).map_err(|e| {
        let full = e.to_string();
        let reason = full
            .rsplit_once(" at line ")
            .map(|(r, _)| r.to_string())
            .unwrap_or(full);
        format!(
            "{what} is not valid JSON ({reason} at column {})",
            e.column()
        )
    })?;
    if !value.is_object() {
        return Err(format!("{what} is not a JSON object"));
    }
    Ok(value)
}

/// Appends a parsed exchange after the checks every exchange line gets: `seq`
/// strictly increasing, bodies replay can send.
fn push_exchange(
    exchanges: &mut Vec<Exchange>,
    exchange: Exchange,
    no: usize,
    case_id: &str,
    fail: &dyn Fn(usize, String, &str) -> Error,
) -> Result<()> {
    if let Some(prev) = exchanges.last()
        && exchange.seq <= prev.seq
    {
        return Err(fail(
            no,
            format!(
                "out-of-order seq {} after {} (exchanges are ordered by request start)",
                exchange.seq, prev.seq
            ),
            case_id,
        ));
    }
    check_bodies(&exchange).map_err(|m| fail(no, m, case_id))?;
    exchanges.push(exchange);
    Ok(())
}

/// Rejects stored bodies replay could not send (base64 that does not decode).
fn check_bodies(exchange: &Exchange) -> std::result::Result<(), String> {
    use base64::Engine as _;
    for (side, body) in [
        ("request", exchange.request.body.as_ref()),
        ("response", exchange.response.body.as_ref()),
    ] {
        if let Some(Body::Base64(b64)) = body
            && base64::engine::general_purpose::STANDARD
                .decode(b64)
                .is_err()
        {
            return Err(format!("{side} body is not valid base64"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn sample() -> Cassette {
        Cassette {
            meta: CassetteMeta {
                format: FORMAT_VERSION,
                tool_version: "0.1.0".into(),
                case_id: "weather".into(),
                agent: Some("rag-agent".into()),
                query: Some("Weather in Paris?".into()),
                recorded_at: "2025-06-01T12:00:00Z".into(),
                spec_hash: None,
                record_mode: "once".into(),
                trial: None,
            },
            exchanges: vec![Exchange {
                seq: 0,
                request: RecordedRequest {
                    method: "POST".into(),
                    url: "https://api.openai.com/v1/chat/completions".into(),
                    headers: BTreeMap::from([("content-type".into(), "application/json".into())]),
                    body: Some(Body::Json(json!({"stream": true, "model": "gpt-4o-mini"}))),
                },
                response: RecordedResponse {
                    status: 200,
                    headers: BTreeMap::new(),
                    body: None,
                    events: Some(vec![SseEvent {
                        t_ms: 3,
                        event: None,
                        data: json!({"id": "c1", "choices": []}),
                        id: None,
                    }]),
                    truncated: false,
                    error: None,
                },
                timing: Timing {
                    start_ms: 1,
                    ttfb_ms: 2,
                    total_ms: 5,
                },
                match_key: "sha256:00".into(),
            }],
            end: Some(CassetteEnd {
                exit_code: Some(0),
                answer: Some("Sunny".into()),
                duration_ms: 9,
            }),
        }
    }

    #[test]
    fn exchange_mentioning_record_tags_and_duplicate_keys_parse_as_before() {
        // These lines skip the direct-to-struct fast path; the checked path must
        // give the same cassette.
        let mut c = sample();
        c.exchanges[0].request.body = Some(Body::Json(json!({"\"_end\"": "\"_meta\""})));
        let text = c.to_jsonl();
        assert_eq!(Cassette::parse(&text, Path::new("p.jsonl")).unwrap(), c);
        // A duplicate key is an error for the struct, the last value wins for `Value`.
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[1] = lines[1].replacen("{\"match_key\":", "{\"seq\":7,\"match_key\":", 1);
        let parsed = Cassette::parse(&lines.join("\n"), Path::new("p.jsonl")).unwrap();
        assert_eq!(parsed.exchanges[0].seq, 0);
    }

    fn parse_err(text: &str) -> String {
        let err =
            Cassette::parse(text, Path::new("cassettes/rag-agent/weather.jsonl")).unwrap_err();
        format!("{err}\nhint: {}", err.hint().unwrap_or_default())
    }

    #[test]
    fn lines_are_minified_with_sorted_keys() {
        let text = sample().to_jsonl();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            r#"{"_meta":{"agent":"rag-agent","case_id":"weather","format":1,"query":"Weather in Paris?","record_mode":"once","recorded_at":"2025-06-01T12:00:00Z","tool_version":"0.1.0"}}"#
        );
        assert_eq!(
            lines[1],
            r#"{"match_key":"sha256:00","request":{"body":{"json":{"model":"gpt-4o-mini","stream":true}},"headers":{"content-type":"application/json"},"method":"POST","url":"https://api.openai.com/v1/chat/completions"},"response":{"events":[{"data":{"choices":[],"id":"c1"},"t_ms":3}],"status":200},"seq":0,"timing":{"start_ms":1,"total_ms":5,"ttfb_ms":2}}"#
        );
        assert_eq!(
            lines[2],
            r#"{"_end":{"answer":"Sunny","duration_ms":9,"exit_code":0}}"#
        );
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn sort_keys_orders_nested_objects() {
        let v = json!({"b": [{"d": 1, "c": 2}], "a": 0});
        assert_eq!(canonical_json(&v), r#"{"a":0,"b":[{"c":2,"d":1}]}"#);
    }

    #[test]
    fn parse_reads_what_to_jsonl_wrote_and_tolerates_blank_lines() {
        let c = sample();
        let text = c.to_jsonl().replace('\n', "\n\n");
        assert_eq!(Cassette::parse(&text, Path::new("x.jsonl")).unwrap(), c);
        let mut open = c.clone();
        open.end = None;
        assert_eq!(
            Cassette::parse(&open.to_jsonl(), Path::new("x.jsonl")).unwrap(),
            open
        );
    }

    #[test]
    fn corrupt_lines_are_located_with_a_hint() {
        let good = sample().to_jsonl();
        let lines: Vec<&str> = good.lines().collect();
        let bad = format!("{}\noops\n", lines[0]);
        assert_eq!(
            parse_err(&bad),
            "cassettes/rag-agent/weather.jsonl:2: exchange line is not valid JSON (expected value at column 1)\nhint: re-record this case with agentci record --case weather"
        );
        assert_eq!(
            parse_err(""),
            "cassettes/rag-agent/weather.jsonl:1: cassette is empty (missing _meta line)\nhint: re-record this case with agentci record --case weather"
        );
        assert!(
            parse_err(lines[1]).starts_with(
                "cassettes/rag-agent/weather.jsonl:1: first line is not a _meta record"
            )
        );
        let v2 = lines[0].replace("\"format\":1", "\"format\":2");
        assert_eq!(
            parse_err(&v2),
            "cassettes/rag-agent/weather.jsonl:1: unknown cassette format version 2 (this build reads version 1)\nhint: upgrade agentci, or re-record this case with agentci record --case weather"
        );
        let twice = format!("{}\n{}\n{}\n", lines[0], lines[1], lines[1]);
        assert!(
            parse_err(&twice)
                .starts_with("cassettes/rag-agent/weather.jsonl:3: out-of-order seq 0 after 0")
        );
        let missing = format!(
            "{}\n{}\n",
            lines[0],
            lines[1].replace(",\"status\":200", "")
        );
        assert!(
            parse_err(&missing).starts_with(
                "cassettes/rag-agent/weather.jsonl:2: exchange line does not match format v1 (missing field `status`"
            ),
            "{}",
            parse_err(&missing)
        );
        let after_end = format!("{good}{}\n", lines[1]);
        assert!(
            parse_err(&after_end)
                .starts_with("cassettes/rag-agent/weather.jsonl:4: line after the _end record")
        );
        let bad_b64 = format!(
            "{}\n{}\n",
            lines[0],
            lines[1].replace(
                r#""body":{"json":{"model":"gpt-4o-mini","stream":true}}"#,
                r#""body":{"base64":"!!"}"#
            )
        );
        assert!(parse_err(&bad_b64).contains(":2: request body is not valid base64"));
        assert!(parse_err("[1]").contains(":1: _meta line is not a JSON object"));
    }

    #[test]
    fn write_is_atomic_and_refuses_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent/case.jsonl");
        let c = sample();
        c.write_atomic(&path).unwrap();
        let before = std::fs::read(&path).unwrap();
        assert_eq!(before, c.to_jsonl().into_bytes());

        let mut leaky = c.clone();
        leaky.end = Some(CassetteEnd {
            exit_code: Some(0),
            answer: Some("key is sk-abcdefghijklmnopqrstuvwxyz012345".into()),
            duration_ms: 1,
        });
        let err = leaky.write_atomic(&path).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("refusing to write: line 3: openai-key (sk-ab… 35 chars)"),
            "{message}"
        );
        assert!(!message.contains("abcdefghijkl"));
        assert_eq!(std::fs::read(&path).unwrap(), before);
        // No temp file is left behind either.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn a_failed_write_leaves_the_previous_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.jsonl");
        std::fs::write(&path, "previous").unwrap();
        // The target is a directory path under a file: creating the temp file fails.
        let err = sample()
            .write_atomic(&path.join("nested.jsonl"))
            .unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "previous");
    }

    #[test]
    fn read_reports_missing_and_non_utf8_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Cassette::read(&dir.path().join("nope.jsonl")),
            Err(Error::Io { .. })
        ));
        let path = dir.path().join("bin.jsonl");
        std::fs::write(&path, b"{}\n\xff\n").unwrap();
        let err = Cassette::read(&path).unwrap_err().to_string();
        assert!(
            err.ends_with("bin.jsonl:2: cassette is not valid UTF-8"),
            "{err}"
        );
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            // Finite floats round-trip exactly (serde_json float_roundtrip is on in the graph;
            // ryu's shortest representation reads back to the same f64 regardless).
            (-1e6f64..1e6).prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 20, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("\\PC{0,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_body() -> impl Strategy<Value = Body> {
        prop_oneof![
            arb_value().prop_map(Body::Json),
            "\\PC{0,20}".prop_map(Body::Text),
            proptest::collection::vec(any::<u8>(), 0..20).prop_map(|b| {
                use base64::Engine as _;
                Body::Base64(base64::engine::general_purpose::STANDARD.encode(b))
            }),
        ]
    }

    fn arb_headers() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map("[a-z-]{1,10}", "\\PC{0,10}", 0..3)
    }

    prop_compose! {
        fn arb_exchange()(
            method in "[A-Z]{3,6}",
            url in "https://[a-z]{1,8}\\.com/[a-z/]{0,10}",
            req_headers in arb_headers(),
            req_body in proptest::option::of(arb_body()),
            status in any::<u16>(),
            resp_headers in arb_headers(),
            resp_body in proptest::option::of(arb_body()),
            events in proptest::option::of(proptest::collection::vec(
                (any::<u64>(), proptest::option::of("[a-z_]{1,8}"), arb_value(), proptest::option::of("[0-9]{1,3}")),
                0..4,
            )),
            truncated in any::<bool>(),
            error in proptest::option::of("\\PC{0,16}"),
            timing in (any::<u64>(), any::<u64>(), any::<u64>()),
            match_key in "sha256:[0-9a-f]{8}",
        ) -> Exchange {
            Exchange {
                seq: 0,
                request: RecordedRequest { method, url, headers: req_headers, body: req_body },
                response: RecordedResponse {
                    status,
                    headers: resp_headers,
                    body: resp_body,
                    events: events.map(|es| es.into_iter().map(|(t_ms, event, data, id)| SseEvent { t_ms, event, data, id }).collect()),
                    truncated,
                    error,
                },
                timing: Timing { start_ms: timing.0, ttfb_ms: timing.1, total_ms: timing.2 },
                match_key,
            }
        }
    }

    prop_compose! {
        fn arb_cassette()(
            case_id in "[a-z0-9-]{1,12}",
            agent in proptest::option::of("\\PC{0,8}"),
            query in proptest::option::of("\\PC{0,30}"),
            spec_hash in proptest::option::of("sha256:[0-9a-f]{8}"),
            record_mode in prop_oneof![Just("once"), Just("new_episodes"), Just("all"), Just("none")],
            trial in proptest::option::of(1u32..10),
            exchanges in proptest::collection::vec(arb_exchange(), 0..4),
            gaps in proptest::collection::vec(1u64..5, 4),
            end in proptest::option::of((proptest::option::of(any::<i32>()), proptest::option::of("\\PC{0,20}"), any::<u64>())),
        ) -> Cassette {
            let mut seq = 0;
            let exchanges = exchanges.into_iter().zip(gaps).map(|(mut e, gap)| { e.seq = seq; seq += gap; e }).collect();
            Cassette {
                meta: CassetteMeta {
                    format: FORMAT_VERSION,
                    tool_version: crate::VERSION.into(),
                    case_id,
                    agent,
                    query,
                    recorded_at: "2025-06-01T12:00:00Z".into(),
                    spec_hash,
                    record_mode: record_mode.into(),
                    trial,
                },
                exchanges,
                end: end.map(|(exit_code, answer, duration_ms)| CassetteEnd { exit_code, answer, duration_ms }),
            }
        }
    }

    proptest! {
        #[test]
        fn parse_inverts_to_jsonl(c in arb_cassette()) {
            let text = c.to_jsonl();
            prop_assert_eq!(text.lines().count(), 1 + c.exchanges.len() + usize::from(c.end.is_some()));
            prop_assert_eq!(Cassette::parse(&text, Path::new("p.jsonl")).unwrap(), c);
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,200}") {
            let _ = Cassette::parse(&text, Path::new("p.jsonl"));
        }
    }
}
