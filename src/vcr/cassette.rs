//! Cassette format version 1 (`docs/cassettes.md`): one JSONL file per case.
//!
//! Line 1 is `{"_meta":{…}}`, then one line per exchange ordered by request
//! start, then `{"_end":{…}}`. Every line is minified JSON with sorted keys.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

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
        for (no, line) in lines {
            if end.is_some() {
                return Err(fail(no, "line after the _end record".into(), &case_id));
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
            if let Some(prev) = exchanges.last()
                && exchange.seq <= prev.seq
            {
                return Err(fail(
                    no,
                    format!(
                        "out-of-order seq {} after {} (exchanges are ordered by request start)",
                        exchange.seq, prev.seq
                    ),
                    &case_id,
                ));
            }
            check_bodies(&exchange).map_err(|m| fail(no, m, &case_id))?;
            exchanges.push(exchange);
        }
        Ok(Cassette {
            meta,
            exchanges,
            end,
        })
    }

    /// Reads and parses a cassette file.
    pub fn read(path: &Path) -> Result<Cassette> {
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
        Cassette::parse(&text, path)
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
        write_file_atomic(path, text.as_bytes())
    }
}

/// Writes `bytes` to `path` through a temp file in the same directory, fsync and
/// rename, so a crash or kill leaves either the old file or the new one, never a mix.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".agentci-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| Error::io(&dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
    // Temp files are created 0600; a cassette is meant to be committed and read by others.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(|e| Error::io(tmp.path(), e))?;
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    // Make the rename itself durable; some filesystems cannot sync a directory, and
    // the data is already safe in either name, so a failure here is not an error.
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
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
