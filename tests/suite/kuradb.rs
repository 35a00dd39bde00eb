//! KuraDB's model through the library (SPEC.md §15): knowledge bases with
//! KuraDB's name rule, a sync of real files on disk (text, Markdown, code,
//! CSV, PDF; skipped and unparsable files), keyword and semantic
//! search grouped by source, an unchanged chunk keeping its embedding (no
//! model call), a removed file dismissed (never found) and revived, and
//! knowledge bases kept apart from each other and from conversations.

use memdb::Systems;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use memdb::kuradb::{RagTarget, normalize_name};
use memdb::{Config, Embedder, Embeddings, Error, Hashing, Memdb, ModelIdentity};

use crate::eventually;

/// The hashing embedder, counting the texts it embeds.
struct Counting {
    inner: Hashing,
    texts: AtomicUsize,
}

impl Embedder for Counting {
    fn identity(&self) -> ModelIdentity {
        self.inner.identity()
    }
    fn embed_report(&self, texts: &[&str]) -> memdb::Result<Embeddings> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_report(texts)
    }
}

fn open(dir: &Path) -> (Memdb, Arc<Counting>) {
    let e = Arc::new(Counting {
        inner: Hashing::new(128).unwrap(),
        texts: AtomicUsize::new(0),
    });
    let db = Memdb::open_with(dir, Config::with_embedder(e.clone())).unwrap();
    (db, e)
}

/// A sync, then the background embedding of what it queued (as `memdb kb
/// sync` does; the server's worker does the same on its own).
fn sync(db: &Memdb, name: &str) -> memdb::kuradb::SyncReport {
    let r = db.kuradb().sync(name).unwrap();
    db.embed_pending(None, &mut |_| {}).unwrap();
    r
}

fn write(dir: &Path, name: &str, body: &[u8]) {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(p, body).unwrap();
}

fn sources(groups: &Option<Vec<memdb::kuradb::SourceGroup>>) -> Vec<String> {
    groups
        .iter()
        .flatten()
        .map(|g| {
            Path::new(&g.source)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string()
        })
        .collect()
}

#[test]
fn names_follow_kuradb() {
    assert_eq!(
        normalize_name("  my   notes\tbase ").unwrap(),
        "my_notes_base"
    );
    assert_eq!(normalize_name("Ünïcode/ok.v2").unwrap(), "Ünïcode/ok.v2");
    assert!(normalize_name(" \t ").is_err());
}

#[test]
fn a_knowledge_base_syncs_searches_dismisses_and_revives() {
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, model) = open(store.path());
    write(
        inbox.path(),
        "notes/redb.md",
        b"# redb\n\nredb commits are durable after fsync.\n\nReaders never block writers.\n",
    );
    write(
        inbox.path(),
        "travel.txt",
        b"Lisbon in March: Alfama and the Belem tower.\n",
    );
    write(
        inbox.path(),
        "people.csv",
        b"name,city\nAna,Lisbon\nBo,Porto\nCy,Faro\nDi,Braga\nEd,Evora\nFi,Sintra\n",
    );
    write(inbox.path(), "photo.png", b"\x89PNG\r\n\x1a\nbinary");
    write(inbox.path(), "report.pdf", b"%PDF-1.4 ...");
    write(inbox.path(), "blob.dat", b"\x00\x01\x02binary");
    write(inbox.path(), "empty.txt", b"\n\n  \n");

    let kb = db
        .kuradb()
        .add("my docs", &[inbox.path().to_path_buf()])
        .unwrap();
    assert_eq!(kb.name, "my_docs");
    assert!(matches!(
        db.kuradb().add("my   docs", &[inbox.path().to_path_buf()]),
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        db.kuradb().add("other", &[inbox.path().join("missing")]),
        Err(Error::InvalidInput { .. })
    ));

    let embedded = || model.texts.load(Ordering::SeqCst);
    let r = db.kuradb().sync("my_docs").unwrap();
    assert_eq!(r.parsed, 3, "{r:?}");
    // empty.txt: no content; report.pdf: not a whole PDF.
    assert_eq!(r.failed, 2, "{r:?}");
    assert_eq!(r.skipped, 2, "{r:?}"); // photo.png by name, blob.dat by sniff
    // redb.md: 3 paragraphs; travel.txt: 1; people.csv: 6 rows = 2 chunks.
    assert_eq!(r.chunks, 6, "{r:?}");
    // The sync made no model call: the chunks are queued, keyword search
    // already finds them, semantic search not yet.
    assert_eq!(embedded(), 0);
    // The pass ended with a text commit: nothing waits in the text
    // writer's memory through the embedding that follows.
    let text = db.text_index_status();
    assert_eq!(text.committed_lsn, text.store_lsn, "{text:?}");
    let st = db.kuradb().status("my_docs").unwrap();
    assert_eq!(
        (st.documents, st.chunks, st.embedded, st.pending),
        (3, 6, 0, 6),
        "{st:?}"
    );
    // The two failed files are listed with their reasons.
    let failed: Vec<(&str, &str)> = st
        .failures
        .iter()
        .map(|f| (f.source.rsplit('/').next().unwrap(), f.reason.as_str()))
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed.contains(&("empty.txt", "parser: empty content")),
        "{failed:?}"
    );
    assert!(
        failed
            .iter()
            .any(|(f, r)| *f == "report.pdf" && r.starts_with("PDF")),
        "{failed:?}"
    );
    let early = db
        .kuradb()
        .search("my_docs", "Alfama Belem", None, 10)
        .unwrap();
    assert_eq!(sources(&early.keyword), ["travel.txt"]);
    assert!(sources(&early.semantic).is_empty(), "{early:?}");
    let before = embedded(); // the semantic query embedded itself
    let report = db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!((report.embedded, report.remaining), (6, 0), "{report:?}");
    assert_eq!(embedded(), before + 6);
    let st = db.kuradb().status("my_docs").unwrap();
    assert_eq!((st.embedded, st.pending), (6, 0), "{st:?}");

    // Keyword, grouped by file, chunks numbered from 1.
    let found = db
        .kuradb()
        .search("my_docs", "fsync durable", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert!(found.semantic.is_none());
    let groups = found.keyword.as_ref().unwrap();
    assert_eq!(sources(&found.keyword), ["redb.md"]);
    assert_eq!(groups[0].matches[0].chunk, 2);
    assert!(groups[0].matches[0].content.contains("durable"));
    let csv = db
        .kuradb()
        .search("my_docs", "Sintra", Some(RagTarget::Keyword), 10)
        .unwrap();
    let m = &csv.keyword.as_ref().unwrap()[0].matches[0];
    assert_eq!(
        (m.chunk, m.content.as_str()),
        (2, "[6] name=Fi, city=Sintra")
    );
    // Semantic (both branches by default).
    let both = db
        .kuradb()
        .search("my_docs", "Lisbon Alfama Belem", None, 10)
        .unwrap();
    assert_eq!(sources(&both.semantic)[0], "travel.txt");
    assert!(sources(&both.keyword).contains(&"travel.txt".to_string()));

    // A second sync changes nothing (queries embed; syncs counted alone).
    let before = embedded();
    let r = sync(&db, "my_docs");
    // The two failed files are not parsed again until they change.
    assert_eq!((r.parsed, r.unchanged, r.failed), (0, 5, 0), "{r:?}");
    assert_eq!(embedded(), before);

    // Edit one paragraph: only that chunk is embedded again.
    write(
        inbox.path(),
        "notes/redb.md",
        b"# redb\n\nredb commits are durable after fsync.\n\nReaders see snapshots (MVCC).\n",
    );
    let before = embedded();
    let r = sync(&db, "my_docs");
    assert_eq!(r.parsed, 1, "{r:?}");
    assert_eq!(embedded(), before + 1);
    let mvcc = db
        .kuradb()
        .search("my_docs", "snapshots MVCC", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert_eq!(sources(&mvcc.keyword), ["redb.md"]);
    let gone = db
        .kuradb()
        .search("my_docs", "block writers", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert!(sources(&gone.keyword).is_empty(), "{gone:?}");

    // Remove a file: dismissed, never found by either search.
    std::fs::remove_file(inbox.path().join("travel.txt")).unwrap();
    let before = embedded();
    let r = sync(&db, "my_docs");
    assert_eq!(r.dismissed, 1, "{r:?}");
    assert_eq!(embedded(), before);
    let q = db
        .kuradb()
        .search("my_docs", "Lisbon Alfama Belem tower", None, 10)
        .unwrap();
    assert!(
        !sources(&q.keyword).contains(&"travel.txt".to_string()),
        "{q:?}"
    );
    assert!(
        !sources(&q.semantic).contains(&"travel.txt".to_string()),
        "{q:?}"
    );
    // It comes back unchanged: revived, without a model call.
    write(
        inbox.path(),
        "travel.txt",
        b"Lisbon in March: Alfama and the Belem tower.\n",
    );
    let before = embedded();
    let r = sync(&db, "my_docs");
    assert_eq!(r.revived, 1, "{r:?}");
    assert_eq!(embedded(), before);
    let q = db.kuradb().search("my_docs", "Alfama", None, 10).unwrap();
    assert_eq!(sources(&q.keyword), ["travel.txt"]);
    assert_eq!(sources(&q.semantic)[0], "travel.txt");

    // Everything survives a reopen and a text-index rebuild.
    drop(db);
    std::fs::remove_dir_all(store.path().join("text")).unwrap();
    let (db, _) = open(store.path());
    assert!(db.check().unwrap().is_consistent());
    let q = db
        .kuradb()
        .search("my_docs", "Alfama", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert_eq!(sources(&q.keyword), ["travel.txt"]);

    // Rename, bad calls, remove.
    db.kuradb().rename("my_docs", "docs").unwrap();
    assert!(matches!(
        db.kuradb().get("my_docs"),
        Err(Error::NotFound { .. })
    ));
    assert!(db.kuradb().search("docs", "  ", None, 10).is_err());
    assert!(matches!(
        db.kuradb().search("nope", "x", None, 10),
        Err(Error::NotFound { .. })
    ));
    assert!(RagTarget::parse("fuzzy").is_err());
    assert!(db.kuradb().remove("docs").unwrap() > 0);
    assert!(db.kuradb().list().unwrap().is_empty());
}

#[test]
fn knowledge_bases_are_apart_from_each_other_and_from_conversations() {
    let store = tempfile::tempdir().unwrap();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (db, _) = open(store.path());
    write(a.path(), "a.md", b"zebra migration plan for team a\n");
    write(b.path(), "b.md", b"zebra migration plan for team b\n");
    db.kuradb().add("a", &[a.path().to_path_buf()]).unwrap();
    db.kuradb().add("b", &[b.path().to_path_buf()]).unwrap();
    sync(&db, "a");
    sync(&db, "b");
    for (name, own) in [("a", "a.md"), ("b", "b.md")] {
        let q = db
            .kuradb()
            .search(name, "zebra migration", None, 10)
            .unwrap();
        assert_eq!(sources(&q.keyword), [own]);
        assert_eq!(sources(&q.semantic), [own]);
    }
    // Sekha's search of the default namespace never sees chunks.
    let hits = db
        .sekha()
        .search_text(&memdb::TextQuery::new("zebra"))
        .unwrap();
    assert!(hits.is_empty());
}

/// KuraDB's read-only REST routes on memdb-server.
#[test]
fn kuradb_rest_routes_answer_as_kuradb_does() {
    use crate::server_util::{KEY, TestServer, config};
    let inbox = tempfile::tempdir().unwrap();
    write(
        inbox.path(),
        "redb.md",
        b"redb commits are durable.\n\nReaders never block.\n",
    );
    let hashing = Arc::new(Hashing::new(128).unwrap());
    let folder = inbox.path().to_path_buf();
    let s = TestServer::start_seeded(config(), Config::with_embedder(hashing), move |db| {
        db.kuradb().add("notes", &[folder]).unwrap();
        sync(db, "notes");
    });
    let health = s.req("GET", "/api/health", None, None);
    assert_eq!((health.status, health.text()), (200, "OK".to_string()));
    assert_eq!(s.req("GET", "/api/list", None, None).status, 401);
    let list = s.req("GET", "/api/list", Some(KEY), None).json();
    assert_eq!(list["loaded"], serde_json::json!(["notes"]), "{list}");
    let r = s.req(
        "GET",
        "/api/search?db=notes&q=durable&target=KEYWORD",
        Some(KEY),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["keyword"][0]["matches"][0]["chunk"], 1, "{body}");
    assert!(body.get("semantic").is_none(), "{body}");
    // Both branches; an empty one is `[]` on REST.
    let both = s
        .req(
            "GET",
            "/api/search?db=notes&q=zzzzqqq&limit=abc",
            Some(KEY),
            None,
        )
        .json();
    assert_eq!(both["keyword"], serde_json::json!([]), "{both}");
    assert!(both["semantic"].is_array(), "{both}");
    // KuraDB's answers byte for byte (its router, v0.5.1: SPEC §15.4), in
    // its order of checks: db, the base, q; an unknown target runs neither
    // branch.
    for (path, status, body) in [
        ("/api/search?q=x", 400, r#"{"error":"db is required"}"#),
        (
            "/api/search?db=%20&q=x",
            400,
            r#"{"error":"db is required"}"#,
        ),
        (
            "/api/search?db=other&q=x",
            400,
            r#"{"error":"\"other\" not exist"}"#,
        ),
        (
            "/api/search?db=other",
            400,
            r#"{"error":"\"other\" not exist"}"#,
        ),
        ("/api/search?db=notes", 400, r#"{"error":"q is required"}"#),
        (
            "/api/search?db=notes&q=%20%20",
            400,
            r#"{"error":"q is required"}"#,
        ),
        ("/api/search?db=notes&q=x&target=fuzzy", 200, "{}"),
        // The deprecated aliases check the same way.
        ("/api/keyword?q=x", 400, r#"{"error":"db is required"}"#),
        (
            "/api/semantic?db=other&q=x",
            400,
            r#"{"error":"\"other\" not exist"}"#,
        ),
        ("/api/keyword?db=notes", 400, r#"{"error":"q is required"}"#),
    ] {
        let r = s.req("GET", path, Some(KEY), None);
        assert_eq!((r.status, r.text()), (status, body.to_string()), "{path}");
    }
    // A check KuraDB does not have: a query over memdb's 8 KiB budget is
    // memdb's 400 with its reason, in KuraDB's one-key body (not a 500),
    // on every route that searches; the server keeps answering.
    // "durable " 1,100 times: 8,799 bytes once decoded and trimmed.
    let long = "durable%20".repeat(1100);
    for route in ["search", "keyword", "semantic"] {
        let path = format!("/api/{route}?db=notes&q={long}");
        let r = s.req("GET", &path, Some(KEY), None);
        assert_eq!(r.status, 400, "{route}: {}", r.text());
        let body = r.json();
        let obj = body.as_object().expect("a JSON object");
        assert_eq!(obj.keys().collect::<Vec<_>>(), ["error"], "{route}: {body}");
        let why = body["error"].as_str().unwrap_or_default();
        assert!(
            why.contains("8799 bytes") && why.contains("8192"),
            "{route}: {why}"
        );
    }
    assert_eq!(s.req("GET", "/api/health", None, None).status, 200);
    // ... and run their one branch, whatever `target` says.
    let k = s
        .req(
            "GET",
            "/api/keyword?db=notes&q=durable&target=semantic",
            Some(KEY),
            None,
        )
        .json();
    assert_eq!(k["keyword"][0]["matches"][0]["chunk"], 1, "{k}");
    assert!(k.get("semantic").is_none(), "{k}");
    let v = s
        .req(
            "GET",
            "/api/semantic?db=notes&q=durable%20commits",
            Some(KEY),
            None,
        )
        .json();
    assert!(v.get("keyword").is_none(), "{v}");
    assert!(v["semantic"].is_array(), "{v}");
    assert_eq!(
        s.req("GET", "/api/keyword?db=notes&q=x", None, None).status,
        401
    );
    s.stop();
}

#[test]
fn kuradb_open_serves_kuradbs_read_routes_without_a_key_on_loopback_only() {
    use crate::server_util::{KEY, TestServer, config};
    let inbox = tempfile::tempdir().unwrap();
    write(inbox.path(), "redb.md", b"redb commits are durable.\n");
    let folder = inbox.path().to_path_buf();
    let mut open = config();
    open.kuradb_open = true;
    let hashing = Arc::new(Hashing::new(128).unwrap());
    let s = TestServer::start_seeded(open, Config::with_embedder(hashing), move |db| {
        db.kuradb().add("notes", &[folder]).unwrap();
        sync(db, "notes");
    });
    // As a KuraDB client calls them: no key.
    let list = s.req("GET", "/api/list", None, None);
    assert_eq!(list.status, 200, "{}", list.text());
    assert_eq!(list.json()["loaded"], serde_json::json!(["notes"]));
    let r = s.req("GET", "/api/search?db=notes&q=durable", None, None);
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    let source = body["keyword"][0]["source"].as_str().unwrap_or_default();
    assert!(source.ends_with("redb.md"), "{body}");
    let r = s.req("GET", "/api/search?db=nope&q=x", None, None);
    assert_eq!(r.text(), r#"{"error":"\"nope\" not exist"}"#);
    for alias in ["/api/keyword", "/api/semantic"] {
        let r = s.req("GET", &format!("{alias}?db=notes&q=durable"), None, None);
        assert_eq!(r.status, 200, "{alias}: {}", r.text());
    }
    // Every other route still needs a key.
    assert_eq!(
        s.req("GET", "/api/v1/conversations", None, None).status,
        401
    );
    assert_eq!(s.req("GET", "/api/v1/stats", None, None).status, 401);
    assert_eq!(
        s.req("GET", "/api/v1/conversations", Some(KEY), None)
            .status,
        200
    );
    s.stop();
    // Off the loopback it is refused at startup, naming the address.
    let mut wide = config();
    wide.kuradb_open = true;
    wide.listen = "0.0.0.0:0".parse().unwrap();
    let err = wide.validate().unwrap_err().to_string();
    assert!(
        err.contains("kuradb_open") && err.contains("0.0.0.0"),
        "{err}"
    );
    let mut off = config();
    off.listen = "0.0.0.0:0".parse().unwrap();
    assert!(off.validate().is_ok());
}

#[test]
fn the_watcher_syncs_on_its_own() {
    use memdb::kuradb::watch::KbWatcher;
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, _) = open(store.path());
    db.kuradb()
        .add("live", &[inbox.path().to_path_buf()])
        .unwrap();
    let watcher = KbWatcher::spawn(db.clone(), std::time::Duration::from_millis(30)).unwrap();
    let found = |q: &str| {
        let r = db
            .kuradb()
            .search("live", q, Some(RagTarget::Keyword), 10)
            .unwrap();
        sources(&r.keyword)
    };
    write(inbox.path(), "new.md", b"the watcher found quokkas\n");
    eventually("a new file is searchable", || {
        found("quokkas") == ["new.md"]
    });
    // A base registered while it runs is watched too (no restart).
    let second = tempfile::tempdir().unwrap();
    write(second.path(), "late.md", b"wombats arrive late\n");
    db.kuradb()
        .add("late", &[second.path().to_path_buf()])
        .unwrap();
    eventually("a base added later is synced", || {
        let r = db
            .kuradb()
            .search("late", "wombats", Some(RagTarget::Keyword), 10)
            .unwrap();
        sources(&r.keyword) == ["late.md"]
    });
    std::fs::remove_file(inbox.path().join("new.md")).unwrap();
    eventually("a removed file is dismissed", || {
        found("quokkas").is_empty()
    });
    // It keeps polling (a pass every 30 ms; the steps above may have been
    // seen by fewer passes when one pass caught two of them).
    eventually("the watcher polls again", || {
        watcher.stats().passes.load(Ordering::Acquire) >= 3
    });
    assert_eq!(watcher.stats().failures.load(Ordering::Relaxed), 0);
    drop(watcher);
    assert!(KbWatcher::spawn(db.clone(), std::time::Duration::ZERO).is_err());
    // An interval too long to add to a clock is capped, not a panic.
    let forever = KbWatcher::spawn(db.clone(), std::time::Duration::MAX).unwrap();
    eventually("the capped watcher made its first pass", || {
        forever.stats().passes.load(Ordering::Acquire) == 1
    });
}

/// With polling set to an hour, change events alone keep bases in step: a
/// file written into the inbox (in a new subfolder) is found within
/// seconds, a changed one is re-read, a removed one's chunks are
/// dismissed, a base registered while the watcher runs is synced and
/// watched, and an inbox folder removed and made again is watched again;
/// all with no polling pass but the first.
#[test]
fn change_events_sync_without_waiting_for_the_poll() {
    use memdb::kuradb::watch::KbWatcher;
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, _) = open(store.path());
    db.kuradb()
        .add("events", &[inbox.path().to_path_buf()])
        .unwrap();
    let hour = std::time::Duration::from_secs(3600);
    let started = std::time::Instant::now();
    let watcher = KbWatcher::spawn(db.clone(), hour).unwrap();
    let stats = watcher.stats();
    eventually("the first pass ran", || {
        stats.passes.load(Ordering::Acquire) == 1
    });
    assert!(
        stats.events.load(Ordering::Acquire),
        "no change events here"
    );
    let found = |kb: &str, q: &str| {
        let r = db
            .kuradb()
            .search(kb, q, Some(RagTarget::Keyword), 10)
            .unwrap();
        sources(&r.keyword)
    };
    write(inbox.path(), "sub/echidna.md", b"echidnas lay eggs\n");
    eventually("a new file is searchable", || {
        found("events", "echidnas") == ["echidna.md"]
    });
    write(inbox.path(), "sub/echidna.md", b"echidnas eat termites\n");
    eventually("a changed file is re-read", || {
        found("events", "termites") == ["echidna.md"] && found("events", "eggs").is_empty()
    });
    std::fs::remove_file(inbox.path().join("sub/echidna.md")).unwrap();
    eventually("a removed file is dismissed", || {
        found("events", "echidnas").is_empty()
    });
    let second = tempfile::tempdir().unwrap();
    write(second.path(), "bilby.md", b"bilbies burrow\n");
    db.kuradb()
        .add("later", &[second.path().to_path_buf()])
        .unwrap();
    eventually("a base added later is synced", || {
        found("later", "bilbies") == ["bilby.md"]
    });
    write(second.path(), "numbat.md", b"numbats eat termites too\n");
    eventually("a base added later is watched", || {
        found("later", "numbats") == ["numbat.md"]
    });
    // An inbox folder removed and made again is watched again. While it is
    // missing it dismisses nothing (an unmounted share, SPEC §15.2; tested
    // deterministically by `an_unreadable_inbox_dismisses_nothing`); made
    // again without its old files, they are dismissed.
    let before = stats.event_syncs.load(Ordering::Acquire);
    std::fs::remove_dir_all(second.path()).unwrap();
    eventually("the removal is seen", || {
        stats.event_syncs.load(Ordering::Acquire) > before
    });
    std::fs::create_dir(second.path()).unwrap();
    write(second.path(), "quoll.md", b"quolls hunt at night\n");
    eventually("a folder made again is watched again", || {
        found("later", "quolls") == ["quoll.md"]
    });
    eventually("the files it lost are dismissed", || {
        found("later", "numbats").is_empty()
    });
    write(second.path(), "dunnart.md", b"dunnarts are tiny\n");
    eventually("and its later changes seen", || {
        found("later", "dunnarts") == ["dunnart.md"]
    });
    // Only the first pass polled: events did the rest, well within the hour.
    assert_eq!(stats.passes.load(Ordering::Acquire), 1);
    assert!(stats.event_syncs.load(Ordering::Acquire) >= 5);
    assert_eq!(stats.failures.load(Ordering::Relaxed), 0);
    assert_eq!(stats.watch_errors.load(Ordering::Relaxed), 0);
    assert!(started.elapsed() < hour);
}

/// memdb-server runs the watcher (`kb_watch_secs`): a file dropped into an
/// inbox while the server runs becomes searchable over `/api/search`.
#[test]
fn the_server_watches_knowledge_bases() {
    use crate::server_util::{KEY, TestServer, config};
    let inbox = tempfile::tempdir().unwrap();
    let folder = inbox.path().to_path_buf();
    let mut c = config();
    c.kb_watch_secs = 1;
    let hashing = Arc::new(Hashing::new(128).unwrap());
    let s = TestServer::start_seeded(c, Config::with_embedder(hashing), move |db| {
        db.kuradb().add("watched", &[folder]).unwrap();
    });
    write(inbox.path(), "drop.md", b"pangolins are scaly\n");
    eventually("the server's watcher synced the file", || {
        let r = s.req(
            "GET",
            "/api/search?db=watched&q=pangolins&target=keyword",
            Some(KEY),
            None,
        );
        r.status == 200 && r.json()["keyword"][0]["matches"][0]["chunk"] == 1
    });
    s.stop();
}

#[test]
fn word_and_powerpoint_files_are_parsed() {
    use memdb::kuradb::office::zip_parts;
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, _) = open(store.path());
    let w = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;
    let body = format!(
        r#"<w:document {w}><w:body><w:p><w:r><w:t>The okapi lives in Congo.</w:t></w:r></w:p><w:tbl><w:tr><w:tc><w:p><w:r><w:t>habitat</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>rainforest</w:t></w:r></w:p></w:tc></w:tr></w:tbl></w:body></w:document>"#
    );
    let footer = format!(r#"<w:ftr {w}><w:p><w:r><w:t>Zoo handbook</w:t></w:r></w:p></w:ftr>"#);
    write(
        inbox.path(),
        "animals.docx",
        &zip_parts(&[("word/document.xml", &body), ("word/footer1.xml", &footer)]).unwrap(),
    );
    let slide = |t: &str| {
        format!(r#"<p:sld xmlns:a="a" xmlns:p="p"><a:p><a:r><a:t>{t}</a:t></a:r></a:p></p:sld>"#)
    };
    write(
        inbox.path(),
        "talk.pptx",
        &zip_parts(&[
            ("ppt/slides/slide2.xml", &slide("Axolotls regrow limbs")),
            ("ppt/slides/slide1.xml", &slide("Amphibians of Mexico")),
        ])
        .unwrap(),
    );
    write(inbox.path(), "broken.docx", b"PK not really a zip");
    db.kuradb()
        .add("zoo", &[inbox.path().to_path_buf()])
        .unwrap();
    let r = db.kuradb().sync("zoo").unwrap();
    assert_eq!((r.parsed, r.failed, r.chunks), (2, 1, 5), "{r:?}");
    let q = db
        .kuradb()
        .search("zoo", "okapi", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert_eq!(sources(&q.keyword), ["animals.docx"]);
    let q = db
        .kuradb()
        .search("zoo", "rainforest habitat", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert_eq!(
        q.keyword.as_ref().unwrap()[0].matches[0].content,
        "habitat | rainforest"
    );
    let q = db
        .kuradb()
        .search("zoo", "axolotls", Some(RagTarget::Keyword), 10)
        .unwrap();
    let m = &q.keyword.as_ref().unwrap()[0].matches[0];
    // Slides are chunks in slide order.
    assert_eq!((m.chunk, m.content.as_str()), (2, "Axolotls regrow limbs"));
}

/// kill -9 during syncs: after every reopen, each file whose sync returned
/// is found by its marker exactly once, no source has two documents, and
/// the store and its indexes agree.
#[test]
fn sigkill_during_syncs_loses_no_acknowledged_file() {
    use std::process::Command;
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let mut synced: Vec<u64> = Vec::new();
    let mut next = 0u64;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..6 {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb-kb-crash-child"));
        cmd.arg(store.path())
            .arg(inbox.path())
            .arg(next.to_string());
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = std::time::Duration::from_millis(200 + rng % 400);
        for line in crate::run_until_killed(cmd, delay) {
            if let Some(n) = line
                .strip_prefix("SYNCED ")
                .and_then(|n| n.parse::<u64>().ok())
            {
                synced.push(n);
                next = next.max(n + 1);
            }
        }
        // A file written but not acknowledged is picked up by a later sync.
        next += 1;
        // The child's model (64-dimension hashing).
        let model = Arc::new(Hashing::new(64).unwrap());
        let db = Memdb::open_with(store.path(), Config::with_embedder(model)).unwrap();
        assert!(db.check().unwrap().is_consistent(), "round {round}");
        for n in &synced {
            let marker = format!("marker{n}x");
            let r = db
                .kuradb()
                .search("crash", &marker, Some(RagTarget::Keyword), 10)
                .unwrap();
            let hits: Vec<_> = r.keyword.iter().flatten().collect();
            assert_eq!(hits.len(), 1, "round {round}: {marker}: {r:?}");
            assert_eq!(
                hits[0].source,
                inbox.path().join(format!("f{n}.md")).to_string_lossy()
            );
            assert_eq!(hits[0].matches.len(), 1, "round {round}: {marker} twice");
        }
        // Whatever the worker had queued or half-written is embedded now,
        // once per live chunk.
        db.embed_pending(None, &mut |_| {}).unwrap();
        let st = db.kuradb().status("crash").unwrap();
        assert_eq!(st.pending, 0, "round {round}: {st:?}");
        assert_eq!(st.embedded, st.chunks, "round {round}: {st:?}");
        db.verify_vectors().unwrap();
    }
    assert!(
        synced.len() > 5,
        "too few syncs acknowledged: {}",
        synced.len()
    );
}

#[test]
fn chinese_and_japanese_text_is_found_by_its_words() {
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, _) = open(store.path());
    write(
        inbox.path(),
        "zh.md",
        "数据库事务提交以后是持久的。\n\n读者不会阻塞写者。\n".as_bytes(),
    );
    write(inbox.path(), "ja.md", "東京タワーは赤い。\n".as_bytes());
    write(inbox.path(), "en.md", b"redb commits are durable\n");
    db.kuradb()
        .add("cjk", &[inbox.path().to_path_buf()])
        .unwrap();
    db.kuradb().sync("cjk").unwrap();
    for (q, file, chunk) in [
        ("事务提交", "zh.md", 1),
        ("阻塞", "zh.md", 2),
        ("タワー", "ja.md", 1),
    ] {
        let r = db
            .kuradb()
            .search("cjk", q, Some(RagTarget::Keyword), 10)
            .unwrap();
        assert_eq!(sources(&r.keyword), [file], "{q}");
        assert_eq!(
            r.keyword.as_ref().unwrap()[0].matches[0].chunk,
            chunk,
            "{q}"
        );
    }
    // Words in another order still match by their bigrams; English words
    // still stem; a lone character matches nothing (only bigrams are indexed).
    let r = db
        .kuradb()
        .search("cjk", "提交事务", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert!(
        !sources(&r.keyword).is_empty(),
        "bigrams of the query match its words: {r:?}"
    );
    let r = db
        .kuradb()
        .search("cjk", "commit durability", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert_eq!(sources(&r.keyword), ["en.md"]);
    let r = db
        .kuradb()
        .search("cjk", "塔", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert!(r.keyword.iter().flatten().next().is_none(), "{r:?}");
}

/// An embedder that runs `hook` once, on its first call, while the pass
/// that called it has read its batch but not yet written it.
struct Racing {
    inner: Hashing,
    hook: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Embedder for Racing {
    fn identity(&self) -> ModelIdentity {
        self.inner.identity()
    }
    fn embed_report(&self, texts: &[&str]) -> memdb::Result<Embeddings> {
        let hook = self.hook.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        self.inner.embed_report(texts)
    }
}

#[test]
fn a_background_embedding_is_written_only_for_chunks_still_live() {
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let racing = Arc::new(Racing {
        inner: Hashing::new(128).unwrap(),
        hook: std::sync::Mutex::new(None),
    });
    let db = Memdb::open_with(store.path(), Config::with_embedder(racing.clone())).unwrap();
    write(inbox.path(), "a.md", b"first version of the alpaca notes\n");
    db.kuradb()
        .add("race", &[inbox.path().to_path_buf()])
        .unwrap();
    assert_eq!(db.kuradb().sync("race").unwrap().chunks, 1);
    // While the pass embeds the first version, the file changes and is
    // synced again: the old chunk is deleted, a new one queued.
    let (db2, dir) = (db.clone(), inbox.path().to_path_buf());
    *racing.hook.lock().unwrap() = Some(Box::new(move || {
        write(&dir, "a.md", b"second version: the llama notes\n");
        assert_eq!(db2.kuradb().sync("race").unwrap().parsed, 1);
    }));
    let r = db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(r.remaining, 0, "{r:?}");
    let st = db.kuradb().status("race").unwrap();
    assert_eq!((st.chunks, st.embedded, st.pending), (1, 1, 0), "{st:?}");
    // The one vector is the new chunk's: semantic search finds the new
    // text and the deleted chunk left nothing behind.
    let q = db
        .kuradb()
        .search("race", "llama notes", Some(RagTarget::Semantic), 10)
        .unwrap();
    let groups = q.semantic.unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert!(groups[0].matches[0].content.contains("llama"));
    assert!(db.check().unwrap().is_consistent());
    db.verify_vectors().unwrap();
}

#[test]
fn html_pages_are_synced_as_their_readable_text() {
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, _) = open(store.path());
    write(
        inbox.path(),
        "okapi.html",
        b"<html><head><script>var hidden_token = 1;</script></head><body>\
          <h1>Okapi</h1><p>The okapi lives in the Ituri rainforest.</p>\
          <p>It is related to the giraffe.</p></body></html>",
    );
    db.kuradb()
        .add("web", &[inbox.path().to_path_buf()])
        .unwrap();
    let r = sync(&db, "web");
    assert_eq!((r.parsed, r.failed, r.chunks), (1, 0, 3), "{r:?}");
    let found = db
        .kuradb()
        .search("web", "Ituri rainforest", Some(RagTarget::Keyword), 10)
        .unwrap();
    let m = &found.keyword.as_ref().unwrap()[0].matches[0];
    assert_eq!(m.content, "The okapi lives in the Ituri rainforest.");
    for markup in ["hidden_token", "script", "html"] {
        let q = db
            .kuradb()
            .search("web", markup, Some(RagTarget::Keyword), 10)
            .unwrap();
        assert!(sources(&q.keyword).is_empty(), "{markup}: {q:?}");
    }
}

/// Writes a PDF with reportlab (tests/python/make_pdf.py, in the venv of
/// the Python tests): one page per text, `password` encrypting it.
fn make_pdf(out: &Path, password: Option<&str>, pages: &[&str]) {
    let mut cmd = std::process::Command::new(crate::server_e2e::venv());
    cmd.arg(crate::server_e2e::python_dir().join("make_pdf.py"));
    if let Some(p) = password {
        cmd.args(["--password", p]);
    }
    let ok = cmd.arg(out).args(pages).status().expect("run make_pdf.py");
    assert!(ok.success(), "make_pdf.py failed");
}

/// A real multi-page PDF (reportlab) is one chunk per page in page order,
/// its empty page left out; a word of page 2 is found in that file; a
/// truncated, a corrupt and a password-encrypted PDF are parse errors that
/// leave the store as it was.
#[test]
fn pdf_files_are_chunked_per_page() {
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, _) = open(store.path());
    let pages = [
        "Aardvarks dig burrows at night.\nThey eat termites.",
        "The narwhal tusk is a long tooth.",
        "",
        "Quokkas live on Rottnest Island.",
    ];
    let atlas = inbox.path().join("atlas.pdf");
    make_pdf(&atlas, None, &pages);
    let bytes = std::fs::read(&atlas).unwrap();
    write(inbox.path(), "truncated.pdf", &bytes[..bytes.len() / 2]);
    write(
        inbox.path(),
        "corrupt.pdf",
        b"%PDF-1.7\n1 0 obj << /Type /Catalog",
    );
    make_pdf(
        &inbox.path().join("locked.pdf"),
        Some("s3cret"),
        &["Cassowaries are shy."],
    );
    db.kuradb()
        .add("atlas", &[inbox.path().to_path_buf()])
        .unwrap();
    let r = db.kuradb().sync("atlas").unwrap();
    assert_eq!((r.parsed, r.failed, r.chunks), (1, 3, 3), "{r:?}");

    // The chunks, in order: the text of pages 1, 2 and 4.
    let kb = db.kuradb().get("atlas").unwrap();
    let h = db.namespace(&kb.namespace).unwrap();
    let all = h.records_of_kind(memdb::kuradb::DOCUMENT).unwrap();
    // The three failed files are recorded (SPEC §15.2: a reason, no
    // chunks, not parsed again until they change); only atlas.pdf is stored.
    let (failed, docs): (Vec<_>, Vec<_>) =
        all.into_iter().partition(|d| d.body["failed"].is_string());
    assert_eq!(failed.len(), 3, "{failed:?}");
    for d in &failed {
        assert!(
            h.record_children(d.id, Some(memdb::kuradb::CHUNK))
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(docs.len(), 1, "only atlas.pdf is stored");
    assert_eq!(docs[0].body["source"], atlas.to_string_lossy().as_ref());
    let mut chunks = h
        .record_children(docs[0].id, Some(memdb::kuradb::CHUNK))
        .unwrap();
    chunks.sort_by_key(|c| c.body["chunk"].as_u64());
    let got: Vec<(u64, String)> = chunks
        .iter()
        .map(|c| (c.body["chunk"].as_u64().unwrap(), c.text.clone()))
        .collect();
    assert_eq!(got.len(), 3, "{got:?}");
    for (i, (n, text)) in got.iter().enumerate() {
        assert_eq!(*n, i as u64 + 1);
        assert_eq!(chunks[i].body["total"], 3);
        let words: Vec<&str> = text.split_whitespace().collect();
        let want = [pages[0], pages[1], pages[3]][i];
        assert_eq!(
            words,
            want.split_whitespace().collect::<Vec<_>>(),
            "chunk {n}: {text:?}"
        );
    }
    assert!(
        got[0].1.contains("night.\nThey"),
        "page lines kept: {:?}",
        got[0].1
    );

    // A word from page 2, found in that file's chunk 2.
    let q = db
        .kuradb()
        .search("atlas", "narwhal", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert_eq!(sources(&q.keyword), ["atlas.pdf"]);
    let m = &q.keyword.as_ref().unwrap()[0].matches;
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].chunk, 2);
    assert!(m[0].content.contains("narwhal tusk"), "{m:?}");
    let q = db
        .kuradb()
        .search("atlas", "cassowaries", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert!(sources(&q.keyword).is_empty(), "{q:?}");

    // Damaging a stored PDF keeps what the store had.
    write(inbox.path(), "atlas.pdf", &bytes[..bytes.len() / 3]);
    let r = db.kuradb().sync("atlas").unwrap();
    // The damaged one fails; the three that failed before are unchanged.
    assert_eq!((r.parsed, r.failed, r.unchanged), (0, 1, 3), "{r:?}");
    let st = db.kuradb().status("atlas").unwrap();
    assert_eq!((st.documents, st.failures.len()), (1, 4), "{st:?}");
    let q = db
        .kuradb()
        .search("atlas", "quokkas", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert_eq!(q.keyword.as_ref().unwrap()[0].matches[0].chunk, 3);
}

/// An inbox folder that cannot be read (an unmounted share, a folder moved
/// away) says nothing about its files: they stay live. An inbox that is
/// there and empty does dismiss them.
#[test]
fn an_unreadable_inbox_dismisses_nothing() {
    let store = tempfile::tempdir().unwrap();
    let roots = tempfile::tempdir().unwrap();
    let (kept, share) = (roots.path().join("kept"), roots.path().join("share"));
    write(
        &kept,
        "local.txt",
        b"Local notes about the lighthouse keeper.\n",
    );
    write(
        &share,
        "remote.txt",
        b"Remote notes about the harbour pilot.\n",
    );
    let (db, _) = open(store.path());
    db.kuradb()
        .add("docs", &[kept.clone(), share.clone()])
        .unwrap();
    let r = sync(&db, "docs");
    assert_eq!((r.parsed, r.unreadable), (2, 0), "{r:?}");
    let found = |q: &str| {
        sources(
            &db.kuradb()
                .search("docs", q, Some(RagTarget::Keyword), 10)
                .unwrap()
                .keyword,
        )
    };
    assert_eq!(found("harbour pilot"), ["remote.txt"]);

    // The share goes away (unmounted): nothing of it is dismissed, and the
    // other folder is still synced.
    let away = roots.path().join("away");
    std::fs::rename(&share, &away).unwrap();
    write(&kept, "new.txt", b"Fresh notes about the tide tables.\n");
    let r = sync(&db, "docs");
    assert_eq!((r.parsed, r.dismissed, r.unreadable), (1, 0, 1), "{r:?}");
    assert_eq!(found("harbour pilot"), ["remote.txt"]);
    assert_eq!(found("tide tables"), ["new.txt"]);
    assert_eq!(db.kuradb().status("docs").unwrap().dismissed, 0);

    // Back again: unchanged, nothing re-parsed.
    std::fs::rename(&away, &share).unwrap();
    let r = sync(&db, "docs");
    assert_eq!((r.parsed, r.dismissed, r.unreadable), (0, 0, 0), "{r:?}");

    // Present and empty: its file really is gone, and is dismissed.
    std::fs::remove_file(share.join("remote.txt")).unwrap();
    let r = sync(&db, "docs");
    assert_eq!((r.dismissed, r.unreadable), (1, 0), "{r:?}");
    assert!(found("harbour pilot").is_empty());
}

#[test]
fn a_sync_reports_its_progress_file_by_file() {
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, _model) = open(store.path());
    for i in 0..5 {
        write(
            inbox.path(),
            &format!("note{i}.txt"),
            format!("note {i} about herons\n").as_bytes(),
        );
    }
    // Skipped by name: walked, so not counted by the progress either.
    write(inbox.path(), "photo.png", b"\x89PNG\r\n\x1a\nbinary");
    db.kuradb()
        .add("prog", &[inbox.path().to_path_buf()])
        .unwrap();
    let mut seen = Vec::new();
    let r = db
        .kuradb()
        .sync_with_progress("prog", &mut |p| seen.push((p.done, p.total)))
        .unwrap();
    assert_eq!(r.scanned, 5, "{r:?}");
    assert_eq!(seen.first(), Some(&(0, 5)), "{seen:?}");
    assert_eq!(seen.last(), Some(&(5, 5)), "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    assert!(seen.iter().all(|&(_, t)| t == 5), "{seen:?}");
    // Every file is a step: 0 (walked), one per file before it, and the end.
    assert_eq!(seen.len(), 7, "{seen:?}");
    // A second sync walks the same five files, all unchanged.
    let mut last = (0, 0);
    let r = db
        .kuradb()
        .sync_with_progress("prog", &mut |p| last = (p.done, p.total))
        .unwrap();
    assert_eq!((r.unchanged, last), (5, (5, 5)), "{r:?}");
}

#[test]
fn the_semantic_cutoff_is_calibrated_for_the_local_model() {
    use memdb::kuradb::{MIN_SIMILARITY, MINILM_MIN_SIMILARITY, SemanticCut, semantic_cut};
    let dir = memdb::default_models_dir().unwrap();
    let open = |m: memdb::LocalModel| {
        Arc::new(
            memdb::LocalOnnx::open_with(&dir, memdb::LocalOnnxOptions::default().model(m))
                .unwrap_or_else(|e| {
                    panic!("{e}\n(this test needs scripts/install-model.sh to have run)")
                }),
        )
    };
    let minilm = open(memdb::LocalModel::MiniLm);
    assert_eq!(
        semantic_cut(&minilm.identity()),
        SemanticCut::Absolute(MINILM_MIN_SIMILARITY)
    );
    assert_eq!(
        semantic_cut(&Hashing::new(64).unwrap().identity()),
        SemanticCut::Absolute(MIN_SIMILARITY)
    );
    // e5-small-v2's cosines sit high and move with the query: a hit must
    // beat the query's baseline (SPEC.md §15.4).
    let e5 = open(memdb::LocalModel::E5SmallV2);
    assert!(matches!(
        semantic_cut(&e5.identity()),
        SemanticCut::AboveBaseline { .. }
    ));
    the_cutoff_keeps_only_the_file_a_query_is_about(minilm);
    the_cutoff_keeps_only_the_file_a_query_is_about(e5);
}

#[test]
fn the_e5_baseline_is_the_anchors_mean() {
    let e5 = memdb::LocalOnnx::open_with(
        &memdb::default_models_dir().unwrap(),
        memdb::LocalOnnxOptions::default().model(memdb::LocalModel::E5SmallV2),
    )
    .expect("e5-small-v2 (scripts/install-model.sh)");
    let anchors =
        std::fs::read_to_string(crate::manifest_dir().join("../benches/kb/e5_anchors.txt"))
            .unwrap();
    let texts: Vec<&str> = anchors.lines().collect();
    assert_eq!(texts.len(), 64);
    let vectors = e5.embed(&texts).unwrap();
    let means: Vec<f32> = (0..memdb::kuradb::E5_ANCHOR_MEAN.len())
        .map(|j| vectors.iter().map(|v| v[j]).sum::<f32>() / texts.len() as f32)
        .collect();
    // The pinned mean is this model's on a CPU whose int8 products are
    // exact (VNNI); a CPU without VNNI multiplies the weights as uint8,
    // exact too (SPEC.md §23.4), and what is left between machines is float
    // rounding that the activations' quantization can turn into a step of
    // one: measured at most 5.1e-4 per dimension between an AVX2-only CPU
    // (emulated) and an AVX-512 VNNI one (8.7e-4 with the saturating
    // kernel this replaced; benches/README.md, "The same vectors on every
    // CPU"). 1.5e-3 holds on any x86-64 CPU, and still catches another
    // graph of the same model (ONNX Runtime's per-tensor export: 2.8e-3).
    let worst = means
        .iter()
        .zip(memdb::kuradb::E5_ANCHOR_MEAN.iter())
        .map(|(m, w)| (m - w).abs())
        .fold(0f32, f32::max);
    assert!(
        worst < 1.5e-3,
        "the anchors' mean moved by {worst}; recomputed (paste into kuradb/cutoff.rs if the model changed on purpose):\n{}",
        means
            .iter()
            .map(|m| format!("{m:.9}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// A base of two unrelated files: a paraphrase sharing no content word
/// finds the file it is about by meaning, and only that one passes the
/// model's cutoff; a query about neither passes for neither.
fn the_cutoff_keeps_only_the_file_a_query_is_about(model: Arc<memdb::LocalOnnx>) {
    let tmp = tempfile::tempdir().unwrap();
    let inbox = tmp.path().join("inbox");
    write(
        &inbox,
        "meeting.txt",
        b"The quarterly budget review has moved to Thursday afternoon in the large conference room.",
    );
    write(
        &inbox,
        "garden.txt",
        b"Tomato seedlings need plenty of sun and should be watered every morning.",
    );
    let db = Memdb::open_with(tmp.path().join("store"), Config::with_embedder(model)).unwrap();
    db.kuradb().add("notes", &[inbox]).unwrap();
    sync(&db, "notes");
    let semantic = |q: &str| {
        let r = db
            .kuradb()
            .search("notes", q, Some(RagTarget::Semantic), 10)
            .unwrap();
        sources(&r.semantic)
    };
    // A paraphrase sharing no content word is found by meaning, and only
    // the file it is about passes the cutoff.
    assert_eq!(semantic("when is the finance meeting"), ["meeting.txt"]);
    assert_eq!(
        semantic("how often should I water my plants"),
        ["garden.txt"]
    );
    // A query about neither passes for neither.
    assert!(semantic("the best recipe for banana bread").is_empty());
}

/// The sources a semantic `kb_search` of base `name` for `q` finds, best
/// first.
fn by_meaning(db: &Memdb, name: &str, q: &str) -> Vec<String> {
    sources(
        &db.kuradb()
            .search(name, q, Some(RagTarget::Semantic), 10)
            .unwrap()
            .semantic,
    )
}

#[test]
fn semantic_search_runs_in_two_stages_over_summed_source_vectors() {
    use memdb::RecordFilter;
    use memdb::kuradb::{CHUNK, DISMISSED, DOCUMENT};
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let (db, _) = open(store.path());
    // One source holds the query's words exactly, in one chunk among 40
    // about something else; 29 sources hold two of its three words.
    let mut needle = String::from("zebra quantum flux\n\n");
    for k in 0..40 {
        needle.push_str(&format!("gardening tomatoes in raised bed {k}\n\n"));
    }
    write(inbox.path(), "needle.md", needle.as_bytes());
    for i in 0..29 {
        write(
            inbox.path(),
            &format!("partial-{i:02}.md"),
            format!("zebra quantum report {i}\n").as_bytes(),
        );
    }
    db.kuradb()
        .add("two", &[inbox.path().to_path_buf()])
        .unwrap();
    sync(&db, "two");
    let kb = db.kuradb().get("two").unwrap();
    let h = db.namespace(&kb.namespace).unwrap();

    // Every source's vector is the normalized sum of its chunks' vectors.
    let docs = h.records_of_kind(DOCUMENT).unwrap();
    assert_eq!(docs.len(), 30);
    for d in &docs {
        let mut sum = vec![0f64; 128];
        for c in h.record_children(d.id, Some(CHUNK)).unwrap() {
            let v = h.record_vector(CHUNK, c.id).unwrap().expect("chunk vector");
            for (s, x) in sum.iter_mut().zip(v) {
                *s += f64::from(x);
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f64>().sqrt();
        let got = h
            .record_vector(DOCUMENT, d.id)
            .unwrap()
            .expect("source vector");
        for (g, s) in got.iter().zip(&sum) {
            assert!(
                (f64::from(*g) - s / norm).abs() < 1e-5,
                "{g} vs {}",
                s / norm
            );
        }
    }

    // 30 sources: the first stage keeps 20 (min(max(30/20, 20), 30)). The
    // needle's source vector is mostly gardening, so its source is not
    // among them and its chunk is not found by meaning, although a
    // one-stage search over the chunks puts it first (KuraDB's trade).
    let found = by_meaning(&db, "two", "zebra quantum flux");
    assert_eq!(found.len(), 10, "{found:?}");
    assert!(found.iter().all(|s| s.starts_with("partial-")), "{found:?}");
    let chunks = RecordFilter {
        kinds: vec![CHUNK],
        ..Default::default()
    };
    let one = h.nearest_records("zebra quantum flux", &chunks, 1).unwrap();
    assert_eq!(
        h.get_record(CHUNK, one[0].0).unwrap().text,
        "zebra quantum flux"
    );
    let q = db
        .kuradb()
        .search("two", "zebra quantum flux", Some(RagTarget::Keyword), 10)
        .unwrap();
    assert!(sources(&q.keyword).contains(&"needle.md".to_string()));

    // The needle's file shrinks to its one line: its source vector follows
    // its chunks, and it comes first.
    write(inbox.path(), "needle.md", b"zebra quantum flux\n");
    sync(&db, "two");
    assert_eq!(by_meaning(&db, "two", "zebra quantum flux")[0], "needle.md");

    // A removed file's source is tagged dismissed: the first stage skips it
    // and none of its chunks comes back.
    std::fs::remove_file(inbox.path().join("needle.md")).unwrap();
    sync(&db, "two");
    let needle_doc = h
        .records_of_kind(DOCUMENT)
        .unwrap()
        .into_iter()
        .find(|d| d.body["source"].as_str().unwrap().ends_with("needle.md"))
        .unwrap();
    assert_eq!(needle_doc.tags, vec![DISMISSED.to_string()]);
    assert!(!by_meaning(&db, "two", "zebra quantum flux").contains(&"needle.md".to_string()));
    assert!(db.check().unwrap().is_consistent());
    db.verify_vectors().unwrap();
}

/// The hashing embedder reading at most `window` words, as a real model
/// reads at most so many tokens: a text is embedded from its first
/// `window` words, and cut into passages of that many.
/// A hashing embedder that reads only the first `window` words of a text,
/// and cuts a longer one into windows of words (as the local model cuts
/// by tokens).
pub(crate) struct Windowed {
    pub(crate) inner: Hashing,
    pub(crate) window: usize,
    pub(crate) texts: AtomicUsize,
}

impl Windowed {
    pub(crate) fn new(dim: u32, window: usize) -> Windowed {
        Windowed {
            inner: Hashing::new(dim).unwrap(),
            window,
            texts: AtomicUsize::new(0),
        }
    }

    /// The windows `text` is cut into, as text.
    pub(crate) fn pieces<'a>(&self, text: &'a str) -> Vec<&'a str> {
        self.passages(text)
            .unwrap()
            .into_iter()
            .map(|r| &text[r])
            .collect()
    }

    /// Asserts that `v` is the normalised sum (so the normalised mean) of
    /// the vectors of `pieces`.
    pub(crate) fn assert_mean_of(&self, v: &[f32], pieces: &[&str]) {
        let mut sum = vec![0f64; v.len()];
        for p in self.inner.embed(pieces).unwrap() {
            for (s, x) in sum.iter_mut().zip(p) {
                *s += f64::from(x);
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (a, b) in v.iter().zip(&sum) {
            assert!(
                (f64::from(*a) - b / norm).abs() < 1e-5,
                "{a} vs {}",
                b / norm
            );
        }
    }

    fn offsets(text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
            match (c.is_alphanumeric(), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    out.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        out
    }
}

impl Embedder for Windowed {
    fn identity(&self) -> ModelIdentity {
        self.inner.identity()
    }
    fn embed_report(&self, texts: &[&str]) -> memdb::Result<Embeddings> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        let read: Vec<&str> = texts
            .iter()
            .map(|t| match Self::offsets(t).get(self.window) {
                Some((s, _)) => &t[..*s],
                None => t,
            })
            .collect();
        self.inner.embed_report(&read)
    }
    fn max_tokens(&self) -> Option<usize> {
        Some(self.window)
    }
    fn passages(&self, text: &str) -> memdb::Result<Vec<std::ops::Range<usize>>> {
        Ok(memdb::token_windows(
            &Self::offsets(text),
            self.window,
            text.len(),
        ))
    }
}

#[test]
fn a_long_chunk_is_embedded_as_passages_that_all_point_at_it() {
    use memdb::kuradb::{CHUNK, DOCUMENT};
    let store = tempfile::tempdir().unwrap();
    let inbox = tempfile::tempdir().unwrap();
    let e = Arc::new(Windowed::new(128, 16));
    let db = Memdb::open_with(store.path(), Config::with_embedder(e.clone())).unwrap();
    // One paragraph of 100 words whose last sentence is the only one about
    // saffron: a model reading 16 words would never see it.
    let mut long = String::new();
    for i in 0..90 {
        long.push_str(&format!("filler{i} "));
    }
    long.push_str("the secret ingredient is saffron from la mancha in spain");
    write(inbox.path(), "recipe.md", long.as_bytes());
    write(inbox.path(), "short.md", b"a short note about tea\n");
    db.kuradb()
        .add("long", &[inbox.path().to_path_buf()])
        .unwrap();
    sync(&db, "long");
    let kb = db.kuradb().get("long").unwrap();
    let h = db.namespace(&kb.namespace).unwrap();
    let st = db.kuradb().status("long").unwrap();
    assert_eq!((st.chunks, st.embedded, st.pending), (2, 2, 0), "{st:?}");
    // 100 words in windows of 16 overlapping by 2: 7 passages, the first
    // in the chunk space, six in passage spaces.
    let passage_vectors = |db: &Memdb| -> u64 {
        db.vector_spaces()
            .unwrap()
            .iter()
            .filter(|s| s.name.contains("/p"))
            .map(|s| db.vector_stats(&s.name).unwrap().count)
            .sum()
    };
    assert_eq!(passage_vectors(&db), 6);
    assert_eq!(e.texts.load(Ordering::SeqCst), 8);
    // Found by what only its last passage says.
    let q = db
        .kuradb()
        .search(
            "long",
            "saffron from la mancha in spain",
            Some(RagTarget::Semantic),
            10,
        )
        .unwrap();
    let groups = q.semantic.unwrap();
    assert_eq!(sources(&Some(groups.clone())), vec!["recipe.md"]);
    assert_eq!(
        groups[0].matches.len(),
        1,
        "one chunk, however many passages"
    );
    assert_eq!(groups[0].matches[0].content, long);
    // The document's vector sums every passage of its chunk.
    let doc = h
        .records_of_kind(DOCUMENT)
        .unwrap()
        .into_iter()
        .find(|d| d.body["source"].as_str().unwrap().ends_with("recipe.md"))
        .unwrap();
    let dv = h.record_vector(DOCUMENT, doc.id).unwrap().unwrap();
    e.assert_mean_of(&dv, &e.pieces(&long));
    // A paragraph added: the unchanged long chunk keeps all its vectors
    // (one model call, for the new paragraph).
    let before = e.texts.load(Ordering::SeqCst);
    write(
        inbox.path(),
        "recipe.md",
        format!("{long}\n\nserve with rice\n").as_bytes(),
    );
    sync(&db, "long");
    assert_eq!(e.texts.load(Ordering::SeqCst) - before, 1);
    assert_eq!(passage_vectors(&db), 6);
    assert_eq!(
        by_meaning(&db, "long", "saffron from la mancha in spain"),
        vec!["recipe.md"]
    );
    // The long paragraph gone: its passages go with its chunk.
    write(inbox.path(), "recipe.md", b"serve with rice\n");
    sync(&db, "long");
    assert_eq!(passage_vectors(&db), 0);
    assert!(by_meaning(&db, "long", "saffron from la mancha in spain").is_empty());
    assert_eq!(h.count_record_vectors(CHUNK).unwrap(), 2);
    assert!(db.check().unwrap().is_consistent());
    db.verify_vectors().unwrap();
}
