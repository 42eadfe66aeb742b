//! The judge's provider client: OpenAI Chat Completions and Anthropic Messages
//! over the shared rustls stack. Keys are read once and never written anywhere.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::error::{Error, Result};

/// Replies larger than this are refused; a verdict is a few hundred bytes.
const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;
/// Output budget for one verdict.
const MAX_OUTPUT_TOKENS: u32 = 1024;

/// Which API a judge model is called through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgeProvider {
    /// OpenAI Chat Completions (and compatible gateways).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// `claude-*` models go to Anthropic; everything else to OpenAI Chat Completions.
pub fn provider_for(model: &str) -> JudgeProvider {
    let bare = model.rsplit('/').next().unwrap_or(model);
    if bare.starts_with("claude") {
        JudgeProvider::Anthropic
    } else {
        JudgeProvider::OpenAi
    }
}

/// Where and how the judge reaches its providers.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// OpenAI base URL including `/v1` (the SDK convention).
    pub openai_base_url: String,
    /// Anthropic base URL without `/v1` (the SDK convention).
    pub anthropic_base_url: String,
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<String>,
    /// `ANTHROPIC_API_KEY`.
    pub anthropic_api_key: Option<String>,
    /// Extra CA certificates (PEM files) to trust, e.g. a corporate gateway's or a test CA.
    pub extra_ca: Vec<PathBuf>,
    /// Per-request timeout.
    pub timeout: Duration,
}

impl Default for Endpoints {
    fn default() -> Self {
        Endpoints {
            openai_base_url: "https://api.openai.com/v1".to_string(),
            anthropic_base_url: "https://api.anthropic.com".to_string(),
            openai_api_key: None,
            anthropic_api_key: None,
            extra_ca: Vec::new(),
            timeout: Duration::from_secs(60),
        }
    }
}

impl Endpoints {
    /// Defaults overridden by `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let defaults = Endpoints::default();
        Endpoints {
            openai_base_url: var("OPENAI_BASE_URL").unwrap_or(defaults.openai_base_url),
            anthropic_base_url: var("ANTHROPIC_BASE_URL").unwrap_or(defaults.anthropic_base_url),
            openai_api_key: var("OPENAI_API_KEY"),
            anthropic_api_key: var("ANTHROPIC_API_KEY"),
            ..defaults
        }
    }
}

/// One chat turn of the judge conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

/// A judge model's reply and its token use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The assistant text.
    pub text: String,
    /// Input tokens reported by the provider.
    pub input_tokens: u64,
    /// Output tokens reported by the provider.
    pub output_tokens: u64,
}

/// What one completion request asks for.
#[derive(Debug, Clone)]
pub struct CompletionRequest<'a> {
    /// The judge model.
    pub model: &'a str,
    /// Sampling temperature.
    pub temperature: f64,
    /// Ask for JSON output where the API supports it.
    pub structured: bool,
    /// The system prompt.
    pub system: &'a str,
    /// The conversation.
    pub turns: &'a [Turn],
}

/// An HTTPS client for the judge providers.
pub struct JudgeClient {
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    endpoints: Endpoints,
}

impl std::fmt::Debug for JudgeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Keys stay out of debug output.
        f.debug_struct("JudgeClient")
            .field("openai_base_url", &self.endpoints.openai_base_url)
            .field("anthropic_base_url", &self.endpoints.anthropic_base_url)
            .finish_non_exhaustive()
    }
}

impl JudgeClient {
    /// Builds the client on the shared TLS stack (system roots plus `extra_ca`).
    pub fn new(endpoints: Endpoints) -> Result<JudgeClient> {
        for base in [&endpoints.openai_base_url, &endpoints.anthropic_base_url] {
            check_base_url(base)?;
        }
        let mut tls = (*crate::tls::client_config(&endpoints.extra_ca)?).clone();
        // hyper-rustls sets ALPN itself from the enabled HTTP versions (and panics if preset).
        tls.alpn_protocols.clear();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let http = Client::builder(TokioExecutor::new()).build(connector);
        Ok(JudgeClient { http, endpoints })
    }

    /// Sends one completion request; transport failures, 429 and 5xx are retried once.
    pub async fn complete(&self, request: &CompletionRequest<'_>) -> Result<Completion> {
        match self.complete_once(request).await {
            Ok(c) => Ok(c),
            Err(Attempt::Retryable(first, wait)) => {
                tokio::time::sleep(wait).await;
                self.complete_once(request).await.map_err(|e| match e {
                    Attempt::Retryable(msg, _) | Attempt::Fatal(msg) => {
                        Error::Judge(format!("{msg} (after one retry; first attempt: {first})"))
                    }
                })
            }
            Err(Attempt::Fatal(msg)) => Err(Error::Judge(msg)),
        }
    }

    async fn complete_once(&self, request: &CompletionRequest<'_>) -> Result<Completion, Attempt> {
        let provider = provider_for(request.model);
        let ProviderRequest { url, body, headers } =
            self.build(provider, request).map_err(Attempt::Fatal)?;
        let mut builder = http::Request::post(&url).header("content-type", "application/json");
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let http_request = builder
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| Attempt::Fatal(format!("cannot build the request to {url}: {e}")))?;
        let response =
            tokio::time::timeout(self.endpoints.timeout, self.http.request(http_request))
                .await
                .map_err(|_| {
                    Attempt::Retryable(
                        format!("{url}: no response within {:?}", self.endpoints.timeout),
                        Duration::from_millis(200),
                    )
                })?
                .map_err(|e| {
                    Attempt::Retryable(
                        format!("{url}: {}", error_chain(&e)),
                        Duration::from_millis(200),
                    )
                })?;
        let status = response.status();
        let wait = retry_after(response.headers());
        let bytes = tokio::time::timeout(
            self.endpoints.timeout,
            Limited::new(response.into_body(), MAX_REPLY_BYTES).collect(),
        )
        .await
        .map_err(|_| Attempt::Retryable(format!("{url}: body timed out"), wait))?
        .map_err(|e| Attempt::Retryable(format!("{url}: reading the body: {e}"), wait))?
        .to_bytes();
        if status.as_u16() == 429 || status.is_server_error() {
            return Err(Attempt::Retryable(
                format!("{url}: HTTP {status}: {}", excerpt(&bytes)),
                wait,
            ));
        }
        if !status.is_success() {
            return Err(Attempt::Fatal(format!(
                "{url}: HTTP {status}: {}",
                excerpt(&bytes)
            )));
        }
        let json: Value = serde_json::from_slice(&bytes).map_err(|e| {
            Attempt::Fatal(format!(
                "{url}: the response is not JSON ({e}): {}",
                excerpt(&bytes)
            ))
        })?;
        parse_completion(provider, &json).ok_or_else(|| {
            Attempt::Fatal(format!(
                "{url}: unexpected response shape: {}",
                excerpt(&bytes)
            ))
        })
    }

    fn build(
        &self,
        provider: JudgeProvider,
        r: &CompletionRequest<'_>,
    ) -> Result<ProviderRequest, String> {
        let missing_key = |var: &str| {
            format!(
                "{var} is not set; it is needed to judge with {} (or commit the verdict cache cassettes/<agent>/<case>.judge.jsonl so replay needs no key)",
                r.model
            )
        };
        match provider {
            JudgeProvider::OpenAi => {
                let key = self
                    .endpoints
                    .openai_api_key
                    .as_deref()
                    .ok_or_else(|| missing_key("OPENAI_API_KEY"))?;
                let mut messages = vec![json!({"role": "system", "content": r.system})];
                messages.extend(
                    r.turns
                        .iter()
                        .map(|t| json!({"role": t.role, "content": t.content})),
                );
                let mut body = json!({
                    "model": r.model,
                    "temperature": r.temperature,
                    "max_tokens": MAX_OUTPUT_TOKENS,
                    "messages": messages,
                });
                if r.structured {
                    body["response_format"] = json!({"type": "json_object"});
                }
                let url = format!(
                    "{}/chat/completions",
                    self.endpoints.openai_base_url.trim_end_matches('/')
                );
                Ok(ProviderRequest {
                    url,
                    body,
                    headers: vec![("authorization", format!("Bearer {key}"))],
                })
            }
            JudgeProvider::Anthropic => {
                let key = self
                    .endpoints
                    .anthropic_api_key
                    .as_deref()
                    .ok_or_else(|| missing_key("ANTHROPIC_API_KEY"))?;
                let messages: Vec<Value> = r
                    .turns
                    .iter()
                    .map(|t| json!({"role": t.role, "content": t.content}))
                    .collect();
                let body = json!({
                    "model": r.model,
                    "temperature": r.temperature,
                    "max_tokens": MAX_OUTPUT_TOKENS,
                    "system": r.system,
                    "messages": messages,
                });
                let url = format!(
                    "{}/v1/messages",
                    self.endpoints.anthropic_base_url.trim_end_matches('/')
                );
                Ok(ProviderRequest {
                    url,
                    body,
                    headers: vec![
                        ("x-api-key", key.to_string()),
                        ("anthropic-version", "2023-06-01".to_string()),
                    ],
                })
            }
        }
    }
}

/// The provider-specific URL, body and auth headers of one call.
struct ProviderRequest {
    url: String,
    body: Value,
    headers: Vec<(&'static str, String)>,
}

/// A failed attempt: worth retrying (with the wait) or not.
enum Attempt {
    Retryable(String, Duration),
    Fatal(String),
}

/// Plain HTTP is allowed only to loopback (tests, local gateways): keys must not cross a network in clear.
fn check_base_url(base: &str) -> Result<()> {
    let url = url::Url::parse(base)
        .map_err(|e| Error::Judge(format!("invalid judge base URL {base:?}: {e}")))?;
    let loopback = matches!(
        url.host_str(),
        Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
    );
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        other => Err(Error::Judge(format!(
            "judge base URL {base:?} uses {other}://; only https:// (or http:// to loopback) is allowed"
        ))),
    }
}

fn parse_completion(provider: JudgeProvider, json: &Value) -> Option<Completion> {
    match provider {
        JudgeProvider::OpenAi => {
            let text = json
                .pointer("/choices/0/message/content")
                .and_then(Value::as_str)?
                .to_string();
            let usage = json.get("usage");
            let n = |k: &str| {
                usage
                    .and_then(|u| u.get(k))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            Some(Completion {
                text,
                input_tokens: n("prompt_tokens"),
                output_tokens: n("completion_tokens"),
            })
        }
        JudgeProvider::Anthropic => {
            let blocks = json.get("content")?.as_array()?;
            let text: String = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("");
            let usage = json.get("usage");
            let n = |k: &str| {
                usage
                    .and_then(|u| u.get(k))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            Some(Completion {
                text,
                input_tokens: n("input_tokens")
                    + n("cache_read_input_tokens")
                    + n("cache_creation_input_tokens"),
                output_tokens: n("output_tokens"),
            })
        }
    }
}

/// Honors `retry-after-ms` / `retry-after`, bounded so a CI run never stalls on one verdict.
fn retry_after(headers: &http::HeaderMap) -> Duration {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let ms = header("retry-after-ms")
        .or_else(|| header("retry-after").map(|s| s * 1000.0))
        .unwrap_or(500.0);
    Duration::from_millis(ms.clamp(0.0, 5000.0) as u64)
}

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        out.push('…');
    }
    out
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        out.push_str(": ");
        out.push_str(&e.to_string());
        source = e.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_route_by_name() {
        assert_eq!(provider_for("claude-sonnet-4-5"), JudgeProvider::Anthropic);
        assert_eq!(
            provider_for("anthropic/claude-3-5-haiku"),
            JudgeProvider::Anthropic
        );
        assert_eq!(provider_for("gpt-4o-mini"), JudgeProvider::OpenAi);
        assert_eq!(provider_for("llama-3"), JudgeProvider::OpenAi);
    }

    #[test]
    fn plain_http_only_to_loopback() {
        assert!(check_base_url("https://api.openai.com/v1").is_ok());
        assert!(check_base_url("http://127.0.0.1:8080/v1").is_ok());
        assert!(check_base_url("http://gateway.example/v1").is_err());
        assert!(check_base_url("not a url").is_err());
    }

    #[test]
    fn completions_parse_per_provider() {
        let openai = json!({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}});
        let c = parse_completion(JudgeProvider::OpenAi, &openai);
        assert_eq!(
            c.map(|c| (c.text, c.input_tokens, c.output_tokens)),
            Some(("hi".into(), 3, 1))
        );
        let anthropic = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "usage": {"input_tokens": 5, "output_tokens": 2}});
        let c = parse_completion(JudgeProvider::Anthropic, &anthropic);
        assert_eq!(c.map(|c| c.text), Some("ab".into()));
        assert!(parse_completion(JudgeProvider::OpenAi, &json!({})).is_none());
    }
}
