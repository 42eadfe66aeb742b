//! The fake provider's script: rules matched on the request, each with the
//! replies to serve in turn (`docs/fake-provider.md`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::request::{Api, RequestView};
use crate::error::{Error, Result};

/// A whole script: ordered rules and the reply used when none matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Rules, tried in order; the first whose `when` holds answers.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The reply when no rule matches (a short text reply when absent).
    #[serde(default)]
    pub default: Option<Reply>,
}

/// One rule: a condition and the replies it serves in turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// A name shown in logs and docs; not matched.
    #[serde(default)]
    pub name: Option<String>,
    /// What the request must look like; an empty condition matches everything.
    #[serde(default)]
    pub when: When,
    /// Shorthand for a single reply.
    #[serde(default)]
    pub reply: Option<Reply>,
    /// Replies served in turn to repeated identical requests; the last one repeats.
    #[serde(default)]
    pub replies: Vec<Reply>,
}

/// A rule's condition. Every field given must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// The API called.
    #[serde(default)]
    pub api: Option<Api>,
    /// The requested model, exactly.
    #[serde(default)]
    pub model: Option<String>,
    /// A substring of the first user message.
    #[serde(default)]
    pub first_user_contains: Option<String>,
    /// A substring of the last user message.
    #[serde(default)]
    pub last_user_contains: Option<String>,
    /// A substring of the system prompt / instructions.
    #[serde(default)]
    pub system_contains: Option<String>,
    /// The conversation step: the number of tool results already in the request.
    #[serde(default)]
    pub step: Option<usize>,
    /// Whether the request asked for a stream.
    #[serde(default)]
    pub stream: Option<bool>,
}

/// One reply, rendered into whichever API format was called.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Assistant text (may be combined with tool calls).
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls, in order; several make a parallel tool call.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallReply>,
    /// Token usage to report; estimated from lengths when absent.
    #[serde(default)]
    pub usage: Option<UsageReply>,
    /// The model name to report (defaults to the requested model).
    #[serde(default)]
    pub model: Option<String>,
    /// Why generation stopped (defaults to `tool_calls` when there are tool calls, else `stop`).
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Answer with an HTTP error instead of a completion.
    #[serde(default)]
    pub error: Option<ErrorReply>,
    /// Cut the connection after this many stream events (or half-way through a plain body).
    #[serde(default)]
    pub reset_after_events: Option<usize>,
    /// Wait this long before the first byte.
    #[serde(default)]
    pub delay_ms: u64,
    /// Wait this long between stream events.
    #[serde(default)]
    pub event_delay_ms: u64,
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallReply {
    /// The tool (function) name.
    pub name: String,
    /// The arguments: a JSON object (or a string holding JSON, sent verbatim).
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The call id; derived deterministically from the request when absent.
    #[serde(default)]
    pub id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Token usage in provider-neutral terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageReply {
    /// Input (prompt) tokens, including cached ones.
    #[serde(default)]
    pub input: u64,
    /// Output (completion) tokens, including reasoning ones.
    #[serde(default)]
    pub output: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cached_input: u64,
    /// Input tokens written to the prompt cache (Anthropic).
    #[serde(default)]
    pub cache_write: u64,
    /// Reasoning tokens (part of `output`).
    #[serde(default)]
    pub reasoning: u64,
}

/// Why generation stopped, mapped to each provider's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Natural end (`stop`, `end_turn`, `STOP`).
    #[serde(alias = "end_turn")]
    Stop,
    /// The model asked for tools (`tool_calls`, `tool_use`).
    #[serde(alias = "tool_use")]
    ToolCalls,
    /// The output token limit was hit (`length`, `max_tokens`, `MAX_TOKENS`).
    #[serde(alias = "max_tokens")]
    Length,
}

/// An injected HTTP error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorReply {
    /// The HTTP status (e.g. 429, 500, 529).
    pub status: u16,
    /// The error message (a provider-like default when absent).
    #[serde(default)]
    pub message: Option<String>,
    /// Sent as `retry-after-ms` and `retry-after`, so SDKs retry quickly.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
}

impl Script {
    /// Loads a script from a YAML or JSON file.
    pub fn load(path: &Path) -> Result<Script> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Script::parse_located(&text).map_err(|(line, message)| {
            let location = crate::error::Location {
                path: path.to_path_buf(),
                line: line.map(|(l, _)| l),
                column: line.map(|(_, c)| c),
            };
            Error::other(
                format!("{location}: {message}"),
                Some("see docs/fake-provider.md for the script format".into()),
            )
        })
    }

    /// Parses a script from YAML or JSON text (JSON when the text starts with `{`).
    pub fn parse(text: &str) -> std::result::Result<Script, String> {
        Script::parse_located(text).map_err(|(at, message)| match at {
            Some((line, column)) => format!("{line}:{column}: {message}"),
            None => message,
        })
    }

    /// Like [`Script::parse`], with the error's 1-based (line, column) apart.
    fn parse_located(text: &str) -> std::result::Result<Script, (Option<(usize, usize)>, String)> {
        let script: Script = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| {
                let message = e.to_string();
                // serde_json appends " at line L column C"; the location is reported apart.
                let message = message
                    .rsplit_once(" at line ")
                    .map_or(message.clone(), |(m, _)| m.to_string());
                (Some((e.line(), e.column())), message)
            })?
        } else {
            serde_saphyr::from_str(text).map_err(|e| {
                let at = e
                    .location()
                    .map(|l| (l.line() as usize, l.column() as usize));
                // The first line is the message; the rest is a source snippet we don't need.
                let text = e.without_snippet().to_string();
                let first = text.lines().next().unwrap_or("invalid YAML");
                let first = first.trim_start_matches("error: ");
                let message = match first.strip_prefix("line ") {
                    Some(rest) => rest.split_once(": ").map_or(first, |(_, m)| m),
                    None => first,
                };
                let message = message.rsplit_once(" at line ").map_or(message, |(m, _)| m);
                (at, message.to_string())
            })?
        };
        script.check().map_err(|m| (None, m))?;
        Ok(script)
    }

    fn check(&self) -> std::result::Result<(), String> {
        for (i, rule) in self.rules.iter().enumerate() {
            let label = rule.name.clone().unwrap_or_else(|| format!("rules[{i}]"));
            if rule.reply.is_some() != rule.replies.is_empty() {
                return Err(format!(
                    "{label}: give exactly one of `reply` or `replies` (non-empty)"
                ));
            }
        }
        Ok(())
    }
}

impl Rule {
    fn reply_at(&self, turn: usize) -> Option<&Reply> {
        match &self.reply {
            Some(reply) => Some(reply),
            None => self.replies.get(turn).or_else(|| self.replies.last()),
        }
    }
}

impl When {
    /// Whether `request` satisfies every given condition.
    pub fn matches(&self, request: &RequestView) -> bool {
        let contains = |hay: &Option<String>, needle: &Option<String>| match needle {
            None => true,
            Some(needle) => hay.as_deref().is_some_and(|h| h.contains(needle.as_str())),
        };
        self.api.is_none_or(|api| api == request.api)
            && self
                .model
                .as_ref()
                .is_none_or(|m| request.model.as_deref() == Some(m.as_str()))
            && contains(&request.first_user, &self.first_user_contains)
            && contains(&request.last_user, &self.last_user_contains)
            && contains(&request.system, &self.system_contains)
            && self.step.is_none_or(|s| s == request.tool_results)
            && self.stream.is_none_or(|s| s == request.stream)
    }
}

/// The reply chosen for one request, with what makes its ids deterministic.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The reply to render.
    pub reply: Reply,
    /// Which rule answered (`None`: the default).
    pub rule: Option<usize>,
    /// How many identical requests this rule answered before this one.
    pub turn: usize,
}

/// A script plus the turn counters that make repeated identical requests get
/// successive replies. Counters are keyed by (rule, canonical request body), so
/// the choice for one request never depends on other, concurrent requests.
#[derive(Debug)]
pub struct Scripted {
    script: Script,
    turns: Mutex<HashMap<(usize, String), usize>>,
}

impl Scripted {
    /// Wraps a script with fresh counters.
    pub fn new(script: Script) -> Self {
        Scripted {
            script,
            turns: Mutex::new(HashMap::new()),
        }
    }

    /// Chooses the reply for `request` and advances that rule's counter.
    pub fn choose(&self, request: &RequestView) -> Chosen {
        for (index, rule) in self.script.rules.iter().enumerate() {
            if !rule.when.matches(request) {
                continue;
            }
            let turn = {
                // A poisoned lock only means another request panicked; the map is still usable.
                let mut turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
                let counter = turns.entry((index, request.canonical.clone())).or_insert(0);
                let turn = *counter;
                *counter += 1;
                turn
            };
            if let Some(reply) = rule.reply_at(turn) {
                return Chosen {
                    reply: reply.clone(),
                    rule: Some(index),
                    turn,
                };
            }
        }
        Chosen {
            reply: self.script.default.clone().unwrap_or_else(|| Reply {
                text: Some("This is the fake provider's default reply.".into()),
                ..Reply::default()
            }),
            rule: None,
            turn: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(body: Value) -> RequestView {
        RequestView::parse(Api::OpenAiChat, &body, None)
    }

    const SCRIPT: &str = r#"
rules:
  - name: weather first call
    when: {first_user_contains: weather, step: 0}
    reply:
      tool_calls: [{name: get_weather, arguments: {city: Paris}}]
  - when: {first_user_contains: weather}
    replies:
      - text: first
      - text: second
default:
  text: fallback
"#;

    #[test]
    fn rules_match_on_user_text_and_step() {
        let s = Scripted::new(Script::parse(SCRIPT).unwrap());
        let step0 = view(json!({"messages":[{"role":"user","content":"weather in Paris?"}]}));
        let chosen = s.choose(&step0);
        assert_eq!(chosen.rule, Some(0));
        assert_eq!(chosen.reply.tool_calls[0].name, "get_weather");
        let other = view(json!({"messages":[{"role":"user","content":"hello"}]}));
        assert_eq!(s.choose(&other).reply.text.as_deref(), Some("fallback"));
    }

    #[test]
    fn repeated_identical_requests_get_replies_in_turn_then_the_last() {
        let s = Scripted::new(Script::parse(SCRIPT).unwrap());
        let step1 = view(json!({"messages":[
            {"role":"user","content":"weather?"},
            {"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"c","content":"sunny"}]}));
        let texts: Vec<_> = (0..3)
            .map(|_| s.choose(&step1).reply.text.unwrap())
            .collect();
        assert_eq!(texts, ["first", "second", "second"]);
        // A different request on the same rule has its own counter.
        let mut other = step1.clone();
        other.canonical.push('x');
        assert_eq!(s.choose(&other).reply.text.as_deref(), Some("first"));
    }

    #[test]
    fn a_rule_needs_exactly_one_of_reply_or_replies() {
        let err = Script::parse("rules: [{when: {}}]").unwrap_err();
        assert!(err.contains("exactly one"), "{err}");
        assert!(Script::parse(r#"{"rules":[{"reply":{"text":"x"}}]}"#).is_ok());
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(Script::parse("rules: [{reply: {txt: x}}]").is_err());
    }
}
