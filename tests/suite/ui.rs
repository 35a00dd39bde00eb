//! The web UI (`GET /ui`, SPEC §21.5): its files are served without a key
//! under a strict Content-Security-Policy, `GET /api/v1/whoami` tells a
//! page what its key may do, the script never writes markup from data, and
//! the whole page works in a real browser: headless Chromium (Debian's
//! `chromium` package) driven by Playwright (`tests/python/ui_e2e.py`, in
//! the cached venv of `server_e2e`) against a seeded server, saving
//! screenshots of the main views at desktop and narrow widths.
//!
//! Screenshots go to `MEMDB_UI_SCREENSHOTS` when set (README "Web UI"),
//! else to a `ui-screenshots` folder in cargo's test scratch directory, so an
//! ordinary test run leaves the work tree clean.

use memdb::Systems;
use std::path::{Path, PathBuf};

use memdb::{Memdb, NewConversation, NewMessage};
use memdb_server::auth::KeyNamespaces;
use serde_json::Value;

use crate::server_util::*;

const UI_FILES: [&str; 3] = ["index.html", "app.js", "app.css"];

fn ui_dir() -> PathBuf {
    crate::manifest_dir().join("../server/ui")
}

#[test]
fn ui_files_are_served_without_a_key_under_a_strict_policy() {
    let s = TestServer::start(config());
    for (path, file, kind) in [
        ("/ui", "index.html", "text/html"),
        ("/ui/app.js", "app.js", "text/javascript"),
        ("/ui/app.css", "app.css", "text/css"),
    ] {
        let r = s.req("GET", path, None, None);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let ct = r.header("content-type").unwrap_or_default();
        assert!(ct.starts_with(kind), "{path}: {ct}");
        let on_disk = std::fs::read(ui_dir().join(file)).expect("read ui file");
        assert_eq!(r.body, on_disk, "{path} is not the embedded {file}");
        let csp = r.header("content-security-policy").unwrap_or_default();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    // Only the declared files: anything else under /ui is an unknown route.
    let r = s.req("GET", "/ui/../api/v1/stats", None, None);
    assert_ne!(r.status, 200);
    assert_error(&s.req("GET", "/ui/other.js", None, None), 401);
    assert_error(&s.req("GET", "/ui/other.js", Some(KEY), None), 404);
}

#[test]
fn the_ui_loads_nothing_from_elsewhere_and_writes_no_markup_from_data() {
    for file in UI_FILES {
        let text = std::fs::read_to_string(ui_dir().join(file)).expect("read ui file");
        for banned in ["http://", "https://", "//cdn", "@import"] {
            assert!(!text.contains(banned), "{file} names {banned}");
        }
        if file == "app.js" {
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "new Function",
            ] {
                assert!(!text.contains(sink), "app.js uses {sink}");
            }
        }
    }
    let html = std::fs::read_to_string(ui_dir().join("index.html")).expect("index.html");
    // No inline script or style: the policy would refuse them.
    assert!(!html.contains("<script>") && !html.contains("<style") && !html.contains(" style="));
    assert!(html.contains(r#"<script src="/ui/app.js" defer></script>"#));
}

#[test]
fn whoami_tells_each_key_its_access_and_namespaces() {
    let limited = "limited-key-0123456789abcdefghijklmnopqrstuvwxyz";
    let mut cfg = config();
    cfg.api_keys.push(limited.into());
    cfg.key_namespaces = vec![KeyNamespaces {
        key: limited.into(),
        namespaces: vec!["team".into(), "lab".into()],
    }];
    let s = TestServer::start(cfg);
    let who = |key: &str, ns: Option<&str>| -> Value {
        let path = match ns {
            Some(n) => format!("/api/v1/whoami?namespace={n}"),
            None => "/api/v1/whoami".into(),
        };
        let r = s.req("GET", &path, Some(key), None);
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    let w = who(KEY, None);
    assert_eq!(w["access"], "write");
    assert_eq!(w["namespace"], "default");
    assert!(w["namespaces"].is_null(), "{w}");
    let r = who(RO_KEY, Some("other"));
    assert_eq!(r["access"], "read");
    assert_eq!(r["namespace"], "other");
    let l = who(limited, None);
    assert_eq!(l["access"], "write");
    assert_eq!(l["namespace"], "team");
    assert_eq!(l["namespaces"], serde_json::json!(["team", "lab"]));
    assert_error(
        &s.req("GET", "/api/v1/whoami?namespace=x", Some(limited), None),
        403,
    );
    assert_error(&s.req("GET", "/api/v1/whoami", None, None), 401);
}

#[test]
fn query_explains_scores_only_when_asked() {
    let s = TestServer::start_seeded(config(), memdb::Config::default(), seed);
    let body = |explain: Option<bool>| {
        let mut b = serde_json::json!({"query": "borrow checker", "mode": "keyword"});
        if let Some(e) = explain {
            b["explain"] = e.into();
        }
        let r = s.send("POST", "/api/v1/query", &b);
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    let plain = body(None);
    let first = &plain["results"][0];
    assert!(first.get("explain").is_none(), "{first}");
    let explained = body(Some(true));
    let x = &explained["results"][0]["explain"];
    assert_eq!(x["keyword_rank"], 1, "{explained}");
    assert!(x["keyword_score"].as_f64().is_some_and(|v| v > 0.0), "{x}");
    assert_eq!(explained["results"][0]["message_id"], first["message_id"]);
}

#[test]
fn query_shows_the_vector_plan_only_when_asked() {
    let hashing: std::sync::Arc<dyn memdb::Embedder> =
        std::sync::Arc::new(memdb::Hashing::new(64).expect("hashing embedder"));
    let s = TestServer::start_seeded(config(), memdb::Config::with_embedder(hashing), seed);
    let body = |explain: bool, filters: Value| {
        let b = serde_json::json!({"query": "filler about nothing", "mode": "semantic",
            "explain": explain, "filters": filters});
        let r = s.send("POST", "/api/v1/query", &b);
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    let plain = body(false, serde_json::json!({}));
    assert!(plain.get("plan").is_none(), "{plain}");
    let all = body(true, serde_json::json!({}));
    let plan = all["plan"].as_array().expect("a plan").clone();
    assert!(!plan.is_empty(), "{all}");
    // Every vector is still in the delta: 29 messages, searched exactly.
    let delta = plan
        .iter()
        .find(|p| p["part"] == "delta")
        .expect("delta plan");
    assert_eq!(delta["path"], "exact", "{delta}");
    assert_eq!(delta["nodes"], delta["allowed"], "{delta}");
    // A folder filter narrows the allowed set to its messages.
    let cooking = body(true, serde_json::json!({"folder": "/home/cooking"}));
    let delta = cooking["plan"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["part"] == "delta"))
        .expect("delta plan");
    assert!(
        delta["allowed"].as_u64() < delta["nodes"].as_u64(),
        "{delta}"
    );
    assert!(
        cooking["results"]
            .as_array()
            .is_some_and(|r| !r.is_empty() && r.iter().all(|h| h["folder"] == "/home/cooking"))
    );
}

/// The store the browser test browses: two conversations in `/work/rust`,
/// two in `/home/cooking` (one whose label and content are markup), and 25
/// in `/archive/bulk` for paging.
fn seed(db: &Memdb) {
    let add = |label: &str, folder: &str, turns: &[(&str, &str)]| {
        let messages = turns
            .iter()
            .map(|(role, text)| NewMessage::new(*role, *text))
            .collect();
        db.sekha()
            .create_conversation(NewConversation::new(label, messages).in_folder(folder))
            .expect("seed conversation");
    };
    for i in 1..=25 {
        add(
            &format!("Bulk note {i:02}"),
            "/archive/bulk",
            &[("user", &format!("filler number {i} about nothing much"))],
        );
    }
    add(
        "Sourdough schedule",
        "/home/cooking",
        &[
            ("user", "When should I feed the sourdough starter?"),
            (
                "assistant",
                "Feed the sourdough starter twelve hours before baking.",
            ),
        ],
    );
    add(
        r#"<img src=x onerror="window.__xss=1">"#,
        "/home/cooking",
        &[("user", "<script>window.__xss=2</script> is only text here")],
    );
    add(
        "Tokio runtime",
        "/work/rust",
        &[
            (
                "user",
                "How many worker threads does the tokio runtime start?",
            ),
            (
                "assistant",
                "The multi-threaded tokio runtime starts one worker per core.",
            ),
        ],
    );
    add(
        "Rust borrow checker",
        "/work/rust",
        &[
            (
                "user",
                "How does the borrow checker treat two mutable borrows?",
            ),
            (
                "assistant",
                "It rejects a second mutable borrow while the first is alive.",
            ),
        ],
    );
}

/// Debian's Chromium, or the one `MEMDB_CHROMIUM` names.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("MEMDB_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "the web UI test needs headless Chromium: install Debian's package \
                 (`apt-get install -y chromium`, as scripts/install-test-deps.sh does) or set MEMDB_CHROMIUM"
            )
        })
}

fn screenshot_dir() -> PathBuf {
    std::env::var_os("MEMDB_UI_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots"))
}

#[test]
fn the_ui_works_in_a_real_browser() {
    let browser = chromium();
    let shots = screenshot_dir();
    let views = [
        "login-desktop",
        "conversations-desktop",
        "conversation-desktop",
        "search-desktop",
        "context-desktop",
        "stats-desktop",
        "memorg-desktop",
        "read-only-desktop",
        "login-narrow",
        "conversations-narrow",
        "conversation-narrow",
        "search-narrow",
        "context-narrow",
    ];
    for v in views {
        let _ = std::fs::remove_file(shots.join(format!("{v}.png")));
    }
    let s = TestServer::start_seeded(config(), memdb::Config::default(), seed);
    let base = format!("http://{}", s.addr);
    crate::server_e2e::run_checks("ui_e2e.py", |c| {
        c.arg(&base).arg(KEY).arg(RO_KEY).arg(&browser).arg(&shots)
    });
    // What the page did, seen through the REST API: pinned and relabelled,
    // the markup conversation deleted, the rest untouched.
    let r = s.get("/api/v1/conversations?folder=/work/rust&page_size=10");
    assert_eq!(r.status, 200, "{}", r.text());
    let list = r.json();
    let pinned: Vec<&str> = list["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|c| c["pinned"] == true)
        .map(|c| c["label"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(pinned, ["Rust borrow checker notes"]);
    assert_eq!(conversation_count(&s), 28);
    for v in views {
        let png = std::fs::read(shots.join(format!("{v}.png")))
            .unwrap_or_else(|e| panic!("screenshot {v}: {e}"));
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{v} is not a PNG");
        assert!(
            png.len() > 5_000,
            "{v} is nearly empty ({} bytes)",
            png.len()
        );
    }
}
