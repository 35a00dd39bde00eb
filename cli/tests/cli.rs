//! End-to-end tests of the `memdb` binary: each test runs the built binary
//! against a fresh temporary data directory and checks stdout, stderr and the
//! exit code (0 success, 1 runtime error, 2 usage error).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{Run, exec};

use serde_json::{Value, json};

/// A temporary data directory and a way to run `memdb --data DIR ...` on it.
struct Db {
    dir: tempfile::TempDir,
}

impl Db {
    fn new() -> Db {
        Db {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_stdin(args, None)
    }

    fn run_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
        cmd.env_remove("MEMDB_DATA")
            .env_remove("MEMDB_EMBEDDER")
            .env_remove("MEMDB_NAMESPACE")
            .arg("--data")
            .arg(self.data());
        cmd.args(args);
        exec(cmd, stdin)
    }

    /// Stores `body` from stdin and returns the new conversation id.
    fn store(&self, body: &Value) -> String {
        let out = self
            .run_stdin(&["--json", "store"], Some(body.to_string().as_bytes()))
            .ok()
            .json();
        out["id"].as_str().expect("id").to_string()
    }

    fn count(&self) -> u64 {
        if !self.data().join("memdb.redb").exists() {
            // Nothing was ever written: commands that only read refuse a
            // directory without a store (checked in `read_commands_need_a_store`).
            return 0;
        }
        let out = self.run(&["--json", "count"]).ok().json();
        out["count"].as_u64().expect("count")
    }

    fn messages_total(&self) -> u64 {
        let out = self.run(&["--json", "stats"]).ok().json();
        out["total_messages"].as_u64().expect("total_messages")
    }
}

fn rust_conversation() -> Value {
    json!({
        "label": "Rust ownership",
        "folder": "/work/rust",
        "importance_score": 7,
        "metadata": {"source": "test"},
        "messages": [
            {"role": "user", "content": "How does the borrow checker handle mutable references?",
             "timestamp": "2026-01-25T12:00:00Z"},
            {"role": "assistant",
             "content": [{"type": "text", "text": "Only one mutable reference may exist at a time."}],
             "timestamp": "2026-01-25T12:00:05"}
        ]
    })
}

fn cooking_conversation() -> Value {
    json!({
        "label": "Dinner",
        "folder": "/home",
        "messages": [
            {"role": "user", "content": "A recipe for tomato soup please"},
            {"role": "assistant", "content": "Roast the tomatoes first, then blend."}
        ]
    })
}

// ----- store and query ---------------------------------------------------

#[test]
fn namespaces_keep_records_apart() {
    let db = Db::new();
    let body = rust_conversation().to_string();
    let out = db
        .run_stdin(
            &["--json", "--namespace", "team-a", "store"],
            Some(body.as_bytes()),
        )
        .ok()
        .json();
    let id = out["id"].as_str().expect("id").to_string();
    db.store(&cooking_conversation());
    let in_a = db
        .run(&[
            "--json",
            "--namespace",
            "team-a",
            "query",
            "borrow checker",
            "--mode",
            "keyword",
        ])
        .ok()
        .json();
    let results = in_a["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{in_a}");
    assert_eq!(results[0]["conversation_id"], id.as_str());
    // The default namespace has only the cooking conversation.
    let default = db
        .run(&["--json", "query", "borrow checker", "--mode", "keyword"])
        .ok()
        .json();
    assert_eq!(
        default["results"].as_array().map(Vec::len),
        Some(0),
        "{default}"
    );
    assert_eq!(db.count(), 1);
    let counted = db
        .run(&["--json", "--namespace", "team-a", "count"])
        .ok()
        .json();
    assert_eq!(counted["count"].as_u64(), Some(1));
    // A bad name is refused before anything is opened.
    db.run(&["--namespace", "a b", "count"])
        .fails_with(&["namespace"]);
}

#[test]
fn store_from_stdin_then_query_finds_it() {
    let db = Db::new();
    let body = rust_conversation().to_string();
    let stored = db.run_stdin(&["store"], Some(body.as_bytes())).ok();
    assert!(
        stored.stdout.starts_with("stored conversation "),
        "{}",
        stored.stdout
    );
    assert!(stored.stdout.contains("(2 messages)"));
    assert!(stored.stdout.contains("label=\"Rust ownership\""));
    assert!(stored.stdout.contains("folder=/work/rust"));
    let id = stored
        .stdout
        .split_whitespace()
        .nth(2)
        .expect("id")
        .to_string();
    db.store(&cooking_conversation());

    let out = db.run(&["--json", "query", "borrow checker"]).ok().json();
    assert_eq!(out["query"], "borrow checker");
    let results = out["results"].as_array().expect("results");
    assert_eq!(out["total"].as_u64(), Some(results.len() as u64));
    assert!(!results.is_empty());
    let top = &results[0];
    assert_eq!(top["conversation_id"], id.as_str());
    assert!(top["message_id"].as_str().is_some_and(|s| s.len() == 36));
    assert!(top["score"].as_f64().is_some_and(|s| s > 0.0));
    assert_eq!(top["label"], "Rust ownership");
    assert_eq!(top["folder"], "/work/rust");
    assert_eq!(top["role"], "user");
    assert_eq!(top["timestamp"], "2026-01-25T12:00:00Z");
    assert!(
        top["content"]
            .as_str()
            .is_some_and(|c| c.contains("borrow"))
    );

    let human = db
        .run(&["query", "borrow checker", "--mode", "keyword"])
        .ok();
    assert!(human.stdout.contains("Rust ownership"), "{}", human.stdout);
    assert!(human.stdout.contains("/work/rust"));
    assert!(human.stdout.contains("How does the borrow checker"));
    assert!(!human.stdout.contains("Dinner"));
}

#[test]
fn query_filters_and_paging() {
    let db = Db::new();
    let rust = db.store(&rust_conversation());
    let soup = db.store(&cooking_conversation());
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--json", "query", "--mode", "keyword"];
        all.extend_from_slice(args);
        db.run(&all).ok().json()["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["conversation_id"].as_str().expect("id").to_string())
            .collect()
    };
    // "exist OR roast" matches the assistant message of each conversation.
    assert_eq!(ids(&["exist OR roast"]).len(), 2);
    assert_eq!(
        ids(&["exist OR roast", "--folder", "/home"]),
        [soup.as_str()]
    );
    assert_eq!(
        ids(&["exist OR roast", "--label", "Rust ownership"]),
        [rust.as_str()]
    );
    assert_eq!(
        ids(&["exist OR roast", "--conversation", &rust]),
        [rust.as_str()]
    );
    assert_eq!(
        ids(&["exist OR roast", "--min-importance", "6"]),
        [rust.as_str()]
    );
    assert_eq!(ids(&["exist OR roast", "--role", "assistant"]).len(), 2);
    assert_eq!(ids(&["exist OR roast", "--limit", "1"]).len(), 1);
    assert_eq!(ids(&["exist OR roast", "--offset", "1"]).len(), 1);
    assert_eq!(
        ids(&[
            "exist OR roast",
            "--until",
            "2026-01-25T12:00:06Z",
            "--since",
            "2026-01-25"
        ]),
        [rust.as_str()]
    );
    assert!(ids(&["exist", "--status", "archived"]).is_empty());
    assert_eq!(ids(&["exist"]), [rust.as_str()]);
    let none = db.run(&["query", "zebra", "--mode", "keyword"]).ok();
    assert!(none.stdout.contains("no results"), "{}", none.stdout);
}

#[test]
fn store_from_file_emits_the_whole_conversation() {
    let db = Db::new();
    let file = db.path().join("conv.json");
    std::fs::write(&file, rust_conversation().to_string()).expect("write");
    let out = db
        .run(&["store", file.to_str().expect("path"), "--json"])
        .ok()
        .json();
    assert!(out["id"].as_str().is_some());
    assert_eq!(out["label"], "Rust ownership");
    assert_eq!(out["folder"], "/work/rust");
    assert_eq!(out["status"], "active");
    assert_eq!(out["importance_score"], 7);
    assert_eq!(out["message_count"], 2);
    assert_eq!(out["metadata"]["source"], "test");
    assert!(out["created_at"].as_str().is_some());
    let messages = out["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["content"][0]["type"], "text");
    // `-` also means stdin.
    let body = cooking_conversation().to_string();
    db.run_stdin(&["store", "-"], Some(body.as_bytes())).ok();
    assert_eq!(db.count(), 2);
    // The same body REST takes: a fractional importance is rounded, as
    // `POST /api/v1/conversations` does.
    let mut frac = cooking_conversation();
    frac["importance_score"] = json!(7.5);
    let out = db
        .run_stdin(&["store", "-", "--json"], Some(frac.to_string().as_bytes()))
        .ok()
        .json();
    assert_eq!(out["importance_score"], 8);
}

// ----- the other subcommands ---------------------------------------------

#[test]
fn append_accepts_an_array_or_an_object() {
    let db = Db::new();
    let id = db.store(&rust_conversation());
    let array = json!([{"role": "user", "content": "And shared references?"}]).to_string();
    let out = db.run_stdin(&["append", &id], Some(array.as_bytes())).ok();
    assert!(
        out.stdout
            .contains(&format!("appended 1 message to conversation {id}")),
        "{}",
        out.stdout
    );
    let object = json!({"messages": [
        {"role": "assistant", "content": "Any number of them."},
        {"role": "user", "content": "Thanks"}
    ]})
    .to_string();
    let file = db.path().join("more.json");
    std::fs::write(&file, object).expect("write");
    let out = db
        .run(&["--json", "append", &id, file.to_str().expect("path")])
        .ok()
        .json();
    assert_eq!(out["conversation_id"], id.as_str());
    assert_eq!(out["appended"], 2);
    assert_eq!(out["messages"].as_array().map(Vec::len), Some(2));
    let conv = db.run(&["--json", "get", &id]).ok().json();
    assert_eq!(conv["message_count"], 5);
    assert_eq!(conv["messages"][4]["content"], "Thanks");
}

#[test]
fn get_shows_conversation_and_messages() {
    let db = Db::new();
    let id = db.store(&rust_conversation());
    let human = db.run(&["get", &id]).ok();
    assert!(human.stdout.contains(&format!("conversation {id}")));
    assert!(human.stdout.contains("label:      Rust ownership"));
    assert!(human.stdout.contains("Only one mutable reference"));
    assert!(human.stdout.contains("[2026-01-25T12:00:00Z] user"));

    let full = db.run(&["--json", "get", &id]).ok().json();
    assert_eq!(full["id"], id.as_str());
    assert_eq!(full["messages"].as_array().map(Vec::len), Some(2));
    let meta = db.run(&["--json", "get", &id, "--no-messages"]).ok().json();
    assert_eq!(meta["id"], id.as_str());
    assert_eq!(meta["message_count"], 2);
    assert!(meta.get("messages").is_none());
    let human = db.run(&["get", "--no-messages", &id]).ok();
    assert!(!human.stdout.contains("Only one mutable reference"));
}

#[test]
fn list_count_and_filters() {
    let db = Db::new();
    let rust = db.store(&rust_conversation());
    let soup = db.store(&cooking_conversation());
    let page = db.run(&["--json", "list"]).ok().json();
    assert_eq!(page["total"], 2);
    assert_eq!(page["limit"], 50);
    // Newest updated first.
    assert_eq!(page["conversations"][0]["id"], soup.as_str());
    assert_eq!(page["conversations"][1]["id"], rust.as_str());

    let page = db.run(&["--json", "list", "--folder", "/work"]).ok().json();
    assert_eq!(page["total"], 1);
    assert_eq!(page["conversations"][0]["label"], "Rust ownership");
    let page = db
        .run(&["--json", "list", "--limit", "1", "--offset", "1"])
        .ok()
        .json();
    assert_eq!(page["total"], 2);
    assert_eq!(page["conversations"][0]["id"], rust.as_str());

    let human = db.run(&["list"]).ok();
    assert!(human.stdout.contains(&rust) && human.stdout.contains(&soup));
    assert!(
        human.stdout.contains("showing 1-2 of 2"),
        "{}",
        human.stdout
    );

    assert_eq!(db.count(), 2);
    assert_eq!(db.run(&["count", "--label", "Dinner"]).ok().stdout, "1\n");
    assert_eq!(
        db.run(&["count", "--min-importance", "6"]).ok().stdout,
        "1\n"
    );
    assert_eq!(
        db.run(&["count", "--status", "archived"]).ok().stdout,
        "0\n"
    );
    assert_eq!(db.run(&["count", "--pinned"]).ok().stdout, "0\n");
    assert_eq!(db.run(&["count", "--unpinned"]).ok().stdout, "2\n");
    assert_eq!(
        db.run(&["count", "--since", "2000-01-01"]).ok().stdout,
        "2\n"
    );
    assert_eq!(
        db.run(&["count", "--until", "2000-01-01"]).ok().stdout,
        "0\n"
    );
}

#[test]
fn update_pin_archive() {
    let db = Db::new();
    let id = db.store(&rust_conversation());
    let out = db
        .run(&[
            "--json",
            "update",
            &id,
            "--label",
            "Borrowing",
            "--folder",
            "/learn/",
            "--importance",
            "3",
            "--metadata",
            r#"{"k": 1}"#,
        ])
        .ok()
        .json();
    assert_eq!(out["label"], "Borrowing");
    assert_eq!(out["folder"], "/learn");
    assert_eq!(out["importance_score"], 3);
    assert_eq!(out["metadata"]["k"], 1);
    let human = db.run(&["update", &id, "--status", "archived"]).ok();
    assert!(
        human
            .stdout
            .starts_with(&format!("updated conversation {id}")),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("status=archived"));
    db.run(&["update", &id, "--status", "active"]).ok();

    let pinned = db.run(&["--json", "pin", &id]).ok().json();
    assert_eq!(pinned["pinned"], true);
    assert_eq!(pinned["importance_score"], 10);
    assert!(db.run(&["pin", &id]).ok().stdout.contains("(pinned)"));
    let archived = db.run(&["--json", "archive", &id]).ok().json();
    assert_eq!(archived["status"], "archived");
    assert!(
        db.run(&["archive", &id])
            .ok()
            .stdout
            .starts_with("archived conversation")
    );
    assert_eq!(
        db.run(&["count", "--pinned", "--status", "archived"])
            .ok()
            .stdout,
        "1\n"
    );
}

#[test]
fn delete_reports_messages_removed() {
    let db = Db::new();
    let id = db.store(&rust_conversation());
    db.store(&cooking_conversation());
    let out = db.run(&["delete", &id]).ok();
    assert_eq!(
        out.stdout,
        format!("deleted conversation {id} (2 messages removed)\n")
    );
    assert_eq!(db.count(), 1);
    db.run(&["get", &id]).fails_with(&["not found", &id]);
    db.run(&["delete", &id]).fails_with(&["not found"]);
    let soup = db.run(&["--json", "list"]).ok().json()["conversations"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let out = db.run(&["--json", "delete", &soup]).ok().json();
    assert_eq!(
        out,
        json!({"id": soup, "deleted": true, "messages_removed": 2})
    );
    assert!(
        db.run(&["--json", "query", "tomato"]).ok().json()["results"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );
}

#[test]
fn stats_totals_per_folder_and_label() {
    let db = Db::new();
    db.store(&rust_conversation());
    db.store(&cooking_conversation());
    let s = db.run(&["--json", "stats"]).ok().json();
    assert_eq!(s["total_conversations"], 2);
    assert_eq!(s["total_messages"], 4);
    assert_eq!(s["by_folder"]["/work/rust"], 1);
    assert_eq!(s["by_label"]["Dinner"], 1);
    let human = db.run(&["stats"]).ok();
    assert!(
        human.stdout.contains("conversations   2"),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("FOLDER"));
    assert!(human.stdout.contains("/work/rust"));
    assert!(human.stdout.contains("LABEL"));
    assert!(human.stdout.contains("Rust ownership"));
    let s = db
        .run(&["--json", "stats", "--folder", "/home"])
        .ok()
        .json();
    assert_eq!(s["total_conversations"], 1);
}

#[test]
fn stats_storage_shows_bytes_per_table_and_index() {
    let db = Db::new();
    db.store(&rust_conversation());
    db.store(&cooking_conversation());
    let s = db.run(&["--json", "stats", "--storage"]).ok().json();
    let tables = s["tables"].as_array().expect("tables");
    let messages = tables
        .iter()
        .find(|t| t["name"] == "messages")
        .expect("the messages table is listed");
    assert_eq!(messages["entries"], 4);
    assert!(messages["stored_bytes"].as_u64().unwrap() > 0);
    assert!(
        tables
            .iter()
            .any(|t| t["name"] == "conversations" && t["entries"] == 2)
    );
    let file = s["store_file_bytes"].as_u64().unwrap();
    assert!(file > 0 && s["store_allocated_bytes"].as_u64().unwrap() <= file);
    assert!(s["text_index_bytes"].as_u64().unwrap() > 0);
    let human = db.run(&["stats", "--storage"]).ok();
    assert!(human.stdout.contains("TABLE"), "{}", human.stdout);
    assert!(human.stdout.contains("messages"), "{}", human.stdout);
    // Filters make no sense for the byte counts: refused, not ignored.
    let refused = db
        .run(&["stats", "--storage", "--folder", "/home"])
        .usage_error();
    assert!(
        refused.stderr.contains("cannot be used with"),
        "{}",
        refused.stderr
    );
}

#[test]
fn export_json_then_import_round_trips() {
    let db = Db::new();
    let a = db.store(&rust_conversation());
    let b = db.store(&cooking_conversation());
    db.run(&["archive", &b]).ok();
    let file = db.path().join("export.json");
    let file_arg = file.to_str().expect("path");
    let out = db.run(&["export", "--output", file_arg]).ok();
    assert!(
        out.stdout.contains("exported 2 conversations as json"),
        "{}",
        out.stdout
    );
    // Stdout export (the default) is the same document.
    let doc = db.run(&["export"]).ok().json();
    assert_eq!(doc["format"], "memdb-export");
    assert_eq!(doc["conversations"].as_array().map(Vec::len), Some(2));

    let fresh = Db::new();
    let report = fresh.run(&["--json", "import", file_arg]).ok().json();
    assert_eq!(report, json!({"imported": 2, "messages": 4, "skipped": 0}));
    for id in [&a, &b] {
        let orig = db.run(&["--json", "get", id]).ok().json();
        let copy = fresh.run(&["--json", "get", id]).ok().json();
        assert_eq!(copy["message_count"], orig["message_count"]);
        assert_eq!(copy["status"], orig["status"]);
        let msg_ids = |v: &Value| -> Vec<Value> {
            v["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .map(|m| m["id"].clone())
                .collect()
        };
        assert_eq!(msg_ids(&copy), msg_ids(&orig));
    }
    assert!(
        !fresh.run(&["--json", "query", "borrow"]).ok().json()["results"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );

    // Importing again conflicts and writes nothing, unless told to skip.
    fresh
        .run(&["import", file_arg])
        .fails_with(&["already exists"]);
    assert_eq!(fresh.count(), 2);
    let out = fresh.run(&["import", file_arg, "--skip-existing"]).ok();
    assert!(out.stdout.contains("skipped 2 existing"), "{}", out.stdout);

    // One conversation, by id, from stdin.
    let one = db.run(&["export", "--id", &a]).ok().stdout;
    let third = Db::new();
    third.run_stdin(&["import", "-"], Some(one.as_bytes())).ok();
    assert_eq!(third.count(), 1);
}

#[test]
fn export_markdown_and_filters() {
    let db = Db::new();
    let id = db.store(&rust_conversation());
    db.store(&cooking_conversation());
    let md = db
        .run(&["export", "--format", "markdown", "--id", &id])
        .ok();
    assert!(md.stdout.starts_with("# Rust ownership"), "{}", md.stdout);
    assert!(md.stdout.contains("Only one mutable reference"));
    assert!(!md.stdout.contains("Dinner"));
    let wrapped = db
        .run(&["--json", "export", "--format", "md", "--folder", "/home"])
        .ok()
        .json();
    assert_eq!(wrapped["format"], "markdown");
    assert!(
        wrapped["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("# Dinner"))
    );
    let file = db.path().join("out.md");
    let out = db
        .run(&[
            "--json",
            "export",
            "--format",
            "markdown",
            "-o",
            file.to_str().expect("p"),
        ])
        .ok()
        .json();
    assert!(out["bytes"].as_u64().is_some_and(|b| b > 0));
    let written = std::fs::read_to_string(&file).expect("read");
    assert!(written.contains("# Dinner") && written.contains("# Rust ownership"));
    db.run(&["export", "--format", "pdf"])
        .fails_with(&["format", "pdf"]);
    db.run(&["export", "--id", &id, "--folder", "/x"])
        .usage_error();
}

#[test]
fn reindex_and_check() {
    let db = Db::new();
    db.store(&rust_conversation());
    db.store(&cooking_conversation());
    let out = db.run(&["reindex"]).ok();
    assert_eq!(out.stdout, "reindexed 4 documents\n");
    assert_eq!(db.run(&["--json", "reindex"]).ok().json()["indexed"], 4);
    let check = db.run(&["check"]).ok();
    assert!(
        check.stdout.contains("messages            4"),
        "{}",
        check.stdout
    );
    assert!(check.stdout.trim_end().ends_with("consistent"));
    let report = db.run(&["--json", "check"]).ok().json();
    assert_eq!(report["consistent"], true);
    assert_eq!(report["indexed"], 4);
    assert_eq!(report["conversations"], 2);
}

#[test]
fn optimize_leaves_one_segment_and_the_same_answers() {
    let db = Db::new();
    db.store(&rust_conversation());
    // A search after each store commits it as its own segment.
    let query = ["--json", "query", "--mode", "keyword", "mutable OR soup"];
    db.run(&query).ok();
    db.store(&cooking_conversation());
    let before = db.run(&query).ok().json();
    assert_eq!(before["total"], 3, "{before}");
    let status = db.run(&["--json", "optimize"]).ok().json();
    assert_eq!(status["segments"], 1, "{status}");
    assert_eq!(status["durable_lsn"], status["store_lsn"], "{status}");
    let out = db.run(&["optimize"]).ok();
    assert!(
        out.stdout.starts_with("text index: 1 segment(s)"),
        "{}",
        out.stdout
    );
    assert_eq!(db.run(&query).ok().json(), before);
}

// ----- bad input: exit 1, one line naming the problem, nothing written ---

#[test]
fn bad_store_bodies_write_nothing() {
    let db = Db::new();
    db.store(&cooking_conversation());
    let bad = |body: &str, needles: &[&str]| {
        db.run_stdin(&["store"], Some(body.as_bytes()))
            .fails_with(needles);
        assert_eq!(db.count(), 1, "store changed after {body:.60}");
        assert_eq!(db.messages_total(), 2);
    };
    bad(
        "{\"label\": \"x\",\n \"messages\": [\n {\"role\": \"user\" \"content\": \"hi\"}]}",
        &["invalid conversation JSON", "line 3 column"],
    );
    bad("", &["EOF", "line 1 column 0"]);
    bad(
        r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
        &["missing field `label`"],
    );
    bad(
        r#"{"label": "  ", "messages": [{"role": "user", "content": "hi"}]}"#,
        &["invalid label", "empty"],
    );
    bad(
        r#"{"label": "x", "messages": []}"#,
        &["messages", "at least one"],
    );
    bad(
        r#"{"label": "x", "folder": "nope", "messages": [{"role": "user", "content": "hi"}]}"#,
        &["invalid folder", "nope"],
    );
    bad(
        r#"{"label": "x", "messages": [{"role": "user", "content": "hi", "timestamp": "later"}]}"#,
        &["invalid messages[0].timestamp", "later"],
    );
    bad(
        r#"{"label": "x", "messages": [{"role": "us er", "content": "hi"}]}"#,
        &["messages[0].role"],
    );
    // A 10 MB message; the engine's limit is 1 MiB.
    let huge = json!({
        "label": "big",
        "messages": [{"role": "user", "content": "word ".repeat(2 << 20)}]
    })
    .to_string();
    bad(&huge, &["messages[0].content", "10485760 bytes", "limit"]);
    // A missing file.
    db.run(&["store", db.path().join("absent.json").to_str().expect("p")])
        .fails_with(&["absent.json"]);
    assert_eq!(db.count(), 1);
}

#[test]
fn bad_append_bodies_write_nothing() {
    let db = Db::new();
    let id = db.store(&cooking_conversation());
    let bad = |body: &str, needles: &[&str]| {
        db.run_stdin(&["append", &id], Some(body.as_bytes()))
            .fails_with(needles);
        assert_eq!(db.messages_total(), 2);
    };
    bad(
        "[{\"role\": \"user\",",
        &["invalid messages JSON", "line 1"],
    );
    bad("[]", &["at least one message"]);
    bad(
        r#"{"messages": [{"content": "x"}]}"#,
        &["missing field `role`"],
    );
    bad(r#""hello""#, &["expected an array of messages"]);
    let other = uuid_v4_like();
    db.run_stdin(
        &["append", &other],
        Some(br#"[{"role": "user", "content": "x"}]"#),
    )
    .fails_with(&["not found", &other]);
}

#[test]
fn bad_ids_statuses_and_values() {
    let db = Db::new();
    let id = db.store(&rust_conversation());
    for args in [
        vec!["get", "not-a-uuid"],
        vec!["delete", "not-a-uuid"],
        vec!["pin", "not-a-uuid"],
        vec!["archive", "not-a-uuid"],
        vec!["update", "not-a-uuid", "--label", "x"],
        vec!["export", "--id", "not-a-uuid"],
        vec!["query", "borrow", "--conversation", "not-a-uuid"],
    ] {
        db.run(&args)
            .fails_with(&["invalid conversation id", "\"not-a-uuid\""]);
    }
    db.run_stdin(&["append", "not-a-uuid"], Some(b"[]"))
        .fails_with(&["not-a-uuid"]);
    db.run(&["update", &id, "--status", "bogus"])
        .fails_with(&["status", "bogus"]);
    db.run(&["list", "--status", "bogus"])
        .fails_with(&["status", "bogus"]);
    db.run(&["count", "--status", "bogus"])
        .fails_with(&["status", "bogus"]);
    db.run(&["update", &id, "--importance", "11"])
        .fails_with(&["importance", "11"]);
    db.run(&["update", &id, "--folder", "relative"])
        .fails_with(&["folder", "relative"]);
    db.run(&["update", &id, "--metadata", "[1]"])
        .fails_with(&["metadata", "object"]);
    db.run(&["list", "--since", "yesterday"])
        .fails_with(&["--since", "yesterday"]);
    db.run(&["list", "--limit", "0"]).fails_with(&["limit"]);
    db.run(&["list", "--since", "2026-02-01", "--until", "2026-01-01"])
        .fails_with(&["since"]);
    db.run(&["query", "borrow", "--limit", "5000"])
        .fails_with(&["limit", "5000"]);
    db.run(&["query", "\"foo bar", "--mode", "keyword"])
        .fails_with(&["invalid query", "foo bar"]);
    // Without `--mode keyword` the query is natural language: the stray
    // quote is a character and the keyword side runs.
    let hybrid = db.run(&["--json", "query", "\"borrow checker"]).ok().json();
    assert!(!hybrid["notes"].to_string().contains("skipped"), "{hybrid}");
    assert_eq!(
        hybrid["results"][0]["content"], "How does the borrow checker handle mutable references?",
        "{hybrid}"
    );
    db.run(&["query", "   "]).fails_with(&["query", "empty"]);
    // Nothing changed.
    let conv = db.run(&["--json", "get", &id]).ok().json();
    assert_eq!(conv["label"], "Rust ownership");
    assert_eq!(conv["status"], "active");
    assert_eq!(conv["importance_score"], 7);
    assert_eq!(db.count(), 1);
}

#[test]
fn bad_import_writes_nothing() {
    let db = Db::new();
    let id = db.store(&rust_conversation());
    let mut doc = db.run(&["export"]).ok().json();
    let fresh = Db::new();
    let write = |doc: &Value| {
        let path = fresh.path().join("import.json");
        std::fs::write(&path, doc.to_string()).expect("write");
        path
    };
    let mut wrong = doc.clone();
    wrong["format"] = json!("other");
    fresh
        .run(&["import", write(&wrong).to_str().expect("p")])
        .fails_with(&["format", "other"]);
    doc["conversations"][0]["label"] = json!("");
    fresh
        .run(&["import", write(&doc).to_str().expect("p")])
        .fails_with(&["conversations[0].label"]);
    let path = fresh.path().join("broken.json");
    std::fs::write(&path, "{\"format\": ").expect("write");
    fresh
        .run(&["import", path.to_str().expect("p")])
        .fails_with(&["invalid export JSON", "line 1 column"]);
    assert_eq!(fresh.count(), 0);
    fresh.run(&["get", &id]).fails_with(&["not found"]);
}

#[test]
fn json_errors_are_json_on_stdout() {
    let db = Db::new();
    let run = db.run(&["--json", "get", "nope"]).fails_with(&["nope"]);
    let v = run.json();
    assert_eq!(v["error"]["exit_code"], 1);
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("invalid conversation id"))
    );
}

// ----- usage errors: exit 2 ----------------------------------------------

#[test]
fn usage_errors_exit_2() {
    let db = Db::new();
    db.run(&[]).usage_error();
    db.run(&["frobnicate"]).usage_error();
    db.run(&["list", "--bogus-flag"]).usage_error();
    db.run(&["get"]).usage_error();
    db.run(&["list", "--limit", "many"]).usage_error();
    db.run(&["update", &uuid_v4_like()]).usage_error();
    db.run(&["update", &uuid_v4_like(), "--importance", "300"])
        .usage_error();
    db.run(&["query", "x", "--mode", "fuzzy"]).usage_error();
    db.run(&["query", "x", "--embedder", "magic"]).usage_error();
    db.run(&["count", "--pinned", "--unpinned"]).usage_error();
    db.run(&["import"]).usage_error();
    assert_eq!(db.count(), 0);
}

#[test]
fn help_lists_every_subcommand() {
    let db = Db::new();
    let help = db.run(&["--help"]).ok();
    for sub in [
        "store",
        "append",
        "query",
        "get",
        "list",
        "count",
        "update",
        "pin",
        "archive",
        "delete",
        "stats",
        "export",
        "import",
        "reindex",
        "optimize",
        "check",
        "verify",
        "compact",
        "spaces",
        "embed",
        "rebuild-embeddings",
    ] {
        let found = help
            .stdout
            .lines()
            .any(|l| l.trim_start().starts_with(sub) && l.len() > sub.len() + 4);
        assert!(found, "{sub} missing from --help:\n{}", help.stdout);
    }
    let sub = db.run(&["query", "--help"]).ok();
    assert!(sub.stdout.contains("--min-importance"));
    assert!(sub.stdout.contains("--mode"));
}

// ----- data directory ------------------------------------------------------

#[test]
fn data_dir_defaults_to_memdb_data_env() {
    let db = Db::new();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
    cmd.env("MEMDB_DATA", db.data()).arg("store");
    let body = rust_conversation().to_string();
    let run = exec(cmd, Some(body.as_bytes())).ok();
    assert!(run.stdout.starts_with("stored conversation"));
    assert!(db.data().join("memdb.redb").exists());
    // --data (used by `count`) names the same directory.
    assert_eq!(db.count(), 1);
    // --data wins over the environment.
    let other = db.path().join("other");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
    cmd.env("MEMDB_DATA", db.data())
        .arg("--data")
        .arg(&other)
        .arg("count");
    let run = exec(cmd, None);
    assert_eq!(run.code, 1, "count must not create a store in {other:?}");
    assert!(run.stderr.contains("not found"), "{}", run.stderr);
    assert!(!other.join("memdb.redb").exists());
}

#[test]
fn read_commands_need_a_store() {
    let db = Db::new();
    for args in [
        &["count"][..],
        &["list"],
        &["query", "x"],
        &["stats"],
        &["check"],
    ] {
        let run = db.run(args);
        assert_eq!(run.code, 1, "{args:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.contains("data directory"), "{}", run.stderr);
    }
    assert!(!db.data().join("memdb.redb").exists());
}

/// A syntactically valid id no conversation has.
fn uuid_v4_like() -> String {
    "6f1c1f5e-8a1f-4c1e-9d2a-3b4c5d6e7f80".to_string()
}

#[test]
fn verify_compact_and_spaces() {
    let db = Db::new();
    db.run_stdin(
        &["--embedder", "none", "store"],
        Some(rust_conversation().to_string().as_bytes()),
    )
    .ok();
    let out = db.run(&["--json", "spaces"]).ok().json();
    assert_eq!(out["spaces"].as_array().expect("spaces").len(), 0);
    let out = db.run(&["--json", "verify"]).ok().json();
    assert_eq!(out["ok"], true);
    assert_eq!(out["text"]["consistent"], true);
    let human = db.run(&["compact"]).ok();
    assert!(
        human.stdout.contains("no vector spaces"),
        "{}",
        human.stdout
    );
    let run = db.run(&["compact", "no-such-space"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("vector space"), "{}", run.stderr);
}

/// `memdb mcp`: MCP over stdio. stdout carries only JSON-RPC lines (logs go
/// to stderr); a stored conversation is in the store after stdin closes.
#[test]
fn mcp_serves_tools_over_stdio_and_keeps_stdout_clean() {
    use std::io::{BufRead as _, BufReader};
    let db = Db::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .env_remove("MEMDB_DATA")
        .env_remove("MEMDB_API_KEY")
        .env("MEMDB_LOG", "debug")
        .env("MEMDB_EMBEDDER", "none")
        .arg("--data")
        .arg(db.data())
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memdb mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut answer = |stdin: &mut std::process::ChildStdin, msg: Value, id: u64| -> Value {
        writeln!(stdin, "{msg}").expect("write");
        loop {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).expect("read") > 0,
                "memdb mcp closed stdout"
            );
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("non-JSON on stdout ({e}): {line}"));
            if v["id"] == json!(id) {
                return v;
            }
        }
    };
    let init = answer(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cli-test", "version": "1"}}}),
        1,
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "memdb", "{init}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("write");
    let list = answer(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        2,
    );
    // Every set by default: Sekha's seven, Memorg's sixteen, KuraDB's two.
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names.len(), 25, "{names:?}");
    assert!(names.contains(&"memory_store") && names.contains(&"add_exchange"));
    let stored = answer(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "memory_store", "arguments": {"label": "via mcp", "folder": "/cli",
            "messages": [{"role": "user", "content": "hello over stdio"}]}}}),
        3,
    );
    assert_eq!(stored["result"]["isError"], false, "{stored}");
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("read rest");
    for line in rest.lines() {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("non-JSON on stdout ({e}): {line}"));
    }
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{:?}", out.status);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("memdb mcp"),
        "logs belong on stderr: {stderr}"
    );
    assert_eq!(db.count(), 1);
}

// ----- semantic and hybrid search ------------------------------------------

fn topic(label: &str, text: &str) -> Value {
    json!({"label": label, "folder": "/topics", "messages": [{"role": "user", "content": text}]})
}

#[test]
fn query_is_hybrid_by_default_and_finds_paraphrases_with_the_local_model() {
    let db = Db::new();
    db.store(&topic(
        "baking",
        "Preheat the oven and whisk eggs with flour and sugar for the cake batter.",
    ));
    db.store(&topic(
        "cars",
        "Replace the brake pads and check the rotors for scoring.",
    ));
    db.store(&topic(
        "garden",
        "Water the tomato seedlings every morning and add compost to the soil.",
    ));
    let out = db
        .run(&["--json", "query", "my vehicle squeals while stopping"])
        .ok();
    let v = out.json();
    assert_eq!(v["mode"], "hybrid", "{v}");
    assert_eq!(v["results"][0]["label"], "cars", "{v}");
    let sem = db
        .run(&[
            "--json",
            "query",
            "dessert recipe",
            "--mode",
            "semantic",
            "--explain",
            "--limit",
            "1",
        ])
        .ok()
        .json();
    assert_eq!(sem["mode"], "semantic");
    assert_eq!(sem["results"][0]["label"], "baking", "{sem}");
    let e = &sem["results"][0]["explain"];
    assert_eq!(e["semantic_rank"], 1, "{sem}");
    assert!(e["similarity"].as_f64().expect("similarity") > 0.2);
    // Human output shows the explanation line.
    let human = db.run(&["query", "tomato", "--explain"]).ok();
    assert!(human.stdout.contains("garden"), "{}", human.stdout);
    assert!(human.stdout.contains("keyword #1"), "{}", human.stdout);
    // Everything stored through the CLI was embedded before it exited.
    let status = db.run(&["--json", "embed", "--status"]).ok().json();
    assert_eq!(status["active"]["pending"], 0, "{status}");
    assert_eq!(status["active"]["model"]["provider"], "local-onnx");
}

#[test]
fn without_an_installed_model_query_says_it_is_keyword_only() {
    let db = Db::new();
    let empty_models = db.path().join("no-models");
    std::fs::create_dir_all(&empty_models).expect("mkdir");
    let models = empty_models.to_str().expect("utf-8 path");
    // Stdin is empty: the body is refused and nothing is written.
    assert_eq!(db.run(&["--models", models, "--json", "store"]).code, 1);
    let id = {
        let out = db
            .run_stdin(
                &["--models", models, "--json", "store"],
                Some(topic("t", "hello world").to_string().as_bytes()),
            )
            .ok();
        assert!(
            out.stderr.contains("no embedding model installed"),
            "{}",
            out.stderr
        );
        out.json()["id"].as_str().expect("id").to_string()
    };
    let v = db
        .run(&["--models", models, "--json", "query", "hello"])
        .ok()
        .json();
    assert_eq!(v["mode"], "keyword");
    assert_eq!(v["results"][0]["conversation_id"], id.as_str());
    let notes = v["notes"].to_string();
    assert!(notes.contains("memdb model install"), "{notes}");
    // Asking for the model explicitly is an error naming the fix.
    db.run(&["--models", models, "query", "hello", "--embedder", "local"])
        .fails_with(&["not installed"]);
    db.run(&["--models", models, "query", "hello", "--mode", "semantic"])
        .fails_with(&["embedding model"]);
}

#[test]
fn embed_and_rebuild_embeddings_switch_models() {
    let db = Db::new();
    for i in 0..3 {
        let body = topic(&format!("t{i}"), &format!("note number {i} about apples"));
        db.run_stdin(
            &["--embedder", "hashing", "--json", "store"],
            Some(body.to_string().as_bytes()),
        )
        .ok();
    }
    let status = db
        .run(&["--embedder", "hashing", "--json", "embed", "--status"])
        .ok()
        .json();
    assert_eq!(status["active"]["model"]["provider"], "hashing", "{status}");
    // The local model refuses to search vectors of another model...
    db.run(&["query", "apples", "--mode", "semantic"])
        .fails_with(&["rebuild-embeddings"]);
    // ...until everything is re-embedded with it.
    let out = db.run(&["--json", "rebuild-embeddings"]).ok().json();
    assert_eq!(out["report"]["embedded"], 3, "{out}");
    assert_eq!(out["report"]["switched"], true);
    assert_eq!(out["status"]["active"]["model"]["provider"], "local-onnx");
    let v = db
        .run(&["--json", "query", "fruit", "--mode", "semantic"])
        .ok()
        .json();
    assert_eq!(v["results"].as_array().map(Vec::len), Some(3), "{v}");
    let spaces = db.run(&["--json", "spaces"]).ok().json();
    assert_eq!(
        spaces["spaces"].as_array().map(Vec::len),
        Some(1),
        "{spaces}"
    );
}

// ----- serve -----------------------------------------------------------------

#[test]
fn serve_needs_a_key_then_serves_and_stops_on_sigterm() {
    let db = Db::new();
    let base = |cmd: &mut Command| {
        cmd.env_remove("MEMDB_DATA")
            .env_remove("MEMDB_API_KEY")
            .env_remove("MEMDB_API_KEYS")
            .env_remove("MEMDB_READONLY_API_KEYS")
            .env_remove("MEMDB_CONFIG")
            .args(["--embedder", "none", "--data"])
            .arg(db.data());
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
    base(&mut cmd);
    cmd.args(["serve", "--listen", "127.0.0.1:0"]);
    exec(cmd, None).fails_with(&["no API key configured", "MEMDB_API_KEY"]);

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
    base(&mut cmd);
    cmd.env("MEMDB_API_KEY", "k".repeat(40))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn memdb serve");
    let health = || -> Option<String> {
        use std::io::Read as _;
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let answer = loop {
        if let Some(a) = health() {
            break a;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "memdb serve exited"
        );
        assert!(std::time::Instant::now() < deadline, "no answer in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"healthy\""), "{answer}");
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let status = child.wait().expect("wait");
    assert!(status.success(), "exit after SIGTERM: {status}");
    // The store was closed: the directory opens again.
    assert_eq!(db.count(), 0);
}

#[test]
fn min_similarity_floors_semantic_results() {
    let db = Db::new();
    for (label, text) in [
        ("close", "rust borrow checker lifetimes"),
        ("far", "sunny weather in paris today"),
    ] {
        db.run_stdin(
            &["--embedder", "hashing", "--json", "store"],
            Some(topic(label, text).to_string().as_bytes()),
        )
        .ok();
    }
    let query = |extra: &[&str]| {
        let mut args = vec![
            "--embedder",
            "hashing",
            "--json",
            "query",
            "rust borrow checker",
            "--mode",
            "semantic",
        ];
        args.extend_from_slice(extra);
        db.run(&args).ok().json()
    };
    let all = query(&[]);
    assert_eq!(all["results"].as_array().map(Vec::len), Some(2), "{all}");
    let floored = query(&["--min-similarity", "0.5"]);
    let hits = floored["results"].as_array().expect("results");
    assert_eq!(hits.len(), 1, "{floored}");
    assert_eq!(hits[0]["label"], "close");
    assert!(hits[0]["score"].as_f64().is_some_and(|s| s >= 0.5));
    // Negative floors parse; out-of-range ones are the engine's clear error.
    assert_eq!(
        query(&["--min-similarity", "-1"])["results"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    db.run(&[
        "--embedder",
        "hashing",
        "query",
        "x",
        "--min-similarity",
        "1.5",
    ])
    .fails_with(&["min_similarity", "-1..=1"]);
}

/// `memdb query` without `--mode keyword` reads natural language (SPEC.md
/// §16.2): questions naming `CS:GO`, `C++`, `node:18`, `user@host`,
/// `3:30pm`, with `AND`/`OR`/`NOT` as words, `(parentheses)`, `*`, a lone
/// `"` or a balanced `"title"` answer and find the message naming the
/// thing, keyword-only, hybrid (the keyword side runs: no "skipped" note)
/// and semantic. `--mode keyword` keeps the syntax.
#[test]
fn query_reads_natural_language_unless_mode_keyword() {
    let corpus = [
        (
            "cs",
            "John wants to organize a CS:GO tournament next spring.",
        ),
        ("party", "John plans to organize the office party in March."),
        (
            "cpp",
            "Maria writes the firmware in C++ for the vendor board.",
        ),
        ("node", "The CI build image is pinned to node:18 for now."),
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
            "The dentist office is on Main Street, by the bakery.",
        ),
        (
            "logs",
            "Whether we keep the logs or not depends on the policy.",
        ),
        (
            "skillet",
            "The skillet (the seasoned one) goes in the oven.",
        ),
        (
            "hotel",
            "The hotel by the lake got a 4* rating from the guide.",
        ),
        (
            "movie",
            "Joanna watched Eternal Sunshine of the Spotless Mind.",
        ),
        (
            "book",
            "My favourite novel is \"The Left Hand of Darkness\".",
        ),
    ];
    let questions = [
        ("Which tournaments does John organize besides CS:GO?", "cs"),
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
            "When did Joanna watch \"Eternal Sunshine of the Spotless Mind?",
            "movie",
        ),
        ("Who wrote \"The Left Hand of Darkness\"?", "book"),
    ];
    let db = Db::new();
    for (label, text) in corpus {
        let body = json!({"label": label, "folder": "/",
                          "messages": [{"role": "user", "content": text}]});
        db.run_stdin(
            &["--embedder", "local", "--json", "store"],
            Some(body.to_string().as_bytes()),
        )
        .ok();
    }
    let labels = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["label"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    for (q, label) in questions {
        // (embedder, extra flags, mode used, how deep the target may be)
        for (embedder, extra, mode, top) in [
            ("none", None, "keyword", 1),
            ("local", None, "hybrid", 3),
            ("local", Some("semantic"), "semantic", 3),
        ] {
            let mut args = vec!["--embedder", embedder, "--json", "query", q];
            if let Some(m) = extra {
                args.extend(["--mode", m]);
            }
            let v = db.run(&args).ok().json();
            assert_eq!(v["mode"], mode, "{q:?} {embedder}: {v}");
            assert!(!v["notes"].to_string().contains("skipped"), "{q:?}: {v}");
            let got = labels(&v);
            assert!(
                got.iter().take(top).any(|l| l == label),
                "{q:?} {mode}: {got:?}"
            );
        }
    }
    // The syntax stays behind `--mode keyword`.
    db.run(&[
        "--embedder",
        "none",
        "query",
        questions[0].0,
        "--mode",
        "keyword",
    ])
    .fails_with(&["invalid query", "CS"]);
    let v = db
        .run(&[
            "--embedder",
            "none",
            "--json",
            "query",
            "organize AND NOT party",
            "--mode",
            "keyword",
        ])
        .ok()
        .json();
    assert_eq!(labels(&v), vec!["cs".to_string()]);
}

#[test]
fn memorg_tools_run_from_the_shell() {
    let db = Db::new();
    let hashing = ["--json", "--embedder", "hashing", "tool"];
    let run = |name: &str, args: &str| -> Value {
        let mut argv = hashing.to_vec();
        argv.push(name);
        argv.push(args);
        db.run(&argv).ok().json()
    };
    let session = run("create_session", r#"{"user_id":"alice"}"#);
    let sid = session["session_id"]
        .as_str()
        .expect("session_id")
        .to_string();
    assert_eq!(session["user_id"], "alice");
    let conv = run(
        "start_conversation",
        &format!(r#"{{"session_id":"{sid}"}}"#),
    );
    let cid = conv["conversation_id"].as_str().unwrap().to_string();
    let topic = run(
        "create_topic",
        &format!(r#"{{"conversation_id":"{cid}","title":"databases"}}"#),
    );
    let tid = topic["topic_id"].as_str().unwrap().to_string();
    let ex = run(
        "add_exchange",
        &format!(
            r#"{{"topic_id":"{tid}","user_message":"How do I vacuum Postgres?","system_message":"Run VACUUM ANALYZE."}}"#
        ),
    );
    assert!(ex["importance_score"].as_f64().unwrap() > 0.0, "{ex}");
    let found = run(
        "search_context",
        &format!(r#"{{"query":"postgres vacuum","scope":"TOPIC","scope_id":"{tid}"}}"#),
    );
    assert_eq!(found["results"][0]["id"], ex["exchange_id"], "{found}");
    assert!(found["results"][0]["score"].as_f64().unwrap() > 0.0);
    let usage = run("get_memory_usage", "{}");
    assert_eq!(usage["active_items"], 4, "{usage}");
    // Human text by default; the list names both sets.
    let text = db.run(&["tool", "--list"]).ok().stdout;
    assert!(
        text.contains("add_exchange") && text.contains("memory_store"),
        "{text}"
    );
    // Bad calls: one error line, nothing written.
    db.run(&[
        "--embedder",
        "hashing",
        "tool",
        "add_exchange",
        r#"{"topic_id":"nope","user_message":"x","system_message":"y"}"#,
    ])
    .fails_with(&["topic_id"]);
    db.run(&["tool", "no_such_tool"])
        .fails_with(&["unknown tool"]);
    db.run(&["tool", "get_memory_usage", "[1]"])
        .fails_with(&["JSON object"]);
    assert_eq!(run("get_memory_usage", "{}")["active_items"], 4);
    db.run(&["mcp", "--tools", "nope"])
        .fails_with(&["unknown tool set"]);
}

#[test]
fn knowledge_bases_from_the_shell() {
    let db = Db::new();
    let inbox = db.path().join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::write(
        inbox.join("redb.md"),
        "redb commits are durable.\n\nReaders never block.\n",
    )
    .unwrap();
    let inbox_arg = inbox.to_string_lossy().to_string();
    let added = db
        .run(&[
            "--json",
            "--embedder",
            "hashing",
            "kb",
            "add",
            "team notes",
            &inbox_arg,
        ])
        .ok()
        .json();
    assert_eq!(added["name"], "team_notes", "{added}");
    let synced = db
        .run(&[
            "--json",
            "--embedder",
            "hashing",
            "kb",
            "sync",
            "team_notes",
        ])
        .ok()
        .json();
    assert_eq!(
        (synced["parsed"].as_u64(), synced["chunks"].as_u64()),
        (Some(1), Some(2))
    );
    // The sync embedded the chunks it queued before returning.
    assert_eq!(synced["embedded"], 2, "{synced}");
    let status = db
        .run(&[
            "--json",
            "--embedder",
            "hashing",
            "kb",
            "status",
            "team_notes",
        ])
        .ok()
        .json();
    assert_eq!(
        (&status["chunks"], &status["embedded"], &status["pending"]),
        (&2.into(), &2.into(), &0.into()),
        "{status}"
    );
    let found = db
        .run(&[
            "--json",
            "--embedder",
            "hashing",
            "kb",
            "search",
            "team_notes",
            "durable",
            "--mode",
            "keyword",
        ])
        .ok()
        .json();
    assert_eq!(found["keyword"][0]["matches"][0]["chunk"], 1, "{found}");
    // The same through KuraDB's MCP tools.
    let listed = db.run(&["--json", "tool", "list_rag"]).ok().json();
    assert_eq!(listed["loaded"][0], "team_notes", "{listed}");
    assert!(
        listed["registered"][0]["createAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let rag = db
        .run(&[
            "--json",
            "--embedder",
            "hashing",
            "tool",
            "search_rag",
            r#"{"db":"team_notes","q":"readers block","mode":"keyword"}"#,
        ])
        .ok()
        .json();
    assert_eq!(rag["keyword"][0]["matches"][0]["chunk"], 2, "{rag}");
    assert!(
        rag.get("semantic").is_none(),
        "an empty branch is left out: {rag}"
    );
    db.run(&["tool", "search_rag", r#"{"db":"nope","q":"x"}"#])
        .fails_with(&["knowledge base"]);
    // Removal asks for the name unless --yes.
    let refused = db.run_stdin(&["kb", "remove", "team_notes"], Some(b"wrong\n"));
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("not removed"), "{}", refused.stderr);
    assert_eq!(
        db.run(&["--json", "kb", "list"]).ok().json()[0]["name"],
        "team_notes"
    );
    db.run_stdin(
        &["--json", "kb", "remove", "team_notes"],
        Some(b"team_notes\n"),
    )
    .ok();
    let listed = db.run(&["--json", "kb", "list"]).ok().json();
    assert_eq!(listed, json!([]));
}

#[test]
fn memorg_subcommands_spell_the_tools() {
    let db = Db::new();
    let run = |args: &[&str]| -> Value {
        let mut argv = vec!["--json", "--embedder", "hashing", "memorg"];
        argv.extend_from_slice(args);
        db.run(&argv).ok().json()
    };
    let sid = run(&["session", "alice"])["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let cid = run(&["conversation", &sid, "--title", "plans"])["conversation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let tid = run(&["topic", &cid, "databases"])["topic_id"]
        .as_str()
        .unwrap()
        .to_string();
    let ex = run(&[
        "exchange",
        &tid,
        "How do I vacuum Postgres?",
        "Run VACUUM ANALYZE.",
    ]);
    let found = run(&[
        "search-context",
        "postgres vacuum",
        "--scope",
        "topic",
        "--scope-id",
        &tid,
    ]);
    assert_eq!(found["results"][0]["id"], ex["exchange_id"], "{found}");
    let tree = run(&["show", &sid]);
    assert_eq!(tree["conversations"][0]["title"], "plans", "{tree}");
    let item = run(&[
        "item",
        "Alice likes window seats",
        "--tags",
        "prefs,travel",
        "--metadata",
        r#"{"k": 1}"#,
    ]);
    assert_eq!(item["tags"], json!(["prefs", "travel"]), "{item}");
    let hits = run(&[
        "search-memory",
        "window seats",
        "--filter",
        r#"{"k": {"$gte": 1}}"#,
    ]);
    assert_eq!(hits["results"][0]["item"]["id"], item["id"], "{hits}");
    let ctx = run(&["context", item["id"].as_str().unwrap()]);
    assert_eq!(ctx["item"]["content"], "Alice likes window seats");
    let text = db.path().join("long.txt");
    std::fs::write(&text, "word ".repeat(400)).unwrap();
    let opt = run(&["optimize", text.to_str().unwrap(), "--max-tokens", "20"]);
    assert!(opt["optimized_tokens"].as_u64().unwrap() <= 20, "{opt}");
    assert_eq!(run(&["usage"])["active_items"], 5);
    assert_eq!(run(&["delete", &sid])["removed"], 4);
    db.run(&["memorg", "topic", "not-a-uuid", "x"])
        .fails_with(&["conversation_id"]);
    db.run(&["memorg", "item", "x", "--metadata", "[1]"])
        .fails_with(&["JSON object"]);
}

// ----- chat-export import (SPEC §11.1, §20) -------------------------------

const CHATGPT_EXPORT: &str = r#"[{"title": "Kiln firing", "create_time": 1714557600.0, "update_time": 1714557700.0,
  "mapping": {
    "r": {"id": "r", "message": null, "parent": null, "children": ["u"]},
    "u": {"id": "u", "parent": "r", "children": ["a1", "a2"], "message": {"author": {"role": "user"},
          "create_time": 1714557601.0, "content": {"content_type": "text", "parts": ["What cone for stoneware?"]}}},
    "a1": {"id": "a1", "parent": "u", "children": [], "message": {"author": {"role": "assistant"},
          "create_time": 1714557602.0, "content": {"content_type": "text", "parts": ["Cone 6 for mid-fire stoneware."]}}},
    "a2": {"id": "a2", "parent": "u", "children": [], "message": {"author": {"role": "assistant"},
          "create_time": 1714557603.0, "content": {"content_type": "text", "parts": ["Cone 10 for high-fire reduction."]}}}
  }}]"#;

#[test]
fn import_from_a_chat_export_reports_and_stores_every_branch() {
    let db = Db::new();
    let file = db.path().join("conversations.json");
    std::fs::write(&file, CHATGPT_EXPORT).expect("write");
    let f = file.to_str().expect("path");
    let out = db.run(&["import", "--from", "chatgpt", f]).ok();
    assert!(
        out.stdout.contains("imported 1 conversation (3 messages)")
            && out.stdout.contains("as chatgpt"),
        "{}",
        out.stdout
    );
    let report = db
        .run(&["--json", "import", "--from", "auto", f])
        .ok()
        .json();
    assert_eq!(report["format"], "chatgpt");
    assert_eq!(report["conversations"], 1);
    assert_eq!(report["messages"], 3);
    assert_eq!(report["skipped"], 0);
    assert_eq!(report["ids"].as_array().map(Vec::len), Some(1));
    assert_eq!(db.count(), 2);
    // Both answers of the branch are searchable.
    let hits = db
        .run(&["--json", "query", "--mode", "keyword", "cone"])
        .ok()
        .json();
    assert_eq!(hits["results"].as_array().map(Vec::len), Some(6), "{hits}");
    // The conversation: Sekha's folder, label and importance.
    let id = report["ids"][0].as_str().expect("id");
    let conv = db.run(&["--json", "get", id]).ok().json();
    assert_eq!(conv["label"], "Kiln firing");
    assert_eq!(conv["folder"], "/imports/chatgpt");
    assert_eq!(conv["importance_score"], 5);
    assert_eq!(conv["messages"][2]["metadata"]["source"], "chatgpt");
    // A transcript on stdin.
    let out = db
        .run_stdin(
            &["--json", "import", "--from", "text", "-"],
            Some(b"User: glaze recipes?\nAssistant: Try a celadon.\n"),
        )
        .ok()
        .json();
    assert_eq!(
        (out["format"].as_str(), out["messages"].as_u64()),
        (Some("text"), Some(2))
    );
    // The file is left where it was (only --watch moves files).
    assert!(file.exists());
}

#[test]
fn a_malformed_chat_export_fails_and_writes_nothing() {
    let db = Db::new();
    let bad = db.path().join("claude.xml");
    std::fs::write(&bad, "<conversation><message><role>user</role>").expect("write");
    db.run(&["import", "--from", "claude", bad.to_str().expect("p")])
        .fails_with(&["claude.xml", "not closed"]);
    let md = db.path().join("notes.md");
    std::fs::write(&md, "# Notes\nno dialogue here\n").expect("write");
    db.run(&["import", "--from", "auto", md.to_str().expect("p")])
        .fails_with(&["notes.md", "no messages found"]);
    db.run(&[
        "import",
        "--from",
        "chatgpt",
        "--skip-existing",
        md.to_str().expect("p"),
    ])
    .fails_with(&["--skip-existing"]);
    db.run(&["import", "--watch", ".", "--from", "memdb"])
        .fails_with(&["--watch imports chat exports"]);
    db.run(&["import"]).usage_error();
    db.run(&["import", "--from", "word", "x"]).usage_error();
    assert_eq!(db.count(), 0);
    assert!(bad.exists() && md.exists());
}

/// `memdb import --watch DIR` run as a process: a good file is imported
/// and moved to DIR/imported, a bad one is left with its error on stderr.
#[test]
fn import_watch_moves_good_files_and_leaves_bad_ones() {
    let db = Db::new();
    let inbox = db.path().join("inbox");
    std::fs::create_dir(&inbox).expect("mkdir");
    // The bad file first: a pass takes files oldest first, so its error is
    // printed before the good file is moved (when the test stops it).
    std::fs::write(inbox.join("broken.txt"), "no speakers at all\n").expect("write");
    std::fs::write(inbox.join("kiln.json"), CHATGPT_EXPORT).expect("write");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
    cmd.env_remove("MEMDB_DATA")
        .env_remove("MEMDB_EMBEDDER")
        .env_remove("MEMDB_NAMESPACE")
        .arg("--data")
        .arg(db.data())
        .args(["import", "--watch"])
        .arg(&inbox)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn memdb import --watch");
    let imported = inbox.join("imported");
    let start = std::time::Instant::now();
    let moved = loop {
        let names: Vec<String> = std::fs::read_dir(&imported)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if !names.is_empty() {
            break names;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the file was not moved"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    child.kill().expect("stop the watcher");
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(moved.len(), 1);
    assert!(
        moved[0].ends_with("_kiln.json") && moved[0].len() == "YYYYMMDD_HHMMSS_kiln.json".len()
    );
    assert!(!inbox.join("kiln.json").exists());
    assert!(
        inbox.join("broken.txt").exists(),
        "a bad file is left in place"
    );
    assert!(
        stderr.contains("kiln.json") && stderr.contains("moved to"),
        "{stderr}"
    );
    assert!(
        stderr.contains("broken.txt") && stderr.contains("no messages found"),
        "{stderr}"
    );
    assert_eq!(db.count(), 1);
    let hits = db
        .run(&["--json", "query", "--mode", "keyword", "stoneware"])
        .ok()
        .json();
    assert_eq!(hits["results"].as_array().map(Vec::len), Some(2), "{hits}");
}

/// The local model's optimized weights are cached beside the model: the
/// first process writes the cache and its digest, the next reads it, and a
/// damaged cache is made again rather than used.
#[test]
fn the_optimized_model_is_cached_and_a_damaged_cache_is_remade() {
    let installed = memdb::default_models_dir().expect("models directory");
    let models = tempfile::tempdir().expect("tempdir");
    for name in memdb::LocalOnnx::FILES {
        std::fs::copy(installed.join(name), models.path().join(name)).expect("copy model file");
    }
    // The cache files (name, content digest or text), in name order.
    let cached = || -> Vec<(PathBuf, String)> {
        let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(models.path())
            .expect("read models dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().contains(".ort"))
            .map(|p| {
                let bytes = std::fs::read(&p).expect("read cache file");
                let seen = if p.to_string_lossy().ends_with(".sha256") {
                    String::from_utf8_lossy(&bytes).into_owned()
                } else {
                    sha256_hex(&bytes)
                };
                (p, seen)
            })
            .collect();
        files.sort();
        files
    };
    let models_arg = models.path().to_str().expect("utf-8 path");
    let db = Db::new();
    let store = |text: &str| {
        let body = json!({"label": "cache", "folder": "/",
                          "messages": [{"role": "user", "content": text}]});
        db.run_stdin(
            &[
                "--models",
                models_arg,
                "--embedder",
                "local",
                "--json",
                "store",
            ],
            Some(body.to_string().as_bytes()),
        )
        .ok();
    };
    store("Sourdough needs a lively starter and a long cold proof.");
    let first = cached();
    assert_eq!(first.len(), 2, "the model and its digest: {first:?}");
    let (model_path, model_digest) = &first[0];
    let (digest_path, digest) = &first[1];
    assert!(model_path.to_string_lossy().ends_with(".ort"));
    assert!(digest_path.to_string_lossy().ends_with(".ort.sha256"));
    assert_eq!(
        model_digest, digest,
        "the digest file names the cache's content"
    );
    let size = std::fs::metadata(model_path).expect("cache size").len();
    assert!(size > 1 << 20, "{size} bytes");

    // A second process reads the cache and leaves it as it is (not even
    // rewritten: the same modification time).
    let modified = || {
        std::fs::metadata(model_path)
            .and_then(|m| m.modified())
            .expect("mtime")
    };
    let before = modified();
    store("Rye flour ferments faster than wheat.");
    assert_eq!(cached(), first);
    assert_eq!(modified(), before);

    // Damage the cache: the next process remakes it and still embeds.
    let mut damaged = std::fs::read(model_path).expect("read cache");
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    let damaged_digest = sha256_hex(&damaged);
    std::fs::write(model_path, &damaged).expect("damage the cache");
    store("Bread flour has more protein than cake flour.");
    let remade = cached();
    assert_eq!(remade.len(), 2);
    assert_ne!(
        remade[0].1, damaged_digest,
        "the damaged cache was replaced"
    );
    assert_eq!(remade[0].1, remade[1].1, "and its digest file agrees");
    let out = db
        .run(&[
            "--models",
            models_arg,
            "--embedder",
            "local",
            "--json",
            "query",
            "baking a loaf at home",
            "--mode",
            "semantic",
        ])
        .ok()
        .json();
    assert_eq!(out["results"].as_array().map(Vec::len), Some(3), "{out}");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
