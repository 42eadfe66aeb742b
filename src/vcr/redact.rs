//! Secrets never reach disk: header allow-lists, volatile headers, secret query
//! parameters, environment secret values and a final key-shape scan. Every
//! rule lives in one of the tables below; `docs/cassettes.md` lists them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use base64::Engine as _;
use regex::Regex;
use serde_json::Value;

use super::body::edit_field;
use super::cassette::{Body, Exchange};

/// Which side of an exchange a header rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Request headers.
    Request,
    /// Response headers.
    Response,
    /// Both.
    Both,
}

/// What happens to a header on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderRule {
    /// Written to the cassette.
    Keep,
    /// Credentials or account identifiers: never written.
    Secret,
    /// Differs run to run without meaning anything for the agent: not written.
    Volatile,
    /// Describes the wire framing, which replay recomputes (bodies are stored decoded).
    Framing,
}

/// The one header table. A name ending in `*` is a prefix. The first matching
/// row wins; a header matching no row is not written (allow-list).
pub const HEADER_TABLE: &[(&str, Side, HeaderRule)] = &[
    // Never written, on either side.
    ("authorization", Side::Both, HeaderRule::Secret),
    ("proxy-authorization", Side::Both, HeaderRule::Secret),
    ("x-api-key", Side::Both, HeaderRule::Secret),
    ("api-key", Side::Both, HeaderRule::Secret),
    ("x-goog-api-key", Side::Both, HeaderRule::Secret),
    ("cookie", Side::Both, HeaderRule::Secret),
    ("set-cookie", Side::Both, HeaderRule::Secret),
    ("openai-organization", Side::Both, HeaderRule::Secret),
    ("openai-project", Side::Both, HeaderRule::Secret),
    ("anthropic-organization-id", Side::Both, HeaderRule::Secret),
    // Framing: replay sends decoded bodies and computes its own lengths.
    ("content-encoding", Side::Both, HeaderRule::Framing),
    ("content-length", Side::Both, HeaderRule::Framing),
    ("transfer-encoding", Side::Both, HeaderRule::Framing),
    ("connection", Side::Both, HeaderRule::Framing),
    ("keep-alive", Side::Both, HeaderRule::Framing),
    // Volatile: new values on every call.
    ("date", Side::Response, HeaderRule::Volatile),
    ("x-request-id", Side::Both, HeaderRule::Volatile),
    ("request-id", Side::Both, HeaderRule::Volatile),
    ("cf-ray", Side::Response, HeaderRule::Volatile),
    ("cf-cache-status", Side::Response, HeaderRule::Volatile),
    ("openai-processing-ms", Side::Response, HeaderRule::Volatile),
    (
        "x-envoy-upstream-service-time",
        Side::Response,
        HeaderRule::Volatile,
    ),
    ("x-ratelimit-*", Side::Response, HeaderRule::Volatile),
    (
        "anthropic-ratelimit-*",
        Side::Response,
        HeaderRule::Volatile,
    ),
    ("server-timing", Side::Response, HeaderRule::Volatile),
    ("x-stainless-*", Side::Request, HeaderRule::Volatile),
    ("idempotency-key", Side::Request, HeaderRule::Volatile),
    ("x-idempotency-key", Side::Request, HeaderRule::Volatile),
    // Kept: what shapes the request or what a client acts on.
    ("accept", Side::Request, HeaderRule::Keep),
    ("content-type", Side::Both, HeaderRule::Keep),
    ("anthropic-version", Side::Request, HeaderRule::Keep),
    ("anthropic-beta", Side::Request, HeaderRule::Keep),
    ("openai-beta", Side::Request, HeaderRule::Keep),
    ("openai-version", Side::Response, HeaderRule::Keep),
    ("openai-model", Side::Response, HeaderRule::Keep),
    ("retry-after", Side::Response, HeaderRule::Keep),
    ("retry-after-ms", Side::Response, HeaderRule::Keep),
    ("x-should-retry", Side::Response, HeaderRule::Keep),
    ("location", Side::Response, HeaderRule::Keep),
];

/// The rule for a header on one side; `None` means not allow-listed.
pub fn header_rule(name: &str, side: Side) -> Option<HeaderRule> {
    let name = name.to_ascii_lowercase();
    HEADER_TABLE
        .iter()
        .find(|(pattern, s, _)| {
            (*s == side || *s == Side::Both)
                && match pattern.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => name == *pattern,
                }
        })
        .map(|(_, _, rule)| *rule)
}

/// Query parameters whose values are replaced by `REDACTED` (compared case-insensitively).
pub const SECRET_QUERY_PARAMS: &[&str] =
    &["key", "api_key", "apikey", "token", "access_token", "sig"];

/// True for a query parameter that carries a credential.
pub fn is_secret_query_param(name: &str) -> bool {
    SECRET_QUERY_PARAMS
        .iter()
        .any(|p| p.eq_ignore_ascii_case(name))
}

/// Environment variable names whose values are secrets: these suffixes…
pub const SECRET_ENV_SUFFIXES: &[&str] = &["_KEY", "_TOKEN", "_SECRET"];
/// …or this substring (names compared upper-cased).
pub const SECRET_ENV_SUBSTRING: &str = "PASSWORD";
/// Shorter values are not scrubbed: replacing `true` or `1234` everywhere would corrupt bodies.
pub const MIN_SECRET_LEN: usize = 8;

/// True when an environment variable of this name holds a secret.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_ENV_SUFFIXES.iter().any(|s| upper.ends_with(s)) || upper.contains(SECRET_ENV_SUBSTRING)
}

/// The known key shapes of the final scan: `(kind, pattern)`. Earlier rows win on overlap.
const KEY_SHAPES: &[(&str, &str)] = &[
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", r"\bsk-[A-Za-z0-9_\-]{20,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("github-token", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("slack-token", r"\bxox[abpr]-[A-Za-z0-9\-]{10,}"),
    ("bearer-token", r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{20,}=*"),
];

static KEY_SHAPE_REGEXES: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    KEY_SHAPES
        .iter()
        .filter_map(|(kind, pattern)| Regex::new(pattern).ok().map(|re| (*kind, re)))
        .collect()
});

/// Removes secrets from what is recorded.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// `(NAME, value)`, longest value first so a secret containing another is replaced whole.
    secrets: Vec<(String, String)>,
    redact_body_fields: Vec<String>,
}

impl Redactor {
    /// Whether redaction would change this request (a body field to redact, or a
    /// known secret value in its URL or body): when not, the proxy's hot path keys
    /// the request as it is, without copying and scrubbing its body. A secret
    /// that only appears JSON-escaped in the raw body is not seen here.
    pub fn changes_request(&self, url: &str, body: &[u8]) -> bool {
        !self.redact_body_fields.is_empty()
            || self.secrets.iter().any(|(_, value)| {
                url.contains(value.as_str())
                    || memchr::memmem::find(body, value.as_bytes()).is_some()
            })
    }

    /// Snapshots the values of environment secrets (names ending `_KEY`/`_TOKEN`/`_SECRET` or containing `PASSWORD`).
    pub fn from_env(redact_body_fields: &[String]) -> Self {
        let secrets = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| is_secret_env_name(k))
            .collect();
        Self::from_pairs(secrets, redact_body_fields)
    }

    /// A redactor over explicit `(NAME, value)` secrets, for tests.
    pub fn from_pairs(secrets: Vec<(String, String)>, redact_body_fields: &[String]) -> Self {
        let mut secrets: Vec<(String, String)> = secrets
            .into_iter()
            .filter(|(_, v)| v.chars().count() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        secrets.dedup_by(|a, b| a.1 == b.1);
        Redactor {
            secrets,
            redact_body_fields: redact_body_fields.to_vec(),
        }
    }

    fn headers(&self, headers: &http::HeaderMap, side: Side) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (name, value) in headers {
            if header_rule(name.as_str(), side) != Some(HeaderRule::Keep) {
                continue;
            }
            let value = String::from_utf8_lossy(value.as_bytes());
            let value = self.scrub_text(&value);
            // Repeated headers join with ", " as RFC 9110 allows for list-valued fields.
            out.entry(name.as_str().to_string())
                .and_modify(|v: &mut String| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert(value);
        }
        out
    }

    /// The allow-listed request headers, names lower case.
    pub fn request_headers(&self, headers: &http::HeaderMap) -> BTreeMap<String, String> {
        self.headers(headers, Side::Request)
    }

    /// The allow-listed response headers minus volatile ones; never content-encoding/length.
    pub fn response_headers(&self, headers: &http::HeaderMap) -> BTreeMap<String, String> {
        self.headers(headers, Side::Response)
    }

    /// The URL with secret query parameters replaced by `REDACTED` and env secrets scrubbed.
    ///
    /// Works on the raw string rather than a parsed URL so everything else stays byte-identical.
    pub fn url(&self, url: &str) -> String {
        let (before_fragment, fragment) = match url.split_once('#') {
            Some((b, f)) => (b, Some(f)),
            None => (url, None),
        };
        let mut out = match before_fragment.split_once('?') {
            Some((base, query)) => {
                let pairs: Vec<String> = query
                    .split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some((name, _)) if is_secret_query_param(&decode_component(name)) => {
                            format!("{name}=REDACTED")
                        }
                        _ => pair.to_string(),
                    })
                    .collect();
                format!("{base}?{}", pairs.join("&"))
            }
            None => before_fragment.to_string(),
        };
        if let Some(fragment) = fragment {
            out.push('#');
            out.push_str(fragment);
        }
        self.scrub_text(&out)
    }

    /// Replaces every environment secret value in `text` by `<redacted:NAME>`.
    pub fn scrub_text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, value) in &self.secrets {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), &format!("<redacted:{name}>"));
            }
        }
        out
    }

    fn scrub_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.scrub_text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.scrub_value(&mut v);
                    map.insert(self.scrub_text(&k), v);
                }
            }
            _ => {}
        }
    }

    /// Scrubs one body as [`Redactor::scrub_exchange`] does; replay applies it to a live
    /// request before computing its match key, since recordings are keyed in their stored form.
    pub fn scrub_body(&self, body: &mut Body) {
        match body {
            Body::Json(value) => {
                self.scrub_value(value);
                for path in &self.redact_body_fields {
                    edit_field(value, path, &mut |map, key| {
                        if let Some(v) = map.get_mut(key) {
                            *v = Value::String("REDACTED".into());
                        }
                    });
                }
            }
            Body::Text(text) => *text = self.scrub_text(text),
            Body::Base64(b64) => {
                let engine = base64::engine::general_purpose::STANDARD;
                if let Ok(bytes) = engine.decode(b64.as_bytes()) {
                    let scrubbed = self.scrub_bytes(&bytes);
                    if scrubbed != bytes {
                        *b64 = engine.encode(scrubbed);
                    }
                }
            }
        }
    }

    fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for (name, value) in &self.secrets {
            let needle = value.as_bytes();
            let replacement = format!("<redacted:{name}>").into_bytes();
            let mut result = Vec::with_capacity(out.len());
            let mut i = 0;
            while i < out.len() {
                if out.get(i..i + needle.len()) == Some(needle) {
                    result.extend_from_slice(&replacement);
                    i += needle.len();
                } else {
                    result.extend(out.get(i).copied());
                    i += 1;
                }
            }
            out = result;
        }
        out
    }

    /// Replaces environment secret values everywhere by `<redacted:NAME>` and redacts configured body fields.
    pub fn scrub_exchange(&self, exchange: &mut Exchange) {
        let req = &mut exchange.request;
        req.url = self.url(&req.url);
        scrub_map(self, &mut req.headers);
        if let Some(body) = &mut req.body {
            self.scrub_body(body);
        }
        let resp = &mut exchange.response;
        scrub_map(self, &mut resp.headers);
        if let Some(body) = &mut resp.body {
            self.scrub_body(body);
        }
        for event in resp.events.iter_mut().flatten() {
            self.scrub_value(&mut event.data);
            event.event = event.event.as_deref().map(|e| self.scrub_text(e));
            event.id = event.id.as_deref().map(|e| self.scrub_text(e));
            // Streamed chunks are JSON too; redact configured fields in them as well.
            for path in &self.redact_body_fields {
                edit_field(&mut event.data, path, &mut |map, key| {
                    if let Some(v) = map.get_mut(key) {
                        *v = Value::String("REDACTED".into());
                    }
                });
            }
        }
        resp.error = resp.error.as_deref().map(|e| self.scrub_text(e));
    }
}

fn scrub_map(redactor: &Redactor, map: &mut BTreeMap<String, String>) {
    for value in map.values_mut() {
        *value = redactor.scrub_text(value);
    }
}

/// Percent-decodes a query component (`+` as space) for comparing names.
pub(crate) fn decode_component(s: &str) -> String {
    url::form_urlencoded::parse(s.as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// One key-shaped string found by [`scan_for_secrets`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFinding {
    /// 1-based line of the text.
    pub line: usize,
    /// What it looks like (`openai-key`, `bearer-token`, …).
    pub kind: &'static str,
    /// A masked excerpt, never the secret itself.
    pub excerpt: String,
}

/// Shows enough of a match to find it (its recognisable prefix and two more
/// characters) and its length; never enough to use it.
fn mask(found: &str, kind: &str) -> String {
    let prefix_len = match kind {
        "anthropic-key" => 7,
        "openai-key" => 3,
        "google-api-key" => 4,
        "github-token" | "slack-token" => 4,
        _ => found.find(char::is_whitespace).map(|i| i + 1).unwrap_or(0),
    };
    let shown: String = found.chars().take(prefix_len + 2).collect();
    format!("{shown}… {} chars", found.chars().count())
}

/// Finds known key shapes (`sk-…`, `sk-ant-…`, `AIza…`, `ghp_…`, `xox?-…`, `Bearer <token>`).
pub fn scan_for_secrets(text: &str) -> Vec<SecretFinding> {
    let mut findings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut taken: Vec<(usize, usize)> = Vec::new();
        let mut on_line: Vec<(usize, SecretFinding)> = Vec::new();
        for (kind, re) in KEY_SHAPE_REGEXES.iter() {
            for m in re.find_iter(line) {
                if taken.iter().any(|(s, e)| m.start() < *e && *s < m.end()) {
                    continue;
                }
                taken.push((m.start(), m.end()));
                on_line.push((
                    m.start(),
                    SecretFinding {
                        line: index + 1,
                        kind,
                        excerpt: mask(m.as_str(), kind),
                    },
                ));
            }
        }
        on_line.sort_by_key(|(start, _)| *start);
        findings.extend(on_line.into_iter().map(|(_, f)| f));
    }
    findings
}

/// Whether a request header enters the match key: never, per DESIGN.md the key is
/// method, URL and body only, so `x-stainless-*` retry counters, idempotency
/// keys and SDK versions cannot cause a miss. Callers ask here rather than assume.
pub fn is_match_key_header(name: &str) -> bool {
    let _ = name;
    false
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::vcr::cassette::{RecordedRequest, RecordedResponse, SseEvent, Timing};

    const OPENAI: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn secret_headers_are_never_written() {
        let r = Redactor::default();
        let h = headers(&[
            ("authorization", "Bearer x"),
            ("x-api-key", "k"),
            ("api-key", "k"),
            ("x-goog-api-key", "k"),
            ("cookie", "c"),
            ("proxy-authorization", "p"),
            ("openai-organization", "org"),
            ("openai-project", "proj"),
            ("x-stainless-retry-count", "0"),
            ("idempotency-key", "abc"),
            ("x-custom", "not allow-listed"),
            ("content-type", "application/json"),
            ("anthropic-version", "2023-06-01"),
        ]);
        assert_eq!(
            r.request_headers(&h),
            BTreeMap::from([
                ("anthropic-version".to_string(), "2023-06-01".to_string()),
                ("content-type".to_string(), "application/json".to_string()),
            ])
        );
    }

    #[test]
    fn volatile_and_framing_response_headers_are_dropped() {
        let r = Redactor::default();
        let h = headers(&[
            ("date", "Mon"),
            ("x-request-id", "r"),
            ("request-id", "r"),
            ("cf-ray", "c"),
            ("openai-processing-ms", "12"),
            ("x-ratelimit-remaining-tokens", "9"),
            ("anthropic-ratelimit-requests-limit", "5"),
            ("server-timing", "x"),
            ("set-cookie", "s=1"),
            ("content-encoding", "gzip"),
            ("content-length", "10"),
            ("content-type", "text/event-stream"),
            ("retry-after", "3"),
        ]);
        assert_eq!(
            r.response_headers(&h),
            BTreeMap::from([
                ("content-type".to_string(), "text/event-stream".to_string()),
                ("retry-after".to_string(), "3".to_string()),
            ])
        );
    }

    #[test]
    fn every_named_secret_header_is_secret_on_both_sides() {
        for name in [
            "authorization",
            "x-api-key",
            "api-key",
            "x-goog-api-key",
            "cookie",
            "set-cookie",
            "proxy-authorization",
            "openai-organization",
            "openai-project",
        ] {
            for side in [Side::Request, Side::Response] {
                assert_eq!(header_rule(name, side), Some(HeaderRule::Secret), "{name}");
            }
        }
    }

    #[test]
    fn secret_query_params_are_redacted_and_the_rest_kept_verbatim() {
        let r = Redactor::default();
        assert_eq!(
            r.url("https://h/v1/m?alt=sse&key=AIzaXYZ&Token=t&a%20b=c%2Fd&sig=s#frag"),
            "https://h/v1/m?alt=sse&key=REDACTED&Token=REDACTED&a%20b=c%2Fd&sig=REDACTED#frag"
        );
        assert_eq!(
            r.url("https://h/p?api%5Fkey=1"),
            "https://h/p?api%5Fkey=REDACTED"
        );
        assert_eq!(r.url("https://h/p"), "https://h/p");
    }

    #[test]
    fn env_names_and_short_values() {
        assert!(is_secret_env_name("OPENAI_API_KEY"));
        assert!(is_secret_env_name("gh_token"));
        assert!(is_secret_env_name("CLIENT_SECRET"));
        assert!(is_secret_env_name("DB_PASSWORD_FILE"));
        assert!(!is_secret_env_name("KEYBOARD"));
        let r = Redactor::from_pairs(
            vec![
                ("SHORT_KEY".into(), "1234567".into()),
                ("LONG_KEY".into(), "abcdefgh-long".into()),
            ],
            &[],
        );
        assert_eq!(
            r.scrub_text("1234567 abcdefgh-long"),
            "1234567 <redacted:LONG_KEY>"
        );
    }

    #[test]
    fn longer_secret_wins_when_one_contains_another() {
        let r = Redactor::from_pairs(
            vec![
                ("A_KEY".into(), "abcdefgh".into()),
                ("B_KEY".into(), "abcdefgh-ijkl".into()),
            ],
            &[],
        );
        assert_eq!(
            r.scrub_text("x abcdefgh-ijkl y abcdefgh"),
            "x <redacted:B_KEY> y <redacted:A_KEY>"
        );
    }

    #[test]
    fn scrub_exchange_reaches_every_string() {
        let secret = "s3cr3t-value-123";
        let r = Redactor::from_pairs(
            vec![("MY_TOKEN".into(), secret.into())],
            &["metadata.user".into()],
        );
        let mut ex = Exchange {
            seq: 0,
            request: RecordedRequest {
                method: "POST".into(),
                url: format!("https://h/p?q={secret}&token={secret}"),
                headers: BTreeMap::from([("accept".into(), secret.into())]),
                body: Some(Body::Json(
                    json!({secret: [secret], "metadata": {"user": "alice"}}),
                )),
            },
            response: RecordedResponse {
                status: 200,
                headers: BTreeMap::new(),
                body: Some(Body::Base64(
                    base64::engine::general_purpose::STANDARD.encode(format!("\x00{secret}")),
                )),
                events: Some(vec![SseEvent {
                    t_ms: 1,
                    event: Some(secret.into()),
                    data: json!({"x": secret, "metadata": {"user": "bob"}}),
                    id: None,
                }]),
                truncated: false,
                error: Some(format!("reset after {secret}")),
            },
            timing: Timing::default(),
            match_key: String::new(),
        };
        r.scrub_exchange(&mut ex);
        let text = serde_json::to_string(&ex).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert!(text.contains("<redacted:MY_TOKEN>"));
        assert_eq!(
            ex.request.url,
            "https://h/p?q=<redacted:MY_TOKEN>&token=REDACTED"
        );
        assert_eq!(
            ex.request.body,
            Some(Body::Json(
                json!({"<redacted:MY_TOKEN>": ["<redacted:MY_TOKEN>"], "metadata": {"user": "REDACTED"}})
            ))
        );
        let Some(Body::Base64(b64)) = &ex.response.body else {
            panic!()
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(decoded, b"\x00<redacted:MY_TOKEN>");
        assert_eq!(
            ex.response.events.as_ref().unwrap()[0].data,
            json!({"x": "<redacted:MY_TOKEN>", "metadata": {"user": "REDACTED"}})
        );
    }

    #[test]
    fn scan_finds_each_shape_with_masked_excerpts() {
        let text = format!(
            "clean line\n{{\"k\":\"{OPENAI}\"}}\nsk-ant-api03-abcdefghijklmnopqrstuvwxyz AIzaSyA1234567890abcdefghijklmnopqrstuv\n\
             ghp_abcdefghijklmnopqrstuvwxyz0123456789 xoxb-1234567890-abc\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc\n"
        );
        let found = scan_for_secrets(&text);
        let kinds: Vec<_> = found.iter().map(|f| (f.line, f.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (2, "openai-key"),
                (3, "anthropic-key"),
                (3, "google-api-key"),
                (4, "github-token"),
                (4, "slack-token"),
                (5, "bearer-token"),
            ]
        );
        assert_eq!(found[0].excerpt, "sk-pr… 38 chars");
        for f in &found {
            assert!(f.excerpt.chars().count() < 24, "{f:?}");
        }
    }

    #[test]
    fn scan_ignores_look_alikes() {
        for clean in [
            "task-abcdefghijklmnopqrstuvwxyz",
            "sk-short",
            "<redacted:OPENAI_API_KEY>",
            "Bearer <redacted:TOKEN>",
            "a bearer of bad news arrived",
            "\"key\":\"REDACTED\"",
        ] {
            assert_eq!(scan_for_secrets(clean), vec![], "{clean}");
        }
    }

    #[test]
    fn headers_never_enter_the_key() {
        assert!(!is_match_key_header("x-stainless-retry-count"));
        assert!(!is_match_key_header("idempotency-key"));
    }

    proptest! {
        #[test]
        fn scan_never_panics(text in "\\PC*") {
            let _ = scan_for_secrets(&text);
        }

        #[test]
        fn scan_never_panics_near_key_shapes(text in "(sk-|sk-ant-|AIza|ghp_|xoxb-|Bearer |é|\n|[a-zA-Z0-9_\\-]{0,40})*") {
            for f in scan_for_secrets(&text) {
                prop_assert!(f.line >= 1 && f.line <= text.lines().count());
            }
        }
    }
}
