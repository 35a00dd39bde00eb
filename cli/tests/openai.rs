//! `memdb --embedder openai` end to end: the real `memdb` binary against a
//! local HTTP server speaking the OpenAI embeddings wire format (a std
//! `TcpListener` thread). The server's vectors come from a tiny concept
//! table, so a semantic query can only find its answer through them.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{Run, exec};

use serde_json::{Value, json};

#[path = "../../tests/suite/http_stub.rs"]
mod http_stub;
use http_stub::{Reply, Server};

/// Dimension of the test server's vectors.
const DIM: usize = 4;

fn concept_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIM];
    v[DIM - 1] = 0.1;
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
    {
        let axis = match word.as_str() {
            "kitten" | "cat" | "feline" | "purrs" | "puppy" => Some(0),
            "stock" | "market" | "shares" | "invest" | "money" => Some(1),
            "rain" | "storm" | "umbrella" | "weather" => Some(2),
            _ => None,
        };
        if let Some(a) = axis {
            v[a] += 1.0;
        }
    }
    v
}

/// A local server answering `POST /v1/embeddings`: a text's vector counts
/// its words per concept (pets, money, weather), plus a constant last
/// component so no vector is zero.
fn embeddings_server() -> Server {
    Server::start(|_, req| {
        let inputs = req.body["input"].as_array().cloned().unwrap_or_default();
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(index, t)| {
                json!({"index": index, "embedding": concept_vector(t.as_str().unwrap_or(""))})
            })
            .collect();
        Reply::Json(200, json!({"object": "list", "data": data}))
    })
}

/// `memdb --data DATA ARGS` with `env` set and every other `MEMDB_*`
/// variable that could change the outcome removed.
fn memdb(data: &PathBuf, env: &[(&str, &str)], args: &[&str], stdin: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
    for var in [
        "MEMDB_DATA",
        "MEMDB_EMBEDDER",
        "MEMDB_MODELS",
        "MEMDB_OPENAI_BASE_URL",
        "MEMDB_OPENAI_MODEL",
        "MEMDB_OPENAI_DIMENSION",
        "MEMDB_OPENAI_API_KEY",
        "MEMDB_PASSAGE",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied())
        .arg("--data")
        .arg(data)
        .args(args);
    exec(cmd, stdin.map(str::as_bytes))
}

#[test]
fn store_then_semantic_query_uses_the_remote_embeddings() {
    let server = embeddings_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let base = server.base();
    let dim = DIM.to_string();
    let env = [
        ("MEMDB_EMBEDDER", "openai"),
        ("MEMDB_OPENAI_BASE_URL", base.as_str()),
        ("MEMDB_OPENAI_MODEL", "concepts-v1"),
        ("MEMDB_OPENAI_DIMENSION", dim.as_str()),
        ("MEMDB_OPENAI_API_KEY", "sk-test-0123456789"),
        // Each message embedded alone: three unrelated notes in one
        // conversation, where a contextual passage would lend each the
        // topic of the note before it (SPEC §10.1).
        ("MEMDB_PASSAGE", "turn"),
    ];
    let body = json!({
        "label": "notes",
        "messages": [
            {"role": "user", "content": "my kitten purrs all day"},
            {"role": "user", "content": "the stock market fell again"},
            {"role": "user", "content": "bring an umbrella, a storm is coming"}
        ]
    });
    let stored = memdb(&data, &env, &["--json", "store"], Some(&body.to_string()));
    assert_eq!(stored.code, 0, "store failed: {}", stored.stderr);

    // No word of the query is in the answer: only the server's vectors
    // connect "feline" with "kitten".
    let query = |q: &str| {
        let run = memdb(
            &data,
            &env,
            &["--json", "query", "--mode", "semantic", "--limit", "1", q],
            None,
        );
        assert_eq!(run.code, 0, "query failed: {}", run.stderr);
        let out: Value = serde_json::from_str(&run.stdout).expect("query JSON");
        assert_eq!(out["mode"], "semantic", "{out}");
        out["results"][0]["content"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no hit in {out}"))
    };
    assert_eq!(query("feline"), "my kitten purrs all day");
    assert_eq!(query("invest money"), "the stock market fell again");

    let seen = server.seen();
    assert!(
        seen.len() >= 3,
        "expected store + 2 query requests: {seen:?}"
    );
    let texts: Vec<&str> = seen
        .iter()
        .flat_map(|s| s.body["input"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    for t in ["my kitten purrs all day", "feline", "invest money"] {
        assert!(
            texts.contains(&t),
            "{t:?} was not embedded remotely: {texts:?}"
        );
    }
    for s in &seen {
        assert_eq!(s.path, "/v1/embeddings");
        assert_eq!(s.body["model"], "concepts-v1");
        assert_eq!(
            s.authorization.as_deref(),
            Some("Bearer sk-test-0123456789")
        );
    }

    // The store records the remote model as its embedding identity.
    let status = memdb(&data, &env, &["--json", "embed"], None);
    assert_eq!(status.code, 0, "embed failed: {}", status.stderr);
    assert!(
        status.stdout.contains("concepts-v1"),
        "embed status does not name the remote model: {}",
        status.stdout
    );
}

#[test]
fn no_key_is_sent_without_memdb_openai_api_key() {
    let server = embeddings_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let base = server.base();
    let run = memdb(
        &data,
        &[],
        &[
            "--embedder",
            "openai",
            "--openai-base-url",
            &base,
            "--openai-model",
            "concepts-v1",
            "--openai-dimension",
            "4",
            "store",
        ],
        Some(r#"{"label": "l", "messages": [{"role": "user", "content": "a kitten"}]}"#),
    );
    assert_eq!(run.code, 0, "store failed: {}", run.stderr);
    let seen = server.seen();
    assert!(!seen.is_empty(), "the message was not embedded remotely");
    assert!(seen.iter().all(|s| s.authorization.is_none()), "{seen:?}");
}

#[test]
fn missing_settings_are_one_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let run = memdb(
        &data,
        &[("MEMDB_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")],
        &["--embedder", "openai", "store"],
        Some(r#"{"label": "l", "messages": [{"role": "user", "content": "x"}]}"#),
    );
    assert_eq!(run.code, 1, "stdout {} stderr {}", run.stdout, run.stderr);
    let err = run.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    for needle in ["MEMDB_OPENAI_MODEL", "MEMDB_OPENAI_DIMENSION"] {
        assert!(err.contains(needle), "{err:?} does not name {needle}");
    }
    assert!(!err.contains("MEMDB_OPENAI_BASE_URL"), "{err}");
    // Nothing was stored.
    assert!(!data.join("memdb.redb").exists());
}
