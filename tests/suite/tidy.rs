//! Tidy checks over the source tree (the rust-analyzer habit): every Rust
//! file opens with a `//!` comment saying what it owns, and every path that
//! SPEC.md and README.md cite exists, so the documents cannot silently rot.
//! The layering rules of the restructuring issue will join them once the
//! engine's subsystems are split.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Every file under `dir` (recursively) whose name ends with `ext`.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                files(&p, ext, out);
            }
        } else if name.ends_with(ext) {
            out.push(p);
        }
    }
}

#[test]
fn every_rust_file_opens_with_a_module_comment() {
    let root = root();
    let mut rs = Vec::new();
    for dir in [
        "engine/src",
        "server/src",
        "cli/src",
        "format/src",
        "tests/suite",
        "tests/bin",
        "benches/src",
        "fuzz/fuzz_targets",
    ] {
        files(&root.join(dir), ".rs", &mut rs);
    }
    assert!(rs.len() > 50, "found only {} files", rs.len());
    let missing: Vec<String> = rs
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` comment: {missing:?}"
    );
}

/// Files the documents cite that belong to the systems memdb reproduces,
/// not to this repository.
const EXTERNAL: [&str; 3] = [
    "context_assembly.rs",
    "importance_engine.rs",
    "sekha/types.py",
];

/// The backticked spans of `text` that look like file paths.
fn cited_paths(text: &str) -> Vec<String> {
    // (`.json` names are runtime files: tantivy's meta.json, server.json.)
    let exts = [".rs", ".md", ".py", ".sh", ".toml"];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            !s.contains(' ')
                && !s.contains('<')
                && !s.contains('*')
                && !s.starts_with('/')
                && exts.iter().any(|e| s.ends_with(e))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn every_path_the_documents_cite_exists() {
    let root = root();
    let mut names = HashSet::new();
    let mut all = Vec::new();
    for ext in [".rs", ".md", ".py", ".sh", ".toml"] {
        files(&root, ext, &mut all);
    }
    for p in &all {
        if let Some(n) = p.file_name() {
            names.insert(n.to_string_lossy().into_owned());
        }
    }
    let bases = [
        "",
        "engine/src",
        "server/src",
        "cli/src",
        "format/src",
        "tests",
        "benches",
        "fuzz",
    ];
    // What counts as a citation.
    assert_eq!(
        cited_paths("see `engine/src/nope.rs`, `a b.rs`, `/openapi.json` and `x.md`"),
        ["engine/src/nope.rs", "x.md"]
    );
    let mut missing = Vec::new();
    for doc in ["SPEC.md", "README.md"] {
        let text = std::fs::read_to_string(root.join(doc)).expect("read doc");
        for cited in cited_paths(&text) {
            if EXTERNAL.contains(&cited.as_str()) {
                continue;
            }
            let found = if cited.contains('/') {
                bases.iter().any(|b| root.join(b).join(&cited).exists())
            } else {
                names.contains(&cited)
            };
            if !found {
                missing.push(format!("{doc}: {cited}"));
            }
        }
    }
    assert!(missing.is_empty(), "cited but missing: {missing:?}");
}
