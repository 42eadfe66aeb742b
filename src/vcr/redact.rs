//! Secrets never reach disk: header allow-lists, volatile headers, secret query
//! parameters, environment secret values and a final key-shape scan.

use std::collections::BTreeMap;

use super::cassette::Exchange;

/// Removes secrets from what is recorded.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<(String, String)>,
    redact_body_fields: Vec<String>,
}

impl Redactor {
    /// Snapshots the values of environment secrets (names ending `_KEY`/`_TOKEN`/`_SECRET` or containing `PASSWORD`).
    pub fn from_env(redact_body_fields: &[String]) -> Self {
        let _ = redact_body_fields;
        todo!()
    }

    /// A redactor over explicit `(NAME, value)` secrets, for tests.
    pub fn from_pairs(secrets: Vec<(String, String)>, redact_body_fields: &[String]) -> Self {
        let _ = (secrets, redact_body_fields);
        todo!()
    }

    /// The allow-listed request headers, names lower case.
    pub fn request_headers(&self, headers: &http::HeaderMap) -> BTreeMap<String, String> {
        let _ = (headers, &self.secrets, &self.redact_body_fields);
        todo!()
    }

    /// The allow-listed response headers minus volatile ones; never content-encoding/length.
    pub fn response_headers(&self, headers: &http::HeaderMap) -> BTreeMap<String, String> {
        let _ = headers;
        todo!()
    }

    /// The URL with secret query parameters replaced by `REDACTED`.
    pub fn url(&self, url: &str) -> String {
        let _ = url;
        todo!()
    }

    /// Replaces environment secret values everywhere by `<redacted:NAME>` and redacts configured body fields.
    pub fn scrub_exchange(&self, exchange: &mut Exchange) {
        let _ = exchange;
        todo!()
    }
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

/// Finds known key shapes (`sk-…`, `sk-ant-…`, `AIza…`, `ghp_…`, `xox?-…`, `Bearer <token>`).
pub fn scan_for_secrets(text: &str) -> Vec<SecretFinding> {
    let _ = text;
    todo!()
}

/// False for request headers that never enter the match key (`x-stainless-*`, idempotency keys, …).
pub fn is_match_key_header(name: &str) -> bool {
    let _ = name;
    todo!()
}
