//! Cassettes end to end on the data side: raw HTTP pieces through redaction,
//! decoding and SSE parsing into a file, read back, matched; and
//! `agentci cassettes lint` through the real binary.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use agentci::vcr::body::{body_from_bytes, body_to_bytes, decode_content_encoding};
use agentci::vcr::matching::{ReplayIndex, match_key};
use agentci::vcr::redact::Redactor;
use agentci::vcr::sse::{SseParser, encode_event};
use agentci::vcr::{
    Body, Cassette, CassetteEnd, CassetteMeta, Exchange, RecordedRequest, RecordedResponse, Timing,
};
use assert_cmd::Command;

const OPENAI_KEY: &str = "sk-proj-PLANTEDplantedPLANTED0123456789";
const URL: &str = "https://api.openai.com/v1/chat/completions";

fn meta(case_id: &str) -> CassetteMeta {
    CassetteMeta {
        format: 1,
        tool_version: agentci::VERSION.into(),
        case_id: case_id.into(),
        agent: Some("rag-agent".into()),
        query: Some("Weather in Paris?".into()),
        recorded_at: "2025-06-01T12:00:00Z".into(),
        spec_hash: None,
        record_mode: "once".into(),
        trial: None,
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// What the proxy does with one streamed exchange, using only the data-side API.
fn record_streamed_exchange(redactor: &Redactor) -> Exchange {
    let mut req_headers = http::HeaderMap::new();
    req_headers.insert(
        "authorization",
        format!("Bearer {OPENAI_KEY}").parse().unwrap(),
    );
    req_headers.insert("content-type", "application/json".parse().unwrap());
    req_headers.insert("x-stainless-retry-count", "0".parse().unwrap());
    let req_bytes = br#"{"stream":true,"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather in Paris?"}]}"#;
    let req_body = body_from_bytes(Some("application/json"), req_bytes);

    let mut resp_headers = http::HeaderMap::new();
    resp_headers.insert("content-type", "text/event-stream".parse().unwrap());
    resp_headers.insert("content-encoding", "gzip".parse().unwrap());
    resp_headers.insert("x-request-id", "req_123".parse().unwrap());
    resp_headers.insert("set-cookie", "__cf_bm=abc".parse().unwrap());
    let stream = concat!(
        "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Sun\"}}],\"obfuscation\":\"q8Zk\"}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"ny\"}}],\"obfuscation\":\"Tt\"}\n\n",
        "data: [DONE]\n\n",
    );
    let wire = gzip(stream.as_bytes());
    let decoded = decode_content_encoding(Some("gzip"), &wire).unwrap();
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    for (i, chunk) in decoded.chunks(7).enumerate() {
        events.extend(parser.push(chunk, i as u64));
    }
    events.extend(parser.finish(99));

    let mut exchange = Exchange {
        seq: 0,
        request: RecordedRequest {
            method: "POST".into(),
            url: redactor.url(&format!("{URL}?api_key={OPENAI_KEY}")),
            headers: redactor.request_headers(&req_headers),
            body: req_body.clone(),
        },
        response: RecordedResponse {
            status: 200,
            headers: redactor.response_headers(&resp_headers),
            body: None,
            events: Some(events),
            truncated: false,
            error: None,
        },
        timing: Timing {
            start_ms: 0,
            ttfb_ms: 10,
            total_ms: 30,
        },
        match_key: match_key("POST", URL, req_body.as_ref(), &[]),
    };
    redactor.scrub_exchange(&mut exchange);
    exchange
}

#[test]
fn recorded_stream_round_trips_without_secrets_and_replays() {
    let redactor = Redactor::from_pairs(vec![("OPENAI_API_KEY".into(), OPENAI_KEY.into())], &[]);
    let exchange = record_streamed_exchange(&redactor);
    let cassette = Cassette {
        meta: meta("weather"),
        exchanges: vec![exchange],
        end: Some(CassetteEnd {
            exit_code: Some(0),
            answer: Some("Sunny".into()),
            duration_ms: 40,
        }),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rag-agent/weather.jsonl");
    cassette.write_atomic(&path).unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("PLANTED"), "{text}");
    for absent in [
        "authorization",
        "x-request-id",
        "set-cookie",
        "content-encoding",
        "x-stainless",
        "obfuscation",
    ] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
    insta::assert_snapshot!(text.replace(agentci::VERSION, "[VERSION]"));

    let back = Cassette::read(&path).unwrap();
    assert_eq!(back, cassette);
    let index = ReplayIndex::new(&back, &[]);
    // The live request arrives with the real key in the query and keys in another order.
    let live = body_from_bytes(None, br#"{"messages":[{"content":"Weather in Paris?","role":"user"}],"model":"gpt-4o-mini","stream":true}"#);
    let hit = index
        .take(&match_key(
            "POST",
            &format!("{URL}?api_key={OPENAI_KEY}"),
            live.as_ref(),
            &[],
        ))
        .expect("replay hit");
    let replayed: Vec<u8> = hit
        .response
        .events
        .iter()
        .flatten()
        .flat_map(encode_event)
        .collect();
    assert_eq!(
        String::from_utf8(replayed).unwrap(),
        "data: {\"choices\":[{\"delta\":{\"content\":\"Sun\"}}],\"id\":\"c1\"}\n\n\
         data: {\"choices\":[{\"delta\":{\"content\":\"ny\"}}],\"id\":\"c1\"}\n\ndata: [DONE]\n\n"
    );
    assert_eq!(
        body_to_bytes(hit.request.body.as_ref().unwrap()),
        br#"{"messages":[{"content":"Weather in Paris?","role":"user"}],"model":"gpt-4o-mini","stream":true}"#
    );
    assert!(index.unused().is_empty());
}

#[test]
fn cassette_with_a_planted_key_is_refused_and_the_previous_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weather.jsonl");
    let redactor = Redactor::from_pairs(vec![], &[]);
    let good = Cassette {
        meta: meta("weather"),
        exchanges: vec![record_streamed_exchange(&redactor)],
        end: None,
    };
    good.write_atomic(&path).unwrap();
    let before = std::fs::read(&path).unwrap();

    // The key is not in the environment, so only the final scan stands between it and the disk.
    let mut leaky = good.clone();
    leaky.exchanges[0].response.body = Some(Body::Text(format!("your key is {OPENAI_KEY}")));
    let err = leaky.write_atomic(&path).unwrap_err();
    assert!(matches!(err, agentci::Error::SecretFound { .. }));
    assert!(!err.to_string().contains("PLANTED"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("weather.jsonl")]);
}

#[test]
fn corrupt_line_fails_at_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weather.jsonl");
    let good = Cassette {
        meta: meta("weather"),
        exchanges: vec![record_streamed_exchange(&Redactor::default())],
        end: None,
    };
    let mut text = good.to_jsonl();
    text.push_str("{\"seq\":1,\"request\":\n");
    std::fs::write(&path, text).unwrap();
    let err = Cassette::read(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3: exchange line is not valid JSON (EOF while parsing a value at column 19)",
            path.display()
        )
    );
    assert_eq!(
        err.hint().as_deref(),
        Some("re-record this case with agentci record --case weather")
    );
}

fn lint(dir: &Path) -> (String, String, i32) {
    let out = Command::cargo_bin("agentci")
        .unwrap()
        .args(["cassettes", "lint"])
        .arg(dir)
        .output()
        .unwrap();
    let filter = |s: Vec<u8>| {
        String::from_utf8(s)
            .unwrap()
            .replace(&dir.display().to_string(), "[DIR]")
    };
    (
        filter(out.stdout),
        filter(out.stderr),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn lint_reports_planted_keys_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let clean = Cassette {
        meta: meta("clean"),
        exchanges: vec![],
        end: None,
    };
    clean
        .write_atomic(&dir.path().join("agent/clean.jsonl"))
        .unwrap();
    // Written by hand: write_atomic would (rightly) refuse these.
    let mut leaky = clean.to_jsonl();
    leaky.push_str(&format!("{{\"note\":\"{OPENAI_KEY}\"}}\n"));
    leaky.push_str("{\"h\":\"Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig\",\"g\":\"AIzaSyA1234567890abcdefghijklmnopqrstuv\"}\n");
    std::fs::write(dir.path().join("agent/leaky.jsonl"), leaky).unwrap();
    std::fs::write(dir.path().join("agent/notes.txt"), OPENAI_KEY).unwrap(); // not a cassette: skipped

    let (stdout, stderr, code) = lint(dir.path());
    assert_eq!(code, 1);
    insta::assert_snapshot!(
        "lint_finds",
        format!("exit: {code}\n--- stdout\n{stdout}--- stderr\n{stderr}")
    );
    assert!(!stdout.contains("PLANTED"));

    std::fs::remove_file(dir.path().join("agent/leaky.jsonl")).unwrap();
    let (stdout, stderr, code) = lint(dir.path());
    assert_eq!(code, 0);
    insta::assert_snapshot!(
        "lint_clean",
        format!("exit: {code}\n--- stdout\n{stdout}--- stderr\n{stderr}")
    );
}

#[test]
fn lint_exits_2_on_unreadable_input() {
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr, code) = lint(&dir.path().join("missing"));
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: [DIR]: No such file or directory"),
        "{stderr}"
    );

    // A directory named like a cassette cannot be read as one.
    std::fs::create_dir(dir.path().join("odd.jsonl")).unwrap();
    std::fs::create_dir(dir.path().join("odd.jsonl/inner")).unwrap();
    std::fs::write(dir.path().join("ok.jsonl"), "{}\n").unwrap();
    let (_, _, code) = lint(dir.path());
    assert_eq!(code, 0, "a directory is searched, not read");

    // A dangling link is unreadable even for root (a mode-0 file is not).
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("dangling.jsonl"))
            .unwrap();
        let (stdout, stderr, code) = lint(dir.path());
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(stdout, "");
        assert!(
            stderr.starts_with("error: [DIR]/dangling.jsonl: No such file or directory"),
            "{stderr}"
        );
        assert!(
            stderr.ends_with("2 cassette file(s) scanned, 0 secret(s) found, 1 unreadable\n"),
            "{stderr}"
        );
    }
}

#[test]
fn headers_table_keeps_only_allow_listed_names() {
    let redactor = Redactor::default();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "x-goog-api-key",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv".parse().unwrap(),
    );
    headers.insert("anthropic-version", "2023-06-01".parse().unwrap());
    assert_eq!(
        redactor.request_headers(&headers),
        BTreeMap::from([("anthropic-version".to_string(), "2023-06-01".to_string())])
    );
}

#[test]
fn docs_list_every_redaction_and_matching_table_entry() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cassettes.md")).unwrap();
    let tables = agentci::vcr::redact::HEADER_TABLE
        .iter()
        .map(|(name, _, _)| *name)
        .chain(agentci::vcr::redact::SECRET_QUERY_PARAMS.iter().copied())
        .chain(agentci::vcr::matching::VOLATILE_BODY_FIELDS.iter().copied());
    for entry in tables {
        assert!(
            docs.contains(&format!("`{entry}`")),
            "docs/cassettes.md does not list `{entry}`"
        );
    }
}

#[test]
fn live_request_carrying_an_env_secret_matches_after_scrubbing() {
    let redactor =
        Redactor::from_pairs(vec![("SEARCH_TOKEN".into(), "tok-1234567890".into())], &[]);
    let live =
        || Body::Json(serde_json::json!({"tools": [{"auth": "tok-1234567890"}], "model": "m"}));
    let mut recorded = Exchange {
        seq: 0,
        request: RecordedRequest {
            method: "POST".into(),
            url: URL.into(),
            headers: BTreeMap::new(),
            body: Some(live()),
        },
        response: RecordedResponse {
            status: 200,
            headers: BTreeMap::new(),
            body: None,
            events: None,
            truncated: false,
            error: None,
        },
        timing: Timing::default(),
        match_key: String::new(),
    };
    redactor.scrub_exchange(&mut recorded);
    let index = ReplayIndex::new(
        &Cassette {
            meta: meta("c"),
            exchanges: vec![recorded],
            end: None,
        },
        &[],
    );
    assert!(
        index
            .take(&match_key("POST", URL, Some(&live()), &[]))
            .is_none(),
        "raw secret differs from stored form"
    );
    let mut scrubbed = live();
    redactor.scrub_body(&mut scrubbed);
    assert!(
        index
            .take(&match_key("POST", URL, Some(&scrubbed), &[]))
            .is_some()
    );
}
