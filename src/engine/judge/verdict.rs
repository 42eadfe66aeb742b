//! Parsing a judge's reply into a [`Verdict`]: the whole reply as JSON, else a
//! fenced block, else the first balanced `{…}` in surrounding prose.

use serde_json::Value;

use crate::engine::result::{Verdict, VerdictLabel};

/// Parses a verdict from a model reply; `Err` says why, for the retry prompt and the error.
pub fn parse(reply: &str) -> Result<Verdict, String> {
    let mut last_error = "no JSON object found in the reply".to_string();
    for candidate in candidates(reply) {
        match serde_json::from_str::<Value>(candidate) {
            Ok(Value::Object(map)) => match from_object(&map) {
                Ok(verdict) => return Ok(verdict),
                Err(e) => last_error = e,
            },
            Ok(_) => last_error = "the JSON is not an object".to_string(),
            Err(_) => {}
        }
    }
    Err(last_error)
}

/// Places a verdict may hide, most specific first.
fn candidates(reply: &str) -> Vec<&str> {
    let mut out = vec![reply.trim()];
    // Fenced blocks: ```json … ``` or ``` … ```.
    let mut rest = reply;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(0, |i| i + 1);
        let Some(end) = after[body_start..].find("```") else {
            break;
        };
        out.push(after[body_start..body_start + end].trim());
        rest = &after[body_start + end + 3..];
    }
    // Balanced objects anywhere in the text, tracking strings so braces in the
    // rationale do not confuse the scan.
    for (start, _) in reply.match_indices('{') {
        if let Some(len) = balanced_len(&reply[start..]) {
            out.push(&reply[start..start + len]);
        }
    }
    out
}

/// The byte length of the balanced `{…}` at the start of `text`, if it closes.
fn balanced_len(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

fn from_object(map: &serde_json::Map<String, Value>) -> Result<Verdict, String> {
    let score = match map.get("score") {
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .ok_or_else(|| format!("score {n} is not a whole number"))?,
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("score {s:?} is not a number"))?,
        Some(other) => return Err(format!("score {other} is not a number")),
        None => return Err("the verdict has no \"score\"".to_string()),
    };
    if !(1.0..=5.0).contains(&score) || score.fract() != 0.0 {
        return Err(format!("score {score} is not an integer from 1 to 5"));
    }
    let score = score as u8;
    let label = match map.get("label").and_then(Value::as_str) {
        Some(s) => match s.trim().to_ascii_lowercase().as_str() {
            "pass" | "passed" => VerdictLabel::Pass,
            "fail" | "failed" => VerdictLabel::Fail,
            "borderline" => VerdictLabel::Borderline,
            other => return Err(format!("label {other:?} is not pass, fail or borderline")),
        },
        // A missing label is read from the score, on the same 1–5 anchors.
        None => match score {
            4 | 5 => VerdictLabel::Pass,
            3 => VerdictLabel::Borderline,
            _ => VerdictLabel::Fail,
        },
    };
    let rationale = map
        .get("rationale")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();
    Ok(Verdict {
        rationale,
        score,
        label,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Verdict {
        parse(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    #[test]
    fn plain_json() {
        let v = ok(r#"{"rationale": "declines", "score": 5, "label": "pass"}"#);
        assert_eq!((v.score, v.label), (5, VerdictLabel::Pass));
        assert_eq!(v.rationale, "declines");
    }

    #[test]
    fn fenced_json_with_prose() {
        let v = ok(
            "Here you go:\n```json\n{\"rationale\": \"meh {x}\", \"score\": 3, \"label\": \"Borderline\"}\n```\nThanks",
        );
        assert_eq!((v.score, v.label), (3, VerdictLabel::Borderline));
        assert_eq!(v.rationale, "meh {x}");
    }

    #[test]
    fn object_inside_prose_with_braces_in_strings() {
        let v = ok(
            r#"My verdict is {"rationale": "uses } and \" quotes", "score": "2", "label": "fail"} as requested."#,
        );
        assert_eq!((v.score, v.label), (2, VerdictLabel::Fail));
    }

    #[test]
    fn missing_label_follows_the_score() {
        assert_eq!(ok(r#"{"score": 4}"#).label, VerdictLabel::Pass);
        assert_eq!(ok(r#"{"score": 3.0}"#).label, VerdictLabel::Borderline);
    }

    #[test]
    fn malformed_replies_are_errors() {
        assert!(parse("I think it is fine.").is_err());
        assert!(parse(r#"{"rationale": "x", "score": 7, "label": "pass"}"#).is_err());
        assert!(parse(r#"{"rationale": "x", "score": 4.5}"#).is_err());
        assert!(parse(r#"{"rationale": "x", "score": 4, "label": "great"}"#).is_err());
        assert!(parse(r#"{"rationale": "x", "label": "pass""#).is_err());
        assert!(parse("[1, 2]").is_err());
    }
}
