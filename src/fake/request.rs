//! What the fake provider reads from a request: which API was called (the one
//! route table), and the facts a script matches on.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The provider APIs the fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    #[serde(rename = "openai_chat")]
    OpenAiChat,
    /// OpenAI Responses (`POST /v1/responses`).
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// Gemini `models/{model}:generateContent` and `:streamGenerateContent`.
    Gemini,
}

/// How a request wants its answer delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// One JSON body.
    Plain,
    /// Server-sent events.
    Sse,
    /// Gemini's `streamGenerateContent` without `alt=sse`: a streamed JSON array.
    JsonArray,
}

/// One endpoint the fake serves: a path suffix and its API.
struct Route {
    suffix: &'static str,
    api: Api,
}

/// The route table. Suffixes, so `/v1/…`, `/openai/v1/…` and bare paths all work;
/// Gemini's model-in-path endpoints are handled by [`route`] itself.
const ROUTES: &[Route] = &[
    Route {
        suffix: "/chat/completions",
        api: Api::OpenAiChat,
    },
    Route {
        suffix: "/responses",
        api: Api::OpenAiResponses,
    },
    Route {
        suffix: "/messages",
        api: Api::Anthropic,
    },
];

/// The API and (for Gemini) model and streaming mode a request path selects.
pub fn route(path: &str) -> Option<(Api, Option<String>, Option<Delivery>)> {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    if let Some((prefix, method)) = path.rsplit_once(':') {
        let model = prefix.rsplit_once("/models/").map(|(_, m)| m.to_string())?;
        let sse = query.split('&').any(|kv| kv == "alt=sse");
        return match method {
            "generateContent" => Some((Api::Gemini, Some(model), Some(Delivery::Plain))),
            "streamGenerateContent" if sse => Some((Api::Gemini, Some(model), Some(Delivery::Sse))),
            "streamGenerateContent" => Some((Api::Gemini, Some(model), Some(Delivery::JsonArray))),
            _ => None,
        };
    }
    ROUTES
        .iter()
        .find(|r| path.ends_with(r.suffix))
        .map(|r| (r.api, None, None))
}

/// The facts of a request that scripts match on and replies are rendered from.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestView {
    /// The API called.
    pub api: Api,
    /// The requested model.
    pub model: Option<String>,
    /// Whether the answer is streamed.
    pub stream: bool,
    /// OpenAI Chat: `stream_options.include_usage`.
    pub include_usage: bool,
    /// Text of the first user message.
    pub first_user: Option<String>,
    /// Text of the last user message.
    pub last_user: Option<String>,
    /// The system prompt / instructions.
    pub system: Option<String>,
    /// Tool results already in the conversation: the conversation step.
    pub tool_results: usize,
    /// The body with sorted keys: identical requests have identical text.
    pub canonical: String,
    /// The parsed body.
    pub body: Value,
}

impl RequestView {
    /// Reads the facts from a parsed JSON body. `gemini_model` is the model from a Gemini path.
    pub fn parse(api: Api, body: &Value, gemini_model: Option<String>) -> RequestView {
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let model =
            gemini_model.or_else(|| body.get("model").and_then(Value::as_str).map(String::from));
        let (users, system, tool_results) = match api {
            Api::OpenAiChat => openai_chat_facts(body),
            Api::OpenAiResponses => responses_facts(body),
            Api::Anthropic => anthropic_facts(body),
            Api::Gemini => gemini_facts(body),
        };
        RequestView {
            api,
            model,
            stream,
            include_usage,
            first_user: users.first().cloned(),
            last_user: users.last().cloned(),
            system,
            tool_results,
            // serde_json's map is a BTreeMap here, so keys come out sorted.
            canonical: body.to_string(),
            body: body.clone(),
        }
    }
}

/// Text of a message `content`: a string, or the `text` of each part joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn array<'a>(body: &'a Value, key: &str) -> &'a [Value] {
    body.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

fn openai_chat_facts(body: &Value) -> (Vec<String>, Option<String>, usize) {
    let messages = array(body, "messages");
    let users = messages
        .iter()
        .filter(|m| role(m) == Some("user"))
        .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
        .collect();
    let system = messages
        .iter()
        .find(|m| matches!(role(m), Some("system" | "developer")))
        .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)));
    let tools = messages.iter().filter(|m| role(m) == Some("tool")).count();
    (users, system, tools)
}

fn responses_facts(body: &Value) -> (Vec<String>, Option<String>, usize) {
    let system = body
        .get("instructions")
        .and_then(Value::as_str)
        .map(String::from);
    match body.get("input") {
        Some(Value::String(s)) => (vec![s.clone()], system, 0),
        Some(Value::Array(items)) => {
            let users = items
                .iter()
                .filter(|i| role(i) == Some("user"))
                .map(|i| content_text(i.get("content").unwrap_or(&Value::Null)))
                .collect();
            let tools = items
                .iter()
                .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call_output"))
                .count();
            (users, system, tools)
        }
        _ => (Vec::new(), system, 0),
    }
}

fn anthropic_facts(body: &Value) -> (Vec<String>, Option<String>, usize) {
    let system = body.get("system").map(content_text);
    let mut users = Vec::new();
    let mut tools = 0;
    for message in array(body, "messages")
        .iter()
        .filter(|m| role(m) == Some("user"))
    {
        let content = message.get("content").unwrap_or(&Value::Null);
        let results = content
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                    .count()
            })
            .unwrap_or(0);
        tools += results;
        // A user turn holding only tool results is not a user message in the script's sense.
        let text = content_text(content);
        if results == 0 || !text.is_empty() {
            users.push(text);
        }
    }
    (users, system, tools)
}

fn gemini_facts(body: &Value) -> (Vec<String>, Option<String>, usize) {
    let system = body
        .get("systemInstruction")
        .or_else(|| body.get("system_instruction"))
        .map(|s| content_text(s.get("parts").unwrap_or(&Value::Null)));
    let mut users = Vec::new();
    let mut tools = 0;
    for content in array(body, "contents") {
        // Gemini lets `role` be omitted for user turns.
        if !matches!(role(content), None | Some("user")) {
            continue;
        }
        let parts = array(content, "parts");
        let results = parts
            .iter()
            .filter(|p| p.get("functionResponse").is_some() || p.get("function_response").is_some())
            .count();
        tools += results;
        if results == 0 {
            users.push(content_text(content.get("parts").unwrap_or(&Value::Null)));
        }
    }
    (users, system, tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes_select_the_api() {
        assert_eq!(
            route("/v1/chat/completions").map(|r| r.0),
            Some(Api::OpenAiChat)
        );
        assert_eq!(
            route("/openai/v1/responses").map(|r| r.0),
            Some(Api::OpenAiResponses)
        );
        assert_eq!(
            route("/v1/messages?beta=true").map(|r| r.0),
            Some(Api::Anthropic)
        );
        assert_eq!(
            route("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
            Some((
                Api::Gemini,
                Some("gemini-2.5-flash".into()),
                Some(Delivery::Sse)
            ))
        );
        assert_eq!(
            route("/v1beta/models/g:streamGenerateContent").and_then(|r| r.2),
            Some(Delivery::JsonArray)
        );
        assert_eq!(route("/v1/embeddings"), None);
        assert_eq!(route("/v1beta/models/g:countTokens"), None);
    }

    #[test]
    fn steps_count_tool_results_per_api() {
        let chat = json!({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"q"},
            {"role":"tool","content":"a"},{"role":"tool","content":"b"}],"stream":true,
            "stream_options":{"include_usage":true}});
        let v = RequestView::parse(Api::OpenAiChat, &chat, None);
        assert_eq!((v.tool_results, v.stream, v.include_usage), (2, true, true));
        assert_eq!(v.system.as_deref(), Some("be brief"));

        let responses = json!({"input":[{"role":"user","content":[{"type":"input_text","text":"q"}]},
            {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
            {"type":"function_call_output","call_id":"c","output":"x"}]});
        let v = RequestView::parse(Api::OpenAiResponses, &responses, None);
        assert_eq!((v.first_user.as_deref(), v.tool_results), (Some("q"), 1));

        let anthropic = json!({"system":"sys","messages":[{"role":"user","content":"first"},
            {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]});
        let v = RequestView::parse(Api::Anthropic, &anthropic, None);
        assert_eq!((v.last_user.as_deref(), v.tool_results), (Some("first"), 1));

        let gemini = json!({"contents":[{"role":"user","parts":[{"text":"hi"}]},
            {"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},
            {"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]});
        let v = RequestView::parse(Api::Gemini, &gemini, Some("g".into()));
        assert_eq!(
            (v.first_user.as_deref(), v.tool_results, v.model.as_deref()),
            (Some("hi"), 1, Some("g"))
        );
    }
}
