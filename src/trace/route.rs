//! Which API an exchange spoke, from its URL: the one table of LLM endpoints
//! the derivation recognises.

use super::Provider;

/// What an exchange is, for the derivation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A call to a model.
    Llm(Provider),
    /// The OpenAI Agents SDK uploading its own trace: not an LLM call.
    AgentsTraceUpload,
    /// Anything else the agent talked to.
    Other,
}

/// Classifies a request by method and absolute URL. The cassette stores the
/// upstream URL even when the agent came in through the proxy's base-URL
/// routes, so the path is what identifies the API; the host only settles
/// ambiguous paths.
pub fn classify(method: &str, url: &str) -> Route {
    let (host, path) = host_and_path(url);
    classify_parts(method, &host, &path)
}

/// [`classify`] of a URL already split by [`host_and_path`]: derivation needs
/// the parts anyway, so each URL is parsed once rather than twice.
pub(crate) fn classify_parts(method: &str, host: &str, path: &str) -> Route {
    if !method.eq_ignore_ascii_case("POST") {
        return Route::Other;
    }
    let path = path.trim_end_matches('/');
    if path.ends_with("/traces/ingest") {
        return Route::AgentsTraceUpload;
    }
    if path.ends_with("/chat/completions") {
        return Route::Llm(Provider::OpenaiChat);
    }
    if path.ends_with("/responses") {
        return Route::Llm(Provider::OpenaiResponses);
    }
    // `/v1/messages/count_tokens` and batches are not generations.
    if path.ends_with("/v1/messages") || (path.ends_with("/messages") && host.contains("anthropic"))
    {
        return Route::Llm(Provider::Anthropic);
    }
    // Gemini API (`/v1beta/models/M:generateContent`) and Vertex AI
    // (`…/publishers/google/models/M:streamGenerateContent`).
    if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
        return Route::Llm(Provider::Gemini);
    }
    Route::Other
}

/// Splits an absolute URL into host (with a non-default port) and path, without the query.
pub(crate) fn host_and_path(url: &str) -> (String, String) {
    match url::Url::parse(url) {
        Ok(u) => {
            let host = u.host_str().unwrap_or_default().to_string();
            let host = match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            };
            (host, u.path().to_string())
        }
        // A relative or broken URL: keep what is there rather than lose the call.
        Err(_) => {
            let path = url.split(['?', '#']).next().unwrap_or_default();
            (String::new(), path.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let llm = |u| classify("POST", u);
        assert_eq!(
            llm("https://api.openai.com/v1/chat/completions"),
            Route::Llm(Provider::OpenaiChat)
        );
        assert_eq!(
            llm(
                "https://my-resource.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"
            ),
            Route::Llm(Provider::OpenaiChat)
        );
        assert_eq!(
            llm("https://api.openai.com/v1/responses"),
            Route::Llm(Provider::OpenaiResponses)
        );
        assert_eq!(
            llm("https://api.anthropic.com/v1/messages"),
            Route::Llm(Provider::Anthropic)
        );
        assert_eq!(
            llm("https://api.anthropic.com/v1/messages/count_tokens"),
            Route::Other
        );
        assert_eq!(
            llm(
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
            ),
            Route::Llm(Provider::Gemini)
        );
        assert_eq!(
            llm("https://api.openai.com/v1/traces/ingest"),
            Route::AgentsTraceUpload
        );
        assert_eq!(
            classify("GET", "https://api.openai.com/v1/responses"),
            Route::Other
        );
        assert_eq!(llm("https://api.search.example/q"), Route::Other);
        assert_eq!(llm("not a url"), Route::Other);
    }
}
