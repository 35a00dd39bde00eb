//! Natural-language questions (SPEC.md §16.2): what a person or an agent
//! asks, with `CS:GO`, `C++`, `node:18`, `user@host`, `3:30pm`, `AND`/`OR`/
//! `NOT` as words, `(parentheses)`, `*`, a lone `"` and a balanced
//! `"title"` in it, answers through every natural-language surface (the
//! engine, `POST /api/v1/query`, the MCP `memory_search` tool over REST and
//! streamable HTTP, `POST /mcp/memory/search`) without an embedder, in
//! hybrid and in semantic mode, and finds the message naming the thing: the
//! keyword side runs (no "skipped" note). Only `search/fts` and keyword
//! mode of the engine keep the query syntax. `memdb query` is covered in
//! `cli/tests/cli.rs`.

use memdb::Systems;
use std::sync::{Arc, OnceLock};

use memdb::{
    Config, Embedder, Hashing, LocalOnnx, Memdb, QueryLanguage, QueryLimits, SearchMode,
    SearchNote, SearchRequest, default_models_dir,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::server_util::{KEY, TestServer, config, raw};
use crate::{conv, tmp};

/// One message per conversation, labelled by what it is about; some share
/// ordinary words with another's question (distractors).
const CORPUS: &[(&str, &str)] = &[
    (
        "cs",
        "John wants to organize a CS:GO tournament next spring.",
    ),
    ("party", "John plans to organize the office party in March."),
    (
        "cpp",
        "Maria writes the firmware in C++ because the vendor toolchain requires it.",
    ),
    ("tea", "Maria prefers green tea over coffee in the morning."),
    (
        "node",
        "The CI build image is pinned to node:18 until the upgrade lands.",
    ),
    (
        "ssh",
        "Deploy with ssh deploy@buildbox, then restart the service.",
    ),
    (
        "dentist",
        "The dentist appointment moved to 3:30pm on Thursday.",
    ),
    (
        "street",
        "The dentist office is on Main Street, next to the bakery.",
    ),
    (
        "logs",
        "Whether we keep the logs or not depends on the retention policy.",
    ),
    (
        "skillet",
        "The cast-iron skillet (the seasoned one) goes in the oven at 200 degrees.",
    ),
    (
        "hotel",
        "The hotel by the lake got a 4* rating from the guide.",
    ),
    (
        "movie",
        "Joanna watched Eternal Sunshine of the Spotless Mind in 2019.",
    ),
    (
        "book",
        "My favourite novel is \"The Left Hand of Darkness\" by Ursula Le Guin.",
    ),
    ("weather", "It rained all weekend, so we stayed inside."),
];

/// Each question and the label of the message it names.
const QUESTIONS: &[(&str, &str)] = &[
    (
        "Which game tournaments does John plan to organize besides CS:GO?",
        "cs",
    ),
    ("Why does Maria write firmware in C++?", "cpp"),
    ("Which CI image is pinned to node:18?", "node"),
    ("How do I deploy as deploy@buildbox?", "ssh"),
    ("Is the dentist appointment at 3:30pm?", "dentist"),
    ("Do we keep logs AND backups OR NOT?", "logs"),
    (
        "Does the skillet (the seasoned one) go in the oven?",
        "skillet",
    ),
    ("Which hotel got a 4* rating?", "hotel"),
    (
        "When did Joanna first watch \"Eternal Sunshine of the Spotless Mind?",
        "movie",
    ),
    ("Who wrote \"The Left Hand of Darkness\"?", "book"),
];

/// How many of the top hits may hold the target when the semantic ranking
/// takes part (fusion may put a close paraphrase first); keyword alone must
/// rank it first.
const FUSED_TOP: usize = 3;

fn local() -> Arc<dyn Embedder> {
    static MODEL: OnceLock<Arc<LocalOnnx>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = default_models_dir().expect("models dir");
            Arc::new(LocalOnnx::open(&dir).unwrap_or_else(|e| {
                panic!("{e}\n(these tests need scripts/install-model.sh to have run)")
            }))
        })
        .clone()
}

/// A store holding [`CORPUS`], embedded when `embedder` is given.
fn corpus_db(dir: &std::path::Path, embedder: Option<Arc<dyn Embedder>>) -> Memdb {
    let db = match embedder {
        Some(e) => Memdb::open_with(dir, Config::with_embedder(e)).expect("open"),
        None => Memdb::open(dir).expect("open"),
    };
    for (label, text) in CORPUS {
        conv(&db, label, "/", &[text]);
    }
    if db.config().embedder.is_some() {
        db.embed_pending(None, &mut |_| {}).expect("embed");
    }
    db
}

fn no_skip(notes: &[SearchNote], q: &str) {
    assert!(
        !notes.iter().any(|n| matches!(
            n,
            SearchNote::KeywordSkipped { .. }
                | SearchNote::KeywordNoWords
                | SearchNote::KeywordStopWordsOnly
        )),
        "{q:?}: {notes:?}"
    );
}

/// A question asks in the base form what a turn says in the past (SPEC.md
/// §5, `memdb_en`): "run" finds "ran", "go" finds "went", "buy" finds
/// "bought", and the other way round. Each distractor shares the rest of
/// the words and is shorter, so without base forms BM25 would rank it
/// first.
#[test]
fn a_question_in_the_base_form_finds_the_turn_in_the_past() {
    let d = tmp();
    let db = Memdb::open(d.path()).expect("open");
    for (label, text) in [
        (
            "ran",
            "Ana: I ran a charity race for the shelter last Saturday",
        ),
        ("race", "Ana: a charity race for the shelter"),
        ("went", "Ana: we finally went camping by the lake"),
        ("camping", "Ana: camping by the lake"),
        ("bought", "Ana: I bought a blender for my mom"),
        ("blender", "Ana: a blender for my mom"),
        ("run", "Ana: I will run the bake sale"),
        ("sale", "Ana: a bake sale"),
    ] {
        conv(&db, label, "/", &[text]);
    }
    for (q, label) in [
        ("When did Ana run a charity race?", "ran"),
        ("Where did Ana go camping?", "went"),
        ("What did Ana buy for her mom?", "bought"),
        ("Who ran the bake sale?", "run"),
    ] {
        let r = db.sekha().search(&SearchRequest::new(q)).expect("search");
        assert_eq!(
            r.hits.first().map(|h| h.label.as_str()),
            Some(label),
            "{q:?}: {:?}",
            r.hits.iter().map(|h| &h.label).collect::<Vec<_>>()
        );
    }
}

#[test]
fn engine_answers_questions_in_every_configuration() {
    let d = tmp();
    let db = corpus_db(d.path(), None);
    for (q, label) in QUESTIONS {
        // Keyword only: hybrid without an embedder, and keyword mode read
        // as natural language.
        for req in [
            SearchRequest::new(*q),
            SearchRequest::new(*q)
                .mode(SearchMode::Keyword)
                .language(QueryLanguage::Natural),
        ] {
            let r = db
                .sekha()
                .search(&req)
                .unwrap_or_else(|e| panic!("{q:?} ({:?}): {e}", req.mode));
            assert_eq!(r.mode, SearchMode::Keyword);
            no_skip(&r.notes, q);
            assert_eq!(
                r.hits.first().map(|h| h.label.as_str()),
                Some(*label),
                "{q:?}"
            );
        }
    }
    // Keyword mode reads the syntax by default: the same question is a
    // syntax error there.
    let e = db
        .sekha()
        .search(&SearchRequest::new(QUESTIONS[0].0).mode(SearchMode::Keyword))
        .unwrap_err();
    assert!(e.to_string().contains("CS"), "{e}");
    assert!(
        db.sekha()
            .search(&SearchRequest::new("\"").mode(SearchMode::Keyword))
            .is_err()
    );

    let d = tmp();
    let db = corpus_db(d.path(), Some(local()));
    for (q, label) in QUESTIONS {
        let mut req = SearchRequest::new(*q);
        req.explain = true;
        let r = db
            .sekha()
            .search(&req)
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
        assert_eq!(r.mode, SearchMode::Hybrid);
        no_skip(&r.notes, q);
        let pos = r.hits.iter().position(|h| h.label == *label);
        assert!(
            pos.is_some_and(|p| p < FUSED_TOP),
            "{q:?}: {:?}",
            r.hits.iter().map(|h| &h.label).collect::<Vec<_>>()
        );
        // The keyword side ran and ranked the target first.
        let explain = pos.and_then(|p| r.hits[p].explain);
        assert_eq!(explain.and_then(|e| e.keyword_rank), Some(1), "{q:?}");
        let r = db
            .sekha()
            .search(&SearchRequest::new(*q).mode(SearchMode::Semantic))
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
        assert!(
            r.hits[..FUSED_TOP].iter().any(|h| h.label == *label),
            "{q:?} semantic: {:?}",
            r.hits.iter().map(|h| &h.label).collect::<Vec<_>>()
        );
    }
}

#[test]
fn questions_of_nothing_but_stop_words_or_punctuation() {
    let d = tmp();
    let db = corpus_db(d.path(), None);
    // No content word, no embedder: every word counts (stop words match).
    let r = db
        .sekha()
        .search(&SearchRequest::new("is it on the"))
        .unwrap();
    assert!(!r.hits.is_empty());
    // No word at all: no keyword hit, a note, no error.
    for q in ["*", "\"", "( ) ?", "AND OR NOT"] {
        let r = db.sekha().search(&SearchRequest::new(q)).unwrap();
        if q == "AND OR NOT" {
            // Three stop words: matched as words.
            assert!(r.hits.iter().any(|h| h.label == "logs"), "{q:?}");
        } else {
            assert!(r.hits.is_empty(), "{q:?}");
            assert!(r.notes.contains(&SearchNote::NoWords), "{q:?}");
        }
    }
    let d = tmp();
    let db = corpus_db(d.path(), Some(Arc::new(Hashing::new(64).expect("hashing"))));
    let r = db
        .sekha()
        .search(&SearchRequest::new("is it on the"))
        .unwrap();
    assert!(
        r.notes.contains(&SearchNote::KeywordStopWordsOnly),
        "{:?}",
        r.notes
    );
    let r = db.sekha().search(&SearchRequest::new("* ?")).unwrap();
    assert!(
        r.notes.contains(&SearchNote::KeywordNoWords),
        "{:?}",
        r.notes
    );
}

/// Text made of pieces that stress the query syntax, unicode and quotes.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            "\"",
            "'",
            "(",
            ")",
            "[",
            "]",
            "{",
            "}",
            ":",
            "*",
            "?",
            "~",
            "^",
            "+",
            "-",
            "!",
            "\\",
            "/",
            "AND",
            "OR",
            "NOT",
            "IN",
            "TO",
            "content:",
            "role:",
            "title:/.*/",
            "a*",
            "\"a b\"~2",
            "*:*",
            "C++",
            "node:18",
            "user@host",
            "3:30pm",
            " ",
            "  ",
            "\t",
            "\n",
            "CS:GO",
            "rust",
            "the",
            "é",
            "日本語",
            "🙂",
            "\u{0}",
            "\u{200b}",
        ])
        .prop_map(str::to_string),
        "[\\PC]{1,8}",
        "[ -~]{1,8}",
    ];
    prop::collection::vec(piece, 0..40).prop_flat_map(|pieces| {
        let base = pieces.concat();
        // Sometimes grown to around the length limit (8 KiB).
        (Just(base), 0usize..4).prop_map(|(base, grow)| {
            if grow == 0 && !base.is_empty() {
                let limit = QueryLimits::DEFAULT.max_bytes;
                let mut s = String::new();
                while s.len() < limit - 64 {
                    s.push_str(&base);
                }
                s.push_str(&base);
                s
            } else {
                base
            }
        })
    })
}

fn prop_db() -> &'static Memdb {
    static DB: OnceLock<(tempfile::TempDir, Memdb)> = OnceLock::new();
    let (_, db) = DB.get_or_init(|| {
        let d = tmp();
        let db = corpus_db(d.path(), Some(Arc::new(Hashing::new(64).expect("hashing"))));
        (d, db)
    });
    db
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Any text up to the length limit is a question the natural-language
    /// path answers; over it, the error names the limit. Never a syntax
    /// error, in keyword, hybrid or semantic mode.
    #[test]
    fn any_text_is_a_natural_language_query(q in hostile_text()) {
        let db = prop_db();
        let limit = QueryLimits::DEFAULT.max_bytes;
        for mode in [SearchMode::Keyword, SearchMode::Hybrid, SearchMode::Semantic] {
            let req = SearchRequest::new(q.as_str())
                .mode(mode)
                .language(QueryLanguage::Natural);
            match db.sekha().search(&req) {
                Ok(r) => {
                    // Semantic mode has no keyword side and no budget (the
                    // surfaces bound its length; the embedder truncates).
                    prop_assert!(
                        q.len() <= limit || mode == SearchMode::Semantic,
                        "{mode:?}: {} bytes accepted", q.len()
                    );
                    prop_assert!(r.hits.len() <= 10);
                    // The keyword side is skipped only for want of words,
                    // never because the text did not parse.
                    for n in &r.notes {
                        prop_assert!(
                            !matches!(n, SearchNote::KeywordSkipped { .. }),
                            "{mode:?} {q:?}: {n}"
                        );
                    }
                }
                Err(e) => {
                    let e = e.to_string();
                    let empty = q.trim().is_empty() && e.contains("query is empty");
                    let long = q.len() > limit && e.contains("the limit is 8192 bytes");
                    prop_assert!(empty || long, "{mode:?} {} bytes: {e}", q.len());
                }
            }
        }
    }
}

// ----- the server -------------------------------------------------------------

fn store_corpus(s: &TestServer) {
    for (label, text) in CORPUS {
        let r = s.send(
            "POST",
            "/api/v1/conversations",
            &json!({"label": label, "folder": "/",
                    "messages": [{"role": "user", "content": text}]}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
}

/// Labels of a result list, best first.
fn labels(results: &Value) -> Vec<String> {
    results
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["label"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn mcp_headers(session: Option<&str>) -> Vec<(String, String)> {
    let mut h = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        (
            "Accept".to_string(),
            "application/json, text/event-stream".to_string(),
        ),
        ("Authorization".to_string(), format!("Bearer {KEY}")),
        ("Mcp-Protocol-Version".to_string(), "2025-06-18".to_string()),
    ];
    if let Some(id) = session {
        h.push(("Mcp-Session-Id".to_string(), id.to_string()));
    }
    h
}

/// The JSON-RPC message of a streamable-HTTP answer (plain JSON or SSE).
fn rpc_body(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str(text) {
        return v;
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {text}"))
}

/// Opens a native MCP session on `/mcp`.
fn mcp_session(s: &TestServer) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "natural-language", "version": "1"}}});
    let r = raw(
        s.addr,
        "POST",
        "/mcp",
        &mcp_headers(None),
        Some(init.to_string().as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.header("mcp-session-id").expect("session id").to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = raw(
        s.addr,
        "POST",
        "/mcp",
        &mcp_headers(Some(&id)),
        Some(note.to_string().as_bytes()),
    );
    assert_eq!(r.status, 202, "{}", r.text());
    id
}

/// `memory_search` over native MCP: (labels, notes, mode).
fn mcp_search(s: &TestServer, session: &str, q: &str) -> (Vec<String>, Value, Value) {
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": q, "limit": 10}}});
    let r = raw(
        s.addr,
        "POST",
        "/mcp",
        &mcp_headers(Some(session)),
        Some(call.to_string().as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = rpc_body(&r.text());
    let result = &v["result"];
    assert_eq!(result["isError"], json!(false), "{q:?}: {v}");
    let data = &result["structuredContent"];
    (
        labels(&data["results"]),
        data["notes"].clone(),
        data["mode"].clone(),
    )
}

/// Asks every question through every natural-language route; the target
/// must be within the first `top` results, in `mode`.
fn ask_everywhere(s: &TestServer, mode: &str, top: usize) {
    let session = mcp_session(s);
    for (q, label) in QUESTIONS {
        let check = |route: &str, got: &[String], notes: &Value, used: &Value| {
            assert_eq!(used, mode, "{route} {q:?}");
            assert!(
                !notes.to_string().contains("skipped"),
                "{route} {q:?}: {notes}"
            );
            assert!(
                got.iter().take(top).any(|l| l == label),
                "{route} {q:?}: {got:?}"
            );
        };
        let r = s.send("POST", "/api/v1/query", &json!({"query": q}));
        assert_eq!(r.status, 200, "{q:?}: {}", r.text());
        let v = r.json();
        check(
            "/api/v1/query",
            &labels(&v["results"]),
            &v["notes"],
            &v["mode"],
        );
        let r = s.send("POST", "/mcp/memory/search", &json!({"query": q}));
        assert_eq!(r.status, 200, "{q:?}: {}", r.text());
        let v = r.json();
        check(
            "/mcp/memory/search",
            &labels(&v["results"]),
            &v["notes"],
            &v["mode"],
        );
        let r = s.send("POST", "/mcp/tools/memory_search", &json!({"query": q}));
        assert_eq!(r.status, 200, "{q:?}: {}", r.text());
        let v = r.json();
        let d = &v["data"];
        check(
            "/mcp/tools/memory_search",
            &labels(&d["results"]),
            &d["notes"],
            &d["mode"],
        );
        let (got, notes, used) = mcp_search(s, &session, q);
        check("/mcp memory_search", &got, &notes, &used);
    }
}

#[test]
fn server_answers_questions_without_an_embedder() {
    let s = TestServer::start(config());
    store_corpus(&s);
    ask_everywhere(&s, "keyword", 1);
    for (q, label) in QUESTIONS {
        // `mode: keyword` on /api/v1/query is natural language too.
        let r = s.send(
            "POST",
            "/api/v1/query",
            &json!({"query": q, "mode": "keyword"}),
        );
        assert_eq!(r.status, 200, "{q:?}: {}", r.text());
        assert_eq!(
            labels(&r.json()["results"]).first(),
            Some(&label.to_string())
        );
    }
    // search/fts keeps the query syntax and its errors.
    let r = s.send(
        "POST",
        "/api/v1/search/fts",
        &json!({"query": QUESTIONS[0].0}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("CS"), "{}", r.text());
    let r = s.send("POST", "/api/v1/search/fts", &json!({"query": "\""}));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = s.send(
        "POST",
        "/api/v1/search/fts",
        &json!({"query": "organize AND NOT party"}),
    );
    assert_eq!(labels(&r.json()["results"]), vec!["cs".to_string()]);
    s.stop();
}

#[test]
fn server_answers_questions_with_the_local_model() {
    let s = TestServer::start_with(config(), Config::with_embedder(local()));
    store_corpus(&s);
    // The server embeds in the background: wait until nothing is pending.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let r = s.send(
            "POST",
            "/api/v1/query",
            &json!({"query": "anything", "mode": "semantic"}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        if !r.json()["notes"].to_string().contains("not embedded yet") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "messages still not embedded: {}",
            r.text()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    ask_everywhere(&s, "hybrid", FUSED_TOP);
    for (q, label) in QUESTIONS {
        let r = s.send(
            "POST",
            "/api/v1/query",
            &json!({"query": q, "mode": "semantic"}),
        );
        assert_eq!(r.status, 200, "{q:?}: {}", r.text());
        let got = labels(&r.json()["results"]);
        assert!(
            got.iter().take(FUSED_TOP).any(|l| l == label),
            "semantic {q:?}: {got:?}"
        );
    }
    s.stop();
}
