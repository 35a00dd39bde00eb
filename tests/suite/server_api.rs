//! memdb-server routes over a real store: REST conversation routes, search,
//! export, stats, the MCP tool shim, metrics, health and the OpenAPI
//! document, checked through HTTP like a client would.

use memdb::Systems;
use serde_json::{Value, json};

use crate::server_util::*;

fn create(s: &TestServer, label: &str, folder: &str, text: &str) -> String {
    let r = s.send(
        "POST",
        "/api/v1/conversations",
        &json!({"label": label, "folder": folder, "importance_score": 7.0,
                "metadata": null,
                "messages": [{"role": "user", "content": text, "timestamp": null, "metadata": null},
                             {"role": "assistant", "content": [{"type": "text", "text": "parts reply"}],
                              "timestamp": "2026-01-25T12:00:00"}]}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json();
    assert_eq!(v["id"], v["conversation_id"]);
    assert_eq!(v["label"], label);
    assert_eq!(v["folder"], folder);
    assert_eq!(v["status"], "active");
    assert_eq!(v["importance_score"], 7);
    assert_eq!(v["message_count"], 2);
    v["id"].as_str().unwrap().to_string()
}

#[test]
fn conversation_routes_change_what_get_list_and_count_show() {
    let s = TestServer::start(config());
    let a = create(&s, "Rust", "/work/rust", "borrow checker lifetimes");
    let b = create(&s, "Cooking", "/home", "sourdough starter recipe");

    let v = s.get(&format!("/api/v1/conversations/{a}")).json();
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    // Ordered by timestamp: the explicit 2026-01-25 message comes first.
    assert_eq!(msgs[0]["content"][0]["text"], "parts reply");
    assert_eq!(msgs[1]["content"], "borrow checker lifetimes");

    // Folder update keeps the label (Sekha overwrote it).
    let r = s.send(
        "PUT",
        &format!("/api/v1/conversations/{a}/folder"),
        &json!({"folder": "/work/systems"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["label"], "Rust");
    let r = s.send(
        "PUT",
        &format!("/api/v1/conversations/{a}/label"),
        &json!({"label": "Rust lang", "folder": "/work/rust"}),
    );
    assert_eq!(r.json()["label"], "Rust lang");
    assert_eq!(r.json()["folder"], "/work/rust");
    assert_eq!(
        s.req(
            "PUT",
            &format!("/api/v1/conversations/{a}/pin"),
            Some(KEY),
            None
        )
        .status,
        200
    );
    assert_eq!(
        s.req(
            "PUT",
            &format!("/api/v1/conversations/{b}/archive"),
            Some(KEY),
            None
        )
        .status,
        200
    );

    let v = s.get(&format!("/api/v1/conversations/{a}")).json();
    assert_eq!(v["pinned"], true);
    assert_eq!(v["importance_score"], 10);
    let list = |q: &str| s.get(&format!("/api/v1/conversations{q}")).json();
    let ids = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&list("?pinned=true")), vec![a.clone()]);
    assert_eq!(ids(&list("?archived=true")), vec![b.clone()]);
    assert_eq!(ids(&list("?archived=false")), vec![a.clone()]);
    assert_eq!(ids(&list("?folder=/work")), vec![a.clone()]);
    assert_eq!(ids(&list("?label=Cooking")), vec![b.clone()]);
    let page = list("?page=2&page_size=1");
    assert_eq!(page["total"], 2);
    assert_eq!(page["total_pages"], 2);
    assert_eq!(page["has_prev"], true);
    assert_eq!(page["has_next"], false);
    assert_eq!(page["results"].as_array().unwrap().len(), 1);
    assert_eq!(
        s.get("/api/v1/conversations/count?folder=/work").json()["count"],
        1
    );
    assert_eq!(
        s.get("/api/v1/conversations/count?label=Rust%20lang")
            .json()["count"],
        1
    );
    assert_eq!(s.get("/api/v1/conversations/count").json()["count"], 2);

    let r = s.req(
        "DELETE",
        &format!("/api/v1/conversations/{b}"),
        Some(KEY),
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["messages_deleted"], 2);
    assert_eq!(s.get(&format!("/api/v1/conversations/{b}")).status, 404);
    assert_eq!(conversation_count(&s), 1);
}

#[test]
fn search_export_and_stats() {
    let s = TestServer::start(config());
    let a = create(&s, "Rust", "/work", "borrow checker lifetimes explained");
    create(&s, "Bread", "/home", "sourdough starter feeding");

    let r = s.send(
        "POST",
        "/api/v1/query",
        &json!({"query": "lifetimes", "filters": {"folder": "/work"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["total"], 1);
    assert_eq!(v["results"][0]["conversation_id"], a.as_str());
    assert_eq!(v["results"][0]["label"], "Rust");
    assert!(v["results"][0]["score"].as_f64().unwrap() > 0.0);
    let r = s.send(
        "POST",
        "/api/v1/query",
        &json!({"query": "lifetimes", "filters": {"folder": "/home"}}),
    );
    assert_eq!(r.json()["total"], 0);

    let r = s.send(
        "POST",
        "/api/v1/search/fts",
        &json!({"query": "sourdough OR lifetimes", "limit": 10}),
    );
    let v = r.json();
    assert_eq!(v["total"], 2, "{v}");
    assert!(v["results"][0]["score"].as_f64() >= v["results"][1]["score"].as_f64());

    let v = s.get("/api/v1/export?format=json&folder=/work").json();
    assert_eq!(v["conversation_count"], 1);
    let doc: Value = serde_json::from_str(v["content"].as_str().unwrap()).unwrap();
    assert_eq!(doc["conversations"][0]["id"], a.as_str());
    let v = s.get("/api/v1/export").json();
    assert_eq!(v["format"], "markdown");
    assert!(v["content"].as_str().unwrap().contains("# Rust"));
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .contains("**Sessions:** 1  \n")
    );

    let v = s.get("/api/v1/stats").json();
    assert_eq!(v["success"], true);
    assert_eq!(v["data"]["total_conversations"], 2);
    assert_eq!(v["data"]["folders"], json!(["/home", "/work"]));
    assert_eq!(v["data"]["average_importance"], 7.0);
    assert_eq!(
        s.get("/api/v1/stats?folder=/home").json()["data"]["total_conversations"],
        1
    );

    let r = s.req("POST", "/api/v1/rebuild-embeddings", Some(KEY), None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["documents_indexed"], 4);
}

#[test]
fn mcp_tools_use_sekha_envelopes() {
    let s = TestServer::start(config());
    let tool = |name: &str, body: Value| {
        let r = s.send("POST", &format!("/mcp/tools/{name}"), &body);
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        let v = r.json();
        assert_eq!(v["success"], true, "{v}");
        assert!(v["error"].is_null());
        v["data"].clone()
    };
    let d = tool(
        "memory_store",
        json!({"label": "Trip", "folder": "/personal",
        "importance_score": 6.4,
        "messages": [{"role": "user", "content": "plan the kyoto trip", "timestamp": null, "metadata": {}}]}),
    );
    let id = d["conversation_id"].as_str().unwrap().to_string();
    assert_eq!(d["message_count"], 1);

    let d = tool(
        "memory_search",
        json!({"query": "kyoto", "limit": 5, "filter_labels": ["Trip"]}),
    );
    assert_eq!(d["total_results"], 1);
    assert_eq!(d["results"][0]["conversation_id"], id.as_str());
    assert_eq!(d["results"][0]["similarity"], d["results"][0]["score"]);
    let d = tool(
        "memory_search",
        json!({"query": "kyoto", "filter_labels": ["Other"]}),
    );
    assert_eq!(d["total_results"], 0);

    let d = tool(
        "memory_update",
        json!({"conversation_id": id, "label": "Kyoto", "importance_score": 6.0}),
    );
    assert_eq!(d["updated_fields"], json!(["label"]));
    let d = tool(
        "memory_update",
        json!({"conversation_id": id, "label": "Kyoto"}),
    );
    assert_eq!(d["updated_fields"], json!([]));

    let d = tool("memory_get_context", json!({"conversation_id": id}));
    assert_eq!(d["label"], "Kyoto");
    assert_eq!(d["importance_score"], 6);
    assert_eq!(d["messages"][0]["content"], "plan the kyoto trip");

    let d = tool(
        "memory_export",
        json!({"conversation_id": id, "format": "markdown"}),
    );
    let md = d["content"].as_str().unwrap();
    assert!(md.starts_with("# Kyoto"), "{md}");
    assert!(
        md.contains("**Sessions:** 1") && md.contains("**Word Count:**"),
        "{md}"
    );
    let d = tool(
        "memory_export",
        json!({"conversation_id": id, "format": "markdown", "include_metadata": false}),
    );
    let md = d["content"].as_str().unwrap();
    assert!(
        !md.contains("**Sessions:**") && !md.contains("**Word Count:**"),
        "{md}"
    );
    // JSON: sekha-mcp's flat object, `metadata` only with include_metadata.
    let d = tool("memory_export", json!({"conversation_id": id}));
    let doc: Value = serde_json::from_str(d["content"].as_str().unwrap()).unwrap();
    let mut keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut want = [
        "conversation_id",
        "label",
        "folder",
        "status",
        "importance_score",
        "created_at",
        "exported_at",
        "messages",
        "metadata",
    ];
    want.sort_unstable();
    assert_eq!(keys, want, "{doc}");
    assert_eq!(doc["conversation_id"], id.as_str());
    assert_eq!(doc["label"], "Kyoto");
    assert_eq!(doc["messages"][0]["content"], "plan the kyoto trip");
    assert!(doc["exported_at"].as_str().unwrap().ends_with('Z'), "{doc}");
    assert_eq!(doc["metadata"]["session_count"], 1);
    assert!(doc["metadata"]["word_count"].as_u64().unwrap() > 0, "{doc}");
    let d = tool(
        "memory_export",
        json!({"conversation_id": id, "include_metadata": false}),
    );
    let doc: Value = serde_json::from_str(d["content"].as_str().unwrap()).unwrap();
    assert!(doc.get("metadata").is_none(), "{doc}");
    assert_eq!(d["include_metadata"], false);

    let d = tool("memory_stats", json!({}));
    assert_eq!(d["total_conversations"], 1);
    assert_eq!(d["folders"], json!(["/personal"]));

    let tools = s.get("/api/v1/mcp/tools").json();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "memory_store",
            "memory_search",
            "memory_update",
            "memory_get_context",
            "memory_prune",
            "memory_export",
            "memory_stats"
        ]
    );
    let search = &tools[1]["inputSchema"];
    assert_eq!(search["required"], json!(["query"]));
    assert_eq!(search["properties"]["limit"]["maximum"], 50.0);
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["label"]["maxLength"],
        500
    );
}

/// `memory_store` without a label (issue 19): the engine's top suggestion
/// labels it; without a folder too, Sekha's folder rule places it; a
/// folder the client gives is kept.
#[test]
fn memory_store_without_a_label_is_auto_labelled() {
    let s = TestServer::start(config());
    let tool = |body: Value| {
        let r = s.send("POST", "/mcp/tools/memory_store", &body);
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()["data"].clone()
    };
    tool(json!({"label": "Rust: borrow checker", "folder": "/code",
                "messages": [{"role": "user", "content": "the rust borrow checker and lifetimes"}]}));
    let d = tool(json!({"messages": [
        {"role": "user", "content": "why does the rust borrow checker reject this borrow"}]}));
    assert_eq!(d["label"], "Rust: borrow checker", "{d}");
    assert_eq!(d["folder"], "/work", "{d}");
    assert_eq!(d["auto_label"]["applied"], true, "{d}");
    assert_eq!(d["auto_label"]["model"], "heuristic", "{d}");
    let id = d["conversation_id"].as_str().unwrap();
    let got = s.get(&format!("/api/v1/conversations/{id}")).json();
    assert_eq!(
        (&got["label"], &got["folder"]),
        (&json!("Rust: borrow checker"), &json!("/work"))
    );

    let d = tool(json!({"folder": "/notes", "messages": [
        {"role": "user", "content": "the borrow checker again"}]}));
    assert_eq!(d["folder"], "/notes", "{d}");
    assert_eq!(d["auto_label"]["applied"], true, "{d}");
    // A label the client sends is stored as given, with no auto_label.
    let d = tool(json!({"label": "Mine", "folder": "/n",
                "messages": [{"role": "user", "content": "the borrow checker"}]}));
    assert_eq!(d["label"], "Mine");
    assert!(d.get("auto_label").is_none(), "{d}");
}

#[test]
fn query_min_similarity_drops_distant_semantic_hits() {
    let hashing = std::sync::Arc::new(memdb::Hashing::new(256).unwrap());
    // Bare turns: under a passage rule with neighbours, the reply's vector
    // holds the message it follows and would clear the floor with it.
    let mut engine = memdb::Config::with_embedder(hashing);
    engine.message_passage = memdb::Passage::Turn;
    let s = TestServer::start_with(config(), engine);
    create(&s, "Bread", "/", "sourdough bread baking with a starter");
    create(&s, "Rust", "/", "borrow checker lifetimes and references");
    let run = |floor: Option<f64>| {
        let mut body = json!({"query": "sourdough bread baking", "mode": "semantic", "limit": 10});
        if let Some(f) = floor {
            body["min_similarity"] = json!(f);
        }
        s.send("POST", "/api/v1/query", &body)
    };
    // `create` adds a reply to each conversation: four messages in all.
    let all = run(None).json();
    assert_eq!(all["total"], 4, "{all}");
    let near = run(Some(0.5)).json();
    assert_eq!(near["total"], 1, "{near}");
    assert_eq!(near["results"][0]["label"], "Bread");
    assert!(near["results"][0]["score"].as_f64().unwrap() >= 0.5);
    assert_error(&run(Some(2.0)), 400);
}

#[test]
fn query_weights_reach_the_fusion_and_bad_ones_are_refused() {
    let hashing = std::sync::Arc::new(memdb::Hashing::new(256).unwrap());
    let s = TestServer::start_with(config(), memdb::Config::with_embedder(hashing));
    create(&s, "Bread", "/", "sourdough bread baking with a starter");
    create(&s, "Loaf", "/", "a bread loaf from the bakery");
    let ask = |query: &str, weights: serde_json::Value| {
        s.send(
            "POST",
            "/api/v1/query",
            &json!({"query": query, "limit": 10, "explain": true, "weights": weights}),
        )
    };
    let run = |weights: serde_json::Value| ask("sourdough bread", weights);
    // Both weights 0: every fused score is 0; and no neighbour entered.
    let out = run(json!({"keyword": 0, "semantic": 0, "neighbours": 0})).json();
    let r = out["results"].as_array().unwrap();
    assert!(!r.is_empty(), "{out}");
    assert!(r.iter().all(|h| h["explain"]["fused"] == 0.0), "{out}");
    assert!(
        r.iter().all(|h| h["explain"]["neighbour_of"].is_null()),
        "{out}"
    );
    let out = run(json!({})).json();
    assert!(
        out["results"][0]["explain"]["fused"].as_f64().unwrap() > 0.0,
        "{out}"
    );
    // One hit per conversation first: the two leaders differ.
    let out = run(json!({"per_conversation": 1, "neighbours": 0})).json();
    let r = out["results"].as_array().unwrap();
    assert_ne!(r[0]["conversation_id"], r[1]["conversation_id"], "{out}");
    assert_error(&run(json!({"per_conversation": 5000})), 400);
    assert_error(&run(json!({"neighbours": 2})), 400);
    assert_error(&run(json!({"nieghbours": 0})), 400);
    assert_error(&run(json!({"answers": -1})), 400);
    assert_error(&run(json!({"speaker": 1.5})), 400);
    assert_error(&run(json!({"second_neighbours": 2})), 400);
    assert_error(&run(json!({"questions": -1})), 400);
    assert_error(&run(json!({"short_turns": 1.5})), 400);
    assert_error(&run(json!({"previous_turn": -0.5})), 400);
    assert_error(&run(json!({"question_lift": 0.5})), 400);
    assert_error(&run(json!({"question_lift": 11})), 400);
    // A question: the semantic weight the fusion used is lifted, as given.
    let asked = |weights: serde_json::Value| {
        ask("sourdough bread?", weights).json()["results"][0]["explain"]["semantic_weight"].clone()
    };
    let lifted = asked(json!({})).as_f64().unwrap();
    let expected = f64::from(memdb::DEFAULT_SEMANTIC_WEIGHT * memdb::DEFAULT_QUESTION_LIFT);
    assert!((lifted - expected).abs() < 1e-6, "{lifted} != {expected}");
    let lifted = asked(json!({"semantic": 1, "question_lift": 2}))
        .as_f64()
        .unwrap();
    assert!((lifted - 2.0).abs() < 1e-6, "{lifted}");
    assert!(asked(json!({"question_lift": 1})).is_null());
    assert_eq!(
        run(
            json!({"second_neighbours": 0, "questions": 0.5, "short_turns": 0, "previous_turn": 1})
        )
        .status,
        200
    );
    // Speakers: a question naming Zara discounts Otto's turn by the share
    // given; `explain` shows the factor.
    let r = s.send(
        "POST",
        "/api/v1/conversations",
        &json!({"label": "Chat", "folder": "/chat", "messages": [
            {"role": "user", "content": "Otto: rye bread rises slowly"},
            {"role": "user", "content": "Zara: rye bread rises slowly here too"},
        ]}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let out = s
        .send(
            "POST",
            "/api/v1/query",
            &json!({"query": "What did Zara say about rye bread?", "limit": 10, "explain": true,
                    "filters": {"folder": "/chat"}, "weights": {"speaker": 0.5, "neighbours": 0}}),
        )
        .json();
    let factor = |opening: &str| {
        out["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["content"].as_str().unwrap().starts_with(opening))
            .map(|h| h["explain"]["speaker_factor"].clone())
    };
    assert_eq!(factor("Otto:"), Some(json!(0.5)), "{out}");
    assert_eq!(factor("Zara:"), Some(json!(1.0)), "{out}");
    assert!(
        out["results"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("Zara:"),
        "{out}"
    );
}

#[test]
fn health_metrics_and_openapi() {
    let s = TestServer::start(config());
    create(&s, "M", "/", "metrics please");
    s.get("/api/v1/conversations/count");
    let r = s.get("/metrics");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let text = r.text();
    assert!(text.contains(r#"memdb_http_requests_total{method="POST",route="/api/v1/conversations",status="201"} 1"#), "{text}");
    assert!(text.contains(r#"memdb_http_request_duration_seconds_count{method="GET",route="/api/v1/conversations/count"} 1"#));
    assert!(text.contains("memdb_conversations 1"));
    let store_line = text
        .lines()
        .find(|l| l.starts_with("memdb_store_bytes "))
        .unwrap();
    assert!(store_line[18..].trim().parse::<f64>().unwrap() > 0.0);
    let gauge = |text: &str, name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .trim()
            .parse()
            .unwrap()
    };
    // No search yet: the write is applied but not committed to text search.
    assert!(
        gauge(&text, "memdb_text_index_uncommitted_lsns") >= 1.0,
        "{text}"
    );
    let r = s.send(
        "POST",
        "/api/v1/search/fts",
        &json!({"query": "metrics", "limit": 10}),
    );
    assert_eq!(r.json()["total"], 1);
    let text = s.get("/metrics").text();
    assert_eq!(
        gauge(&text, "memdb_text_index_uncommitted_lsns"),
        0.0,
        "{text}"
    );
    assert!(gauge(&text, "memdb_text_index_segments") >= 1.0, "{text}");
    assert!(
        gauge(&text, "memdb_text_index_staged_bytes") >= 0.0,
        "{text}"
    );
    assert!(gauge(&text, "memdb_row_cache_bytes") > 0.0, "{text}");
    assert!(
        text.contains("memdb_row_cache_lookups_total{result=\"hit\"}")
            && text.contains("memdb_row_cache_lookups_total{result=\"miss\"}"),
        "{text}"
    );
    assert!(gauge(&text, "memdb_text_index_unsynced_lsns") >= 0.0);

    let doc = s.get("/openapi.json").json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/api/v1/conversations",
        "/api/v1/conversations/{id}/folder",
        "/api/v1/query",
        "/mcp/tools/memory_store",
        "/health",
        "/api/v1/summarize",
    ] {
        assert!(
            paths.contains_key(p),
            "{p} missing from the OpenAPI document"
        );
    }
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    assert!(doc["components"]["schemas"]["CreateConversation"].is_object());
}

#[test]
fn shutdown_closes_the_store_and_data_survives() {
    let s = TestServer::start(config());
    let id = create(&s, "Durable", "/", "persist me");
    let dir = s.stop();
    // The server released the directory lock: the store opens again.
    let db = memdb::Memdb::open(dir.path()).unwrap();
    let c = db.sekha().get_conversation(id.parse().unwrap()).unwrap();
    assert_eq!(c.label, "Durable");
    let hits = db
        .sekha()
        .search_text(&memdb::TextQuery::new("persist"))
        .unwrap();
    assert_eq!(hits.len(), 1);
}

/// A history stored as a client of the REST API stores it, each session
/// dated only in its conversation's metadata under a key of the client's
/// naming: a question naming a month favours that month's session
/// (SPEC.md §18.3), the period's boost shown by `explain`.
#[test]
fn a_session_dated_in_its_conversation_metadata_answers_a_question_naming_its_month() {
    let hashing = std::sync::Arc::new(memdb::Hashing::new(256).unwrap());
    let s = TestServer::start_with(config(), memdb::Config::with_embedder(hashing));
    for (n, date, text) in [
        (1, "3 July, 2018", "Ana: the hiking trip was long"),
        (2, "20 May, 2018", "Ana: the hiking trip was wet"),
    ] {
        let r = s.send(
            "POST",
            "/api/v1/conversations",
            &json!({
                "label": format!("session {n}"),
                "folder": "/ana",
                "metadata": {"date_time": date},
                "messages": [{"role": "user", "content": text, "metadata": {"turn_id": format!("S{n}:1")}}],
            }),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = s.send(
        "POST",
        "/api/v1/query",
        &json!({
            "query": "What did Ana say about the hiking trip in May 2018?",
            "limit": 10,
            "explain": true,
            "filters": {"folder": "/ana"},
        }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    let top = &out["results"][0];
    assert_eq!(top["content"], "Ana: the hiking trip was wet", "{out}");
    assert_eq!(top["explain"]["period_boost"], 0.5, "{out}");
    assert_eq!(out["results"][1]["explain"]["period_boost"], 0.0, "{out}");
}
