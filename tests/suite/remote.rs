//! Remote providers (issue #4): the OpenAI-compatible embedder and chat
//! client against a real local HTTP server that speaks the OpenAI wire
//! format (a std `TcpListener` thread, one scripted reply per request).
//!
//! Covers success, batching and order, dimension checks, the key header,
//! 401/404/429/5xx, an unreachable port, a timeout and malformed bodies.
//! The tests never set environment variables (that is `unsafe` in Rust 2024):
//! a variable cargo always sets stands in for the API key.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use memdb::{
    Embedder, Error, OpenAiChat, OpenAiChatConfig, OpenAiConfig, OpenAiEmbedder, RemoteFailure,
};
use serde_json::{Value, json};

use crate::http_stub::{Reply, Seen, Server};

/// The embeddings answer for `req`: text `t<i>` gets a `dim`-vector whose
/// first two components are `i + 1` and `1` (so order survives
/// normalisation: v[0] / v[1] = i + 1). Items are sent in reverse order with
/// their `index`, as servers may.
fn embeddings(req: &Seen, dim: usize) -> Reply {
    let inputs = req.body["input"].as_array().cloned().unwrap_or_default();
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, t)| {
            let i: f32 = t.as_str().unwrap_or("t0")[1..].parse().unwrap_or(0.0);
            let mut v = vec![0.0f32; dim];
            v[0] = i + 1.0;
            v[1] = 1.0;
            json!({ "object": "embedding", "index": index, "embedding": v })
        })
        .collect();
    data.reverse();
    Reply::Json(
        200,
        json!({ "object": "list", "data": data, "model": req.body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1} }),
    )
}

/// A variable cargo sets for every test run, standing in for an API key.
fn key_var() -> (&'static str, String) {
    for name in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "PATH", "HOME"] {
        if let Ok(v) = std::env::var(name)
            && !v.is_empty()
        {
            return (name, v);
        }
    }
    panic!("no environment variable to stand in for an API key");
}

/// A config with fast retries, keyed by [`key_var`].
fn config(server: &Server, dim: u32) -> OpenAiConfig {
    OpenAiConfig::new(server.base(), "test-embed", dim)
        .api_key_env(Some(key_var().0))
        .backoff(Duration::from_millis(10), Duration::from_secs(5))
        .max_retries(2)
}

fn remote(e: Error) -> (RemoteFailure, Option<u16>, String) {
    match e {
        Error::Remote {
            kind,
            status,
            message,
            ..
        } => (kind, status, message),
        other => panic!("expected a remote error, got {other:?}"),
    }
}

#[test]
fn embeds_in_batches_in_order_with_the_key() {
    let server = Server::start(|_, req| embeddings(req, 4));
    let e = OpenAiEmbedder::new(config(&server, 4).batch_size(4)).unwrap();
    let texts: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let report = e.embed_report(&refs).unwrap();
    assert_eq!(report.vectors.len(), 10);
    assert_eq!(report.truncated, vec![false; 10]);
    for (i, v) in report.vectors.iter().enumerate() {
        assert_eq!(v.len(), 4);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "not normalised: {norm}");
        assert!(
            ((v[0] / v[1]) - (i as f32 + 1.0)).abs() < 1e-3,
            "text {i} out of order"
        );
    }
    let seen = server.seen();
    let sizes: Vec<usize> = seen
        .iter()
        .map(|s| s.body["input"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(sizes, vec![4, 4, 2]);
    for s in &seen {
        assert_eq!(s.path, "/v1/embeddings");
        assert_eq!(s.body["model"], "test-embed");
        assert_eq!(s.authorization, Some(format!("Bearer {}", key_var().1)));
        assert!(s.body.get("dimensions").is_none());
    }
    let id = e.identity();
    assert_eq!(
        (id.provider.as_str(), id.name.as_str(), id.dimension),
        ("openai", "test-embed", 4)
    );
}

#[test]
fn no_key_is_sent_when_the_variable_is_unset() {
    let server = Server::start(|_, req| embeddings(req, 3));
    let e = OpenAiEmbedder::new(
        config(&server, 3)
            .api_key_env(Some("MEMDB_TEST_SURELY_UNSET_KEY"))
            .request_dimensions(true),
    )
    .unwrap();
    assert_eq!(e.embed(&["t0", ""]).unwrap().len(), 2);
    let seen = server.seen();
    assert_eq!(seen[0].authorization, None);
    assert_eq!(seen[0].body["dimensions"], 3);
    // The empty text went out as one space (OpenAI refuses empty strings).
    assert_eq!(seen[0].body["input"][1], " ");
}

#[test]
fn a_dimension_mismatch_is_a_clear_error() {
    let server = Server::start(|_, req| embeddings(req, 5));
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    match e.embed(&["t0", "t1"]) {
        Err(Error::InvalidInput { field, reason }) => {
            assert_eq!(field, "dimension");
            assert!(
                reason.contains("returned 5-dimensional vectors"),
                "{reason}"
            );
            assert!(reason.contains("configuration says 4"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unauthorized_names_the_variable_but_never_the_key() {
    let (var, key) = key_var();
    let server = Server::start(move |_, req| {
        let sent = req.authorization.clone().unwrap_or_default();
        Reply::Json(
            401,
            json!({"error": {"message": format!("Incorrect API key provided: {sent}"), "type": "invalid_request_error"}}),
        )
    });
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    let err = e.embed(&["t0"]).unwrap_err();
    let shown = err.to_string();
    let (kind, status, message) = remote(err);
    assert_eq!((kind, status), (RemoteFailure::Unauthorized, Some(401)));
    assert!(message.contains(&format!("${var}")), "{message}");
    assert!(message.contains("refused"), "{message}");
    assert!(message.contains("<redacted>"), "{message}");
    assert!(!shown.contains(&key), "the key leaked: {shown}");
    assert!(
        shown.contains(&format!("http://{}/v1/embeddings", server.addr)),
        "{shown}"
    );
    // 401 is final: no retries.
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn not_found_points_at_the_base_url_and_model() {
    let server = Server::start(|_, _| {
        Reply::Json(
            404,
            json!({"error": "model \"nope\" not found, try pulling it first"}),
        )
    });
    let e = OpenAiEmbedder::new(config(&server, 4).api_key_env(None)).unwrap();
    let (kind, status, message) = remote(e.embed(&["t0"]).unwrap_err());
    assert_eq!((kind, status), (RemoteFailure::NotFound, Some(404)));
    assert!(message.contains("check the base URL"), "{message}");
    assert!(message.contains("not found, try pulling"), "{message}");
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn rate_limits_are_retried_after_the_servers_delay() {
    let server = Server::start(|n, req| {
        if n == 0 {
            Reply::Raw(
                429,
                "retry-after: 1\r\n",
                r#"{"error":{"message":"Rate limit reached"}}"#.into(),
            )
        } else {
            embeddings(req, 4)
        }
    });
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    let start = Instant::now();
    let v = e.embed(&["t0", "t1"]).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(server.seen().len(), 2);
    // The configured backoff is 10 ms: only Retry-After explains a 1 s wait.
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn rate_limits_past_the_longest_wait_fail_at_once() {
    let server = Server::start(|_, _| Reply::Raw(429, "retry-after: 3600\r\n", "{}".into()));
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    let (kind, status, message) = remote(e.embed(&["t0"]).unwrap_err());
    assert_eq!((kind, status), (RemoteFailure::RateLimited, Some(429)));
    assert!(message.contains("wait 3600 s"), "{message}");
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn retry_after_as_an_http_date_is_honoured() {
    // A date in the past: retry at once, and succeed.
    let server = Server::start(|n, req| {
        if n == 0 {
            Reply::Raw(
                503,
                "retry-after: Wed, 21 Oct 2015 07:28:00 GMT\r\n",
                "{}".into(),
            )
        } else {
            embeddings(req, 4)
        }
    });
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    assert_eq!(e.embed(&["t0"]).unwrap().len(), 1);
    assert_eq!(server.seen().len(), 2);
    // A date decades ahead is past the longest wait: no retry, and the
    // error says how long the server asked for (seconds, not the date).
    let server = Server::start(|_, _| {
        Reply::Raw(
            429,
            "retry-after: Thu, 01 Jan 2099 00:00:00 GMT\r\n",
            "{}".into(),
        )
    });
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    let start = Instant::now();
    let (kind, status, message) = remote(e.embed(&["t0"]).unwrap_err());
    assert_eq!((kind, status), (RemoteFailure::RateLimited, Some(429)));
    assert!(message.contains("wait "), "{message}");
    assert_eq!(server.seen().len(), 1);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn rate_limits_on_every_attempt_say_so() {
    let server = Server::start(|_, _| Reply::Json(429, json!({"error": {"message": "slow down"}})));
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    let (kind, _, message) = remote(e.embed(&["t0"]).unwrap_err());
    assert_eq!(kind, RemoteFailure::RateLimited);
    assert!(
        message.contains("still rate limited after 3 attempts"),
        "{message}"
    );
    assert_eq!(server.seen().len(), 3);
}

#[test]
fn server_errors_are_retried_then_reported() {
    let server = Server::start(|_, _| Reply::Json(500, json!({"error": {"message": "boom"}})));
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    let (kind, status, message) = remote(e.embed(&["t0"]).unwrap_err());
    assert_eq!((kind, status), (RemoteFailure::Server, Some(500)));
    assert!(message.contains("3 attempts"), "{message}");
    assert!(message.contains("boom"), "{message}");
    assert_eq!(server.seen().len(), 3);

    // A server that recovers within the retries is a success.
    let flaky = Server::start(|n, req| {
        if n < 2 {
            Reply::Json(503, json!({}))
        } else {
            embeddings(req, 4)
        }
    });
    let e = OpenAiEmbedder::new(config(&flaky, 4)).unwrap();
    assert_eq!(e.embed(&["t0"]).unwrap().len(), 1);
    assert_eq!(flaky.seen().len(), 3);
}

#[test]
fn an_unreachable_server_is_a_clear_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = OpenAiEmbedder::new(
        OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m", 4)
            .max_retries(1)
            .backoff(Duration::from_millis(10), Duration::from_millis(10)),
    )
    .unwrap();
    let err = e.embed(&["t0"]).unwrap_err();
    let (kind, status, message) = remote(err);
    assert_eq!((kind, status), (RemoteFailure::Unreachable, None));
    assert!(message.contains("cannot reach the server"), "{message}");
    assert!(message.contains("2 attempts"), "{message}");
}

#[test]
fn a_stalled_server_times_out() {
    let server = Server::start(|_, _| Reply::Stall(Duration::from_secs(3)));
    let e = OpenAiEmbedder::new(
        config(&server, 4)
            .timeout(Duration::from_millis(300))
            .max_retries(0),
    )
    .unwrap();
    let start = Instant::now();
    let (kind, status, message) = remote(e.embed(&["t0"]).unwrap_err());
    assert_eq!((kind, status), (RemoteFailure::Timeout, None));
    assert!(message.contains("300 ms timeout"), "{message}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn malformed_answers_are_reported_not_trusted() {
    let server = Server::start(|n, _| match n {
        0 => Reply::Raw(200, "", "<html>proxy login</html>".into()),
        1 => Reply::Json(200, json!({"data": "nope"})),
        2 => Reply::Json(
            200,
            json!({"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0, 0.0]}]}),
        ),
        _ => Reply::Json(
            200,
            json!({"data": [
                {"index": 0, "embedding": [1.0, 0.0, 0.0, 0.0]},
                {"index": 0, "embedding": [1.0, 0.0, 0.0, 0.0]}
            ]}),
        ),
    });
    let e = OpenAiEmbedder::new(config(&server, 4)).unwrap();
    let expect = [
        "is not valid JSON",
        "is not shaped as the API defines",
        "sent 2 texts, got 1 embeddings back",
        "index 0 appears twice",
    ];
    for want in expect {
        let (kind, _, message) = remote(e.embed(&["t0", "t1"]).unwrap_err());
        assert_eq!(kind, RemoteFailure::Malformed);
        assert!(message.contains(want), "{want}: {message}");
    }
    // Malformed answers are not retried.
    assert_eq!(server.seen().len(), 4);
}

#[test]
fn chat_completes_with_system_and_user_messages() {
    let server = Server::start(|_, req| {
        let user = req.body["messages"][1]["content"].as_str().unwrap_or("");
        Reply::Json(
            200,
            json!({"id": "c1", "object": "chat.completion", "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": format!("summary of: {user}")}}
            ]}),
        )
    });
    let chat = OpenAiChat::new(
        OpenAiChatConfig::new(server.base(), "test-chat")
            .api_key_env(Some(key_var().0))
            .temperature(Some(0.0)),
    )
    .unwrap();
    let answer = chat
        .complete("You summarise.", "the meeting notes", 64)
        .unwrap();
    assert_eq!(answer, "summary of: the meeting notes");
    let seen = server.seen();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].body["model"], "test-chat");
    assert_eq!(seen[0].body["max_tokens"], 64);
    assert_eq!(seen[0].body["temperature"], 0.0);
    assert_eq!(seen[0].body["messages"][0]["role"], "system");
    assert_eq!(seen[0].body["messages"][0]["content"], "You summarise.");
    assert_eq!(seen[0].body["messages"][1]["role"], "user");
    assert_eq!(
        seen[0].authorization,
        Some(format!("Bearer {}", key_var().1))
    );
}

#[test]
fn chat_errors_are_typed() {
    let server = Server::start(|n, _| match n {
        0 => Reply::Json(403, json!({"error": {"message": "no access"}})),
        _ => Reply::Json(200, json!({"choices": []})),
    });
    let chat = OpenAiChat::new(
        OpenAiChatConfig::new(server.base(), "m")
            .api_key_env(Some("MEMDB_TEST_SURELY_UNSET_KEY"))
            .backoff(Duration::from_millis(10), Duration::from_millis(10)),
    )
    .unwrap();
    let (kind, status, message) = remote(chat.complete("", "hi", 8).unwrap_err());
    assert_eq!((kind, status), (RemoteFailure::Unauthorized, Some(403)));
    assert!(
        message.contains("$MEMDB_TEST_SURELY_UNSET_KEY is unset"),
        "{message}"
    );
    let (kind, _, message) = remote(chat.complete("", "hi", 8).unwrap_err());
    assert_eq!(kind, RemoteFailure::Malformed);
    assert!(
        message.contains("no choices[0].message.content"),
        "{message}"
    );
    // An empty system prompt is not sent.
    assert_eq!(
        server.seen()[1].body["messages"].as_array().map(Vec::len),
        Some(1)
    );
}
