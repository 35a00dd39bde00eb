//! memdb-server's OpenAI-compatible proxy (SPEC §21.6) against a local fake
//! upstream ([`crate::http_stub`]): the official `openai` Python client
//! through it (streamed and not, context injected, exchange stored and
//! searchable; `tests/python/proxy_e2e.py`), what the upstream received,
//! the per-request switch, and upstream failures passed through (an error
//! status and body as they are, 502 unreachable, 504 too slow) with
//! nothing stored.

use memdb::Systems;
use std::time::Duration;

use serde_json::{Value, json};

use crate::http_stub::{Reply, Seen, Server};
use crate::server_util::{KEY, RO_KEY, TestServer, config};

const UPSTREAM_KEY: &str = "sk-upstream-0123456789";

fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({
        "id": "chatcmpl-fake-stream",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
    .to_string()
}

/// The fake upstream: a model list, a fixed answer, a fixed stream.
fn fake_upstream() -> Server {
    Server::start(|_, seen: &Seen| {
        if seen.path.ends_with("/models") {
            return Reply::Json(
                200,
                json!({"object": "list", "data": [
                    {"id": "fake-model", "object": "model", "created": 0, "owned_by": "memdb-tests"}
                ]}),
            );
        }
        if seen.body["stream"] == true {
            let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
            for piece in ["Fridays", " at ten,", " as agreed."] {
                events.push(chunk(json!({"content": piece}), None));
            }
            events.push(chunk(json!({}), Some("stop")));
            events.push("[DONE]".into());
            return Reply::Sse(events);
        }
        Reply::Json(200, completion("The cluster deploys on Fridays."))
    })
}

fn proxied(
    upstream: &str,
    tune: impl FnOnce(&mut memdb_server::proxy::ProxySettings),
) -> TestServer {
    let mut c = config();
    c.proxy.upstream_url = Some(upstream.to_string());
    c.proxy.upstream_key = Some(UPSTREAM_KEY.into());
    tune(&mut c.proxy);
    TestServer::start_seeded(c, memdb::Config::default(), |db| {
        crate::conv(
            db,
            "Deploy plan",
            "/work",
            &["We deploy the cluster on Fridays at ten, after the review."],
        );
    })
}

fn chat_requests(upstream: &Server) -> Vec<Seen> {
    upstream
        .seen()
        .into_iter()
        .filter(|s| s.path == "/v1/chat/completions")
        .collect()
}

fn system_texts(seen: &Seen) -> Vec<String> {
    seen.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_openai_client_gets_answers_with_memdbs_context_and_the_exchange_is_stored() {
    let upstream = fake_upstream();
    let server = proxied(&upstream.base(), |_| {});
    let url = format!("http://{}", server.addr);
    crate::server_e2e::run_checks("proxy_e2e.py", |c| {
        c.env("MEMDB_URL", &url).env("MEMDB_KEY", KEY)
    });

    let seen = upstream.seen();
    assert_eq!(seen[0].path, "/v1/models");
    let chats = chat_requests(&upstream);
    assert_eq!(chats.len(), 3, "{chats:?}");
    for s in &chats {
        // The upstream gets its own key, never the client's memdb key.
        assert_eq!(
            s.authorization.as_deref(),
            Some(&*format!("Bearer {UPSTREAM_KEY}"))
        );
        // memdb's body fields are not forwarded.
        assert!(s.body.get("folder").is_none(), "{}", s.body);
        assert_eq!(s.body["model"], "fake-model");
    }
    // Non-streamed: the client's system message first, memdb's context
    // second, then the user's turn.
    let msgs = chats[0].body["messages"].as_array().expect("messages");
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    assert_eq!(
        msgs[0],
        json!({"role": "system", "content": "You are terse."})
    );
    let injected = msgs[1]["content"].as_str().expect("injected text");
    assert_eq!(msgs[1]["role"], "system");
    assert!(
        injected.contains("[Past Conversation 1]\nFrom: /work/Deploy plan\nDate: "),
        "{injected}"
    );
    assert!(
        injected.contains("We deploy the cluster on Fridays at ten, after the review."),
        "{injected}"
    );
    assert_eq!(msgs[2]["content"], "When do we deploy the cluster?");
    // Streamed: the context comes first (no system message of the client's).
    assert_eq!(chats[1].body["stream"], true);
    let streamed = chats[1].body["messages"].as_array().expect("messages");
    assert_eq!(streamed.len(), 2);
    assert!(
        streamed[0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("From: /work/Deploy plan")
    );
    // X-Memdb-Context: off: the messages exactly as the client sent them.
    assert_eq!(
        chats[2].body["messages"],
        json!([{"role": "user", "content": "Without memory: when do we deploy?"}])
    );

    let dir = server.stop();
    let db = memdb::Memdb::open(dir.path()).expect("reopen");
    let stats = db.sekha().stats(&memdb::Filter::default()).expect("stats");
    // The seed, two exchanges with context and one without.
    assert_eq!(stats.total_conversations, 4, "{stats:?}");
}

#[test]
fn injection_is_switched_per_request_and_a_bad_switch_is_refused() {
    let upstream = fake_upstream();
    let server = proxied(&upstream.base(), |_| {});
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "when do we deploy the cluster?"}]});
    let send = |header: Option<&str>| {
        let mut headers = vec![
            ("Authorization".to_string(), format!("Bearer {KEY}")),
            ("Content-Type".to_string(), "application/json".to_string()),
        ];
        if let Some(h) = header {
            headers.push(("X-Memdb-Context".to_string(), h.to_string()));
        }
        crate::server_util::raw(
            server.addr,
            "POST",
            "/v1/chat/completions",
            &headers,
            Some(body.to_string().as_bytes()),
        )
    };
    let on = send(Some("on"));
    assert_eq!(on.status, 200, "{}", on.text());
    assert_eq!(on.json()["sekha_metadata"]["injected"], true);
    let off = send(Some("OFF"));
    assert_eq!(off.status, 200, "{}", off.text());
    assert_eq!(off.json()["sekha_metadata"]["injected"], false);
    assert_eq!(off.header("x-memdb-context-count"), Some("0"));
    let bad = send(Some("maybe"));
    assert_eq!(bad.status, 400, "{}", bad.text());
    let chats = chat_requests(&upstream);
    assert_eq!(
        chats.len(),
        2,
        "the refused request never reached the upstream"
    );
    assert_eq!(system_texts(&chats[0]).len(), 1);
    assert!(system_texts(&chats[1]).is_empty());
}

#[test]
fn the_proxy_needs_an_upstream_a_writing_key_and_a_chat_request() {
    let server = TestServer::start(config());
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let r = server.req("POST", "/v1/chat/completions", Some(KEY), Some(&body));
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("--upstream-url"), "{}", r.text());
    assert_eq!(server.get("/v1/models").status, 503);

    let upstream = fake_upstream();
    let server = proxied(&upstream.base(), |_| {});
    let r = server.req("POST", "/v1/chat/completions", Some(RO_KEY), Some(&body));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        server.req("GET", "/v1/models", Some(RO_KEY), None).status,
        200
    );
    assert_eq!(
        server
            .req("POST", "/v1/chat/completions", None, Some(&body))
            .status,
        401
    );
    for (bad, field) in [
        (json!([1]), "body"),
        (json!({"model": "m"}), "messages"),
        (json!({"model": "m", "messages": []}), "messages"),
        (
            json!({"model": "m", "messages": [{"content": "no role"}]}),
            "messages",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "context_budget": 0}),
            "context_budget",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "folder": 3}),
            "folder",
        ),
    ] {
        let r = server.send("POST", "/v1/chat/completions", &bad);
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert_eq!(r.json()["field"], field, "{bad}");
    }
    assert!(chat_requests(&upstream).is_empty());
    // Nothing stored but the seed.
    let count = server.get("/api/v1/conversations/count").json();
    assert_eq!(count["count"], 1, "{count}");
}

#[test]
fn upstream_errors_pass_through_with_their_status_and_store_nothing() {
    let error =
        json!({"error": {"message": "model overloaded", "type": "server_error", "code": null}});
    let body_500 = error.clone();
    let upstream = Server::start(move |_, seen: &Seen| match seen.path.as_str() {
        "/v1/models" => Reply::Raw(401, "", "{\"error\":\"bad upstream key\"}".into()),
        _ => Reply::Json(500, body_500.clone()),
    });
    let server = proxied(&upstream.base(), |_| {});
    for stream in [false, true] {
        let r = server.send(
            "POST",
            "/v1/chat/completions",
            &json!({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "deploy?"}]}),
        );
        assert_eq!(r.status, 500, "stream {stream}: {}", r.text());
        assert_eq!(r.json(), error, "stream {stream}");
    }
    let r = server.get("/v1/models");
    assert_eq!(
        (r.status, r.text()),
        (401, "{\"error\":\"bad upstream key\"}".to_string())
    );
    assert_eq!(server.get("/api/v1/conversations/count").json()["count"], 1);
}

#[test]
fn an_unreachable_upstream_is_502_and_a_slow_one_504() {
    // A port nothing listens on.
    let port = crate::server_e2e::free_port();
    let server = proxied(&format!("http://127.0.0.1:{port}/v1"), |_| {});
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "deploy?"}]});
    let r = server.send("POST", "/v1/chat/completions", &body);
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("cannot be reached"), "{}", r.text());
    assert!(!r.text().contains(UPSTREAM_KEY));
    assert_eq!(server.get("/v1/models").status, 502);

    let slow = Server::start(|_, _| Reply::Stall(Duration::from_secs(3)));
    let server = proxied(&slow.base(), |p| p.upstream_timeout_secs = Some(1));
    for stream in [false, true] {
        let mut b = body.clone();
        b["stream"] = stream.into();
        let r = server.send("POST", "/v1/chat/completions", &b);
        assert_eq!(r.status, 504, "stream {stream}: {}", r.text());
        assert!(r.text().contains("did not answer in time"), "{}", r.text());
    }
    assert_eq!(server.get("/api/v1/conversations/count").json()["count"], 1);
}

#[test]
fn a_stream_ended_without_done_is_closed_and_stored_a_broken_one_is_not() {
    // Request 0: one chunk, then the connection closes without [DONE].
    // Request 1: a 2xx that is not an event stream. Request 2: a stream
    // stalling longer than the stream timeout after its first chunk.
    let upstream = Server::start(|n, _| match n {
        0 => Reply::Sse(vec![chunk(json!({"content": "partial answer"}), None)]),
        1 => Reply::Raw(200, "", "not an event stream".into()),
        _ => Reply::SseSlow(
            vec![
                chunk(json!({"content": "first"}), None),
                chunk(json!({"content": " never"}), None),
            ],
            Duration::from_secs(3),
        ),
    });
    let server = proxied(&upstream.base(), |p| p.stream_timeout_secs = Some(1));
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "deploy?"}]});
    let r = server.send("POST", "/v1/chat/completions", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let text = r.text();
    assert!(text.contains("partial answer"), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    let report: Value = serde_json::from_str(data[data.len() - 2]).expect("report chunk JSON");
    assert_eq!(report["choices"], json!([]));
    assert_eq!(report["object"], "chat.completion.chunk");
    assert_eq!(report["id"], "chatcmpl-fake-stream");
    let id = report["sekha_metadata"]["stored_conversation_id"]
        .as_str()
        .expect("stored");
    let conv = server.get(&format!("/api/v1/conversations/{id}")).json();
    assert_eq!(conv["messages"][1]["content"], "partial answer");

    // A 2xx that is not an event stream is passed through as it is.
    let r = server.send("POST", "/v1/chat/completions", &body);
    assert_eq!(
        (r.status, r.text()),
        (200, "not an event stream".to_string())
    );

    // A stream that breaks: what came is relayed, then an error event
    // (which OpenAI's clients raise), no [DONE], nothing stored.
    let r = server.send("POST", "/v1/chat/completions", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(text.contains("\"first\""), "{text}");
    assert!(
        !text.contains("never") && !text.contains("[DONE]"),
        "{text}"
    );
    let last: Value = serde_json::from_str(
        text.lines()
            .rev()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("an event"),
    )
    .expect("error event JSON");
    assert_eq!(last["error"]["type"], "upstream_error", "{last}");
    assert_eq!(server.get("/api/v1/conversations/count").json()["count"], 2);
}
