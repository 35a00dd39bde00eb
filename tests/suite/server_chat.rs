//! memdb-server's chat model (`--chat openai`, SPEC §23.8) against a local
//! fake OpenAI-compatible server ([`crate::http_stub`]): summaries, label
//! suggestions and importance scores use its answers, and every failure
//! (429 with `Retry-After`, 500, a timeout, malformed JSON) falls back to
//! the extractive summary and the heuristics, with a note saying so.

use std::time::Duration;

use serde_json::{Value, json};

use crate::http_stub::{Reply, Seen, Server};
use crate::server_util::{TestServer, config};

fn answer(text: &str) -> Reply {
    Reply::Json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "fake-chat",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}),
    )
}

/// A server whose chat model is the fake at `chat`, with one conversation;
/// returns it with the conversation's and its first message's ids.
fn server(
    chat: &Server,
    tune: impl FnOnce(&mut memdb_server::chat::ChatSettings),
) -> (TestServer, String, String) {
    let mut c = config();
    c.chat.provider = Some(memdb_server::chat::ChatChoice::Openai);
    c.chat.base_url = Some(chat.base());
    c.chat.model = Some("fake-chat".into());
    c.chat.key = Some("sk-chat-0123456789".into());
    c.chat.max_retries = Some(0);
    tune(&mut c.chat);
    let s = TestServer::start(c);
    let made = s
        .send(
            "POST",
            "/api/v1/conversations",
            &json!({"label": "Release", "folder": "/work", "messages": [
                {"role": "user", "content": "We decided to ship the release on Monday. It is urgent and important."},
                {"role": "assistant", "content": "Agreed: the release ships Monday after the final test run."}
            ]}),
        )
        .json();
    let id = made["id"].as_str().expect("conversation id").to_string();
    let conv = s.get(&format!("/api/v1/conversations/{id}")).json();
    let mid = conv["messages"][0]["id"]
        .as_str()
        .expect("message id")
        .to_string();
    (s, id, mid)
}

/// Summary, labels and score of the conversation, each answer's JSON.
fn ask(s: &TestServer, id: &str, mid: &str) -> (Value, Value, Value) {
    let summary = s.send(
        "POST",
        "/api/v1/summarize",
        &json!({"conversation_id": id, "level": "daily"}),
    );
    assert_eq!(summary.status, 200, "{}", summary.text());
    let labels = s.send(
        "POST",
        "/api/v1/labels/suggest",
        &json!({"conversation_id": id}),
    );
    assert_eq!(labels.status, 200, "{}", labels.text());
    let score = s.send(
        "POST",
        "/api/v1/messages/score",
        &json!({"message_id": mid}),
    );
    assert_eq!(score.status, 200, "{}", score.text());
    (summary.json(), labels.json(), score.json())
}

fn notes(v: &Value) -> String {
    v["notes"].to_string()
}

#[test]
fn a_working_chat_model_writes_summaries_labels_and_scores() {
    let chat = Server::start(|_, seen: &Seen| {
        let system = seen.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        if system.contains("summary") {
            answer("The team will ship the release on Monday.")
        } else if system.contains("labels") {
            answer(
                r#"[{"label": "Release planning", "confidence": 0.8, "reason": "about shipping"}]"#,
            )
        } else {
            answer("9 - a dated decision")
        }
    });
    let (s, id, mid) = server(&chat, |_| {});
    let (summary, labels, score) = ask(&s, &id, &mid);
    assert_eq!(summary["model"], "fake-chat", "{summary}");
    assert_eq!(
        summary["summary"],
        "The team will ship the release on Monday."
    );
    assert!(summary.get("notes").is_none(), "{summary}");
    assert_eq!(labels["model"], "fake-chat", "{labels}");
    assert_eq!(labels["top_suggestion"]["label"], "Release planning");
    assert_eq!(score["model"], "fake-chat", "{score}");
    assert_eq!(score["factors"]["llm"], 9.0, "{score}");
    let seen = chat.seen();
    assert_eq!(seen.len(), 3);
    for r in &seen {
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(
            r.authorization.as_deref(),
            Some("Bearer sk-chat-0123456789")
        );
        assert_eq!(r.body["model"], "fake-chat");
    }
    assert!(
        seen[0].body["messages"][1]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("ship the release on Monday")
    );
}

/// Asserts that all three answers fell back and their notes name `why`.
fn assert_fell_back(s: &TestServer, id: &str, mid: &str, why: &str) {
    let (summary, labels, score) = ask(s, id, mid);
    assert_eq!(summary["model"], "extractive", "{summary}");
    assert!(!summary["summary"].as_str().unwrap_or_default().is_empty());
    assert!(
        notes(&summary).contains("extractive summary used") && notes(&summary).contains(why),
        "{summary}"
    );
    assert_eq!(labels["model"], "heuristic", "{labels}");
    assert!(
        !labels["suggestions"]
            .as_array()
            .expect("suggestions")
            .is_empty()
    );
    assert!(
        notes(&labels).contains("heuristic used") && notes(&labels).contains(why),
        "{labels}"
    );
    assert_eq!(score["model"], "heuristic", "{score}");
    assert!(
        notes(&score).contains("heuristic used") && notes(&score).contains(why),
        "{score}"
    );
    // The key never appears in what the client reads.
    for v in [&summary, &labels, &score] {
        assert!(!v.to_string().contains("sk-chat-0123456789"));
    }
}

#[test]
fn rate_limits_fall_back_unless_the_wait_is_short() {
    // Retry-After beyond the longest wait (5 s): no retry, heuristic at once.
    let chat = Server::start(|_, _| {
        Reply::Raw(
            429,
            "retry-after: 120\r\n",
            r#"{"error":{"message":"slow down"}}"#.into(),
        )
    });
    let (s, id, mid) = server(&chat, |c| c.max_retries = Some(3));
    assert_fell_back(&s, &id, &mid, "rate limited");
    assert!(
        notes(
            &s.send(
                "POST",
                "/api/v1/messages/score",
                &json!({"message_id": mid})
            )
            .json()
        )
        .contains("120 s")
    );
    assert_eq!(chat.seen().len(), 4, "one attempt each");

    // Retry-After: 1 is honoured: the retry succeeds.
    let chat = Server::start(|n, _| {
        if n == 0 {
            Reply::Raw(429, "retry-after: 1\r\n", "{}".into())
        } else {
            answer("7")
        }
    });
    let (s, _, mid) = server(&chat, |c| c.max_retries = Some(1));
    let score = s
        .send(
            "POST",
            "/api/v1/messages/score",
            &json!({"message_id": mid}),
        )
        .json();
    assert_eq!(score["model"], "fake-chat", "{score}");
    assert_eq!(chat.seen().len(), 2);
}

#[test]
fn server_errors_fall_back() {
    let chat =
        Server::start(|_, _| Reply::Json(500, json!({"error": {"message": "model crashed"}})));
    let (s, id, mid) = server(&chat, |_| {});
    assert_fell_back(&s, &id, &mid, "HTTP 500");
}

#[test]
fn timeouts_fall_back() {
    let chat = Server::start(|_, _| Reply::Stall(Duration::from_secs(3)));
    let (s, id, mid) = server(&chat, |c| c.timeout_secs = Some(1));
    assert_fell_back(&s, &id, &mid, "timeout");
}

#[test]
fn malformed_answers_fall_back() {
    let chat = Server::start(|_, _| Reply::Raw(200, "", "{\"choices\": [oops".into()));
    let (s, id, mid) = server(&chat, |_| {});
    assert_fell_back(&s, &id, &mid, "not valid JSON");
}
