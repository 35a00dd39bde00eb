//! The Memorg differential test (`tests/memorg_diff/`): one scripted
//! workload through PyPI `memorg==0.1.2` (its Python API and its MCP server
//! over stdio) and through `memdb mcp --tools memorg`, both against a local
//! OpenAI-compatible server that answers embeddings deterministically and
//! chat with fixed JSON; `compare.py` checks the hierarchy, the six tools'
//! result keys, the rankings where Memorg is correct, and memdb's documented
//! behaviour where Memorg is broken (naming each Memorg defect). It builds
//! its pinned venv from PyPI on first use (`MEMORG_DIFF_VENV`, default under
//! `$HOME/.cache`).

use std::process::Command;

#[test]
fn memorg_and_memdb_agree_where_memorg_is_right() {
    // The run's CARGO_MANIFEST_DIR (set by `cargo test`) before the compiled
    // one: a target dir shared with a checkout elsewhere can hand this test a
    // binary built there (tests/suite/main.rs, `manifest_dir`).
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    let root = manifest.join("..");
    let venv = std::env::var("MEMORG_DIFF_VENV").unwrap_or_else(|_| {
        format!(
            "{}/.cache/memdb-memorg-venv",
            std::env::var("HOME").unwrap_or_else(|_| "/tmp".into())
        )
    });
    let out = Command::new("bash")
        .arg(root.join("tests/memorg_diff/run.sh"))
        .arg(env!("CARGO_BIN_EXE_memdb"))
        .env("MEMORG_DIFF_VENV", venv)
        .env("MEMORG_DIFF_FAST", "1")
        // The run through the Python package belongs to
        // scripts/test-python.sh, which builds the package first.
        .env("MEMDB_DIFF_SKIP_PYTHON", "1")
        .output()
        .expect("run tests/memorg_diff/run.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "memorg differential test failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    // The comparison ran and found the Memorg defects it documents.
    assert!(stdout.contains("memorg_diff: OK"), "{stdout}");
    assert!(stdout.contains("memorg defect"), "{stdout}");
}
