//! A plain hyper + rustls client for tests: no SDK, just the wire.

use std::path::Path;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// What came back: status, protocol, headers, and the body or the error that cut it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub version: http::Version,
    pub headers: http::HeaderMap,
    pub body: Result<Bytes, String>,
}

impl Reply {
    /// The body, panicking with the transport error when it was cut.
    pub fn bytes(&self) -> &Bytes {
        match &self.body {
            Ok(b) => b,
            Err(e) => panic!("body was cut: {e}"),
        }
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(self.bytes()).expect("JSON body")
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.bytes().to_vec()).expect("UTF-8 body")
    }

    /// A header value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Which protocols the client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// http/1.1 only.
    H1,
    /// h2 and http/1.1 via ALPN (h2 prior knowledge for plain http).
    H2,
}

/// POSTs `body` as JSON to `url`, trusting `ca` (a PEM file) besides the system roots.
pub async fn post_json(url: &str, body: &Value, ca: Option<&Path>, proto: Proto) -> Reply {
    request("POST", url, Some(body.to_string()), ca, proto).await
}

/// Sends one request.
pub async fn request(
    method: &str,
    url: &str,
    body: Option<String>,
    ca: Option<&Path>,
    proto: Proto,
) -> Reply {
    let extra: Vec<std::path::PathBuf> = ca.map(|p| p.to_path_buf()).into_iter().collect();
    let mut config = (*agentci::tls::client_config(&extra).expect("client TLS config")).clone();
    // hyper-rustls sets ALPN itself from the enabled versions.
    config.alpn_protocols.clear();
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http();
    let connector = match proto {
        Proto::H1 => builder.enable_http1().build(),
        Proto::H2 => builder.enable_all_versions().build(),
    };
    let mut client = Client::builder(TokioExecutor::new());
    if proto == Proto::H2 && url.starts_with("http://") {
        client.http2_only(true);
    }
    let client = client.build::<_, Full<Bytes>>(connector);
    let request = http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .expect("request");
    let response = client.request(request).await.expect("response head");
    let status = response.status().as_u16();
    let version = response.version();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| format!("{e:?}"));
    Reply {
        status,
        version,
        headers,
        body,
    }
}

/// One parsed server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
}

impl Event {
    /// The data as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

/// Splits an SSE body into events (LF or CRLF framing).
pub fn sse_events(text: &str) -> Vec<Event> {
    let text = text.replace("\r\n", "\n");
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push(v);
                }
            }
            Event {
                event,
                data: data.join("\n"),
            }
        })
        .collect()
}
