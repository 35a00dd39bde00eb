//! Tidy checks over the source tree (the rust-analyzer habit): every Rust
//! file opens with a `//!` comment saying what it owns, and every file and
//! directory path that SPEC.md and README.md cite exists, so the documents
//! cannot silently rot.
//! The engine's layering is checked here too, against the one layer table
//! there is, ARCHITECTURE.md's (read at test time, never copied here):
//! imports point down the table only, and redb tables are opened in
//! `store/` only.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn root() -> PathBuf {
    crate::manifest_dir()
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
        "bindings/python/src",
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

/// How far above its own directory each relative path in `text` climbs
/// (the number of leading `../`), for every path that climbs at all.
/// `./../x` climbs one; `a/../x` climbs none from the directory (it is
/// read as a path that starts inside it).
fn climbs(text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = text[i..].find("../") {
        let start = i + at;
        // Only where a path starts: not inside a word or after another
        // path component (`a/../b`, `...`).
        let starts_path = start == 0
            || !(bytes[start - 1].is_ascii_alphanumeric() || b"_-.".contains(&bytes[start - 1]))
                && (bytes[start - 1] != b'/' || text[..start].ends_with("./"));
        let mut end = start;
        let mut k = 0;
        while text[end..].starts_with("../") {
            end += 3;
            k += 1;
        }
        if starts_path {
            let tail: String = text[end..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_./-".contains(*c))
                .collect();
            out.push((k, format!("{}{tail}", "../".repeat(k))));
        }
        i = end;
    }
    out
}

/// Every text file of the repository that can cite a path: documents,
/// sources, scripts and manifests (not build output, data or VCS files).
fn citing_files(root: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for ext in [".md", ".rs", ".sh", ".py", ".toml", ".txt", ".yml", ".json"] {
        files(root, ext, &mut all);
    }
    // `.ci/` is hidden from `files`, and `run` has no extension.
    files(&root.join(".ci"), "", &mut all);
    all.retain(|p| {
        let rel = p.strip_prefix(root).unwrap_or(p);
        !rel.starts_with("benches/data")
            && !rel.starts_with("fuzz/corpus")
            && std::fs::metadata(p).is_ok_and(|m| m.len() < 4 << 20)
    });
    all
}

#[test]
fn no_file_cites_a_path_outside_the_repository() {
    // What counts as climbing out.
    assert_eq!(
        climbs("see `../elsewhere/DESIGN.md`, ./../x, a/../b, ...and ../../up"),
        [
            (1, "../elsewhere/DESIGN.md".to_string()),
            (1, "../x".to_string()),
            (2, "../../up".to_string()),
        ]
    );
    let root = root();
    let files = citing_files(&root);
    assert!(
        files.iter().any(|p| p.ends_with("SPEC.md")) && files.iter().any(|p| p.ends_with("run")),
        "the walk finds the documents and .ci/run"
    );
    let mut outside = Vec::new();
    for p in &files {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let rel = p.strip_prefix(&root).unwrap_or(p);
        // A path is read from its file's directory: it may climb as many
        // levels as that directory is deep, and no more.
        let depth = rel.components().count().saturating_sub(1);
        for (k, path) in climbs(&text) {
            if k > depth {
                outside.push(format!("{}: {path}", rel.display()));
            }
        }
        // The folder beside a checkout by name, however it is reached.
        // (Spelled in two halves so this file does not cite them.)
        for sibling in
            ["DESIGN.md", "NOTES.md", "seeds/", "research/"].map(|f| format!("shared/{f}"))
        {
            if text.contains(&sibling) {
                outside.push(format!("{}: {sibling}", rel.display()));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "files citing a path outside the repository (a clone must stand alone): {outside:?}"
    );
}

/// Files the documents cite that belong to the systems memdb reproduces,
/// not to this repository.
const EXTERNAL: [&str; 3] = [
    "context_assembly.rs",
    "importance_engine.rs",
    "sekha/types.py",
];

/// Files the documents cite that a user writes, not the repository (a
/// configuration file, and where memdb refuses to look for one).
const USER_FILES: [&str; 2] = ["config.toml", "./config.toml"];

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

/// The top-level folders of the repository: a backticked span starting
/// with one of them is a repository-relative path.
const TOP_LEVEL: [&str; 10] = [
    "engine/",
    "server/",
    "cli/",
    "format/",
    "benches/",
    "fuzz/",
    "tests/",
    "scripts/",
    ".ci/",
    "bindings/",
];

/// The backticked spans of `text` outside fenced code blocks that look like
/// repository paths other than the files [`cited_paths`] takes: ending in
/// `/` (`engine/src/kuradb/`, `store/`), or starting with a top-level folder
/// (`benches/memory`, `.ci/run`). Not paths: URLs (`http://...`), regexes
/// and field syntax (`field:/…/`), placeholders (`<dir>/server.json`),
/// globs (`routes/*`), home and absolute paths (`~/notes`, `/`), anything
/// with a space or a character outside `[A-Za-z0-9_./-]`.
fn cited_dirs(text: &str) -> Vec<String> {
    let exts = [".rs", ".md", ".py", ".sh", ".toml"];
    // Fenced blocks hold commands and layouts, not citations.
    let prose: String = text.split("```").step_by(2).collect::<Vec<_>>().join("\n");
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
                && !s.starts_with('/')
                && !s.starts_with("./")
                && !s.contains("//")
                && !exts.iter().any(|e| s.ends_with(e))
                && (s.ends_with('/') || TOP_LEVEL.iter().any(|t| s.starts_with(t)))
        })
        .map(str::to_string)
        .collect()
}

/// The directories of a data directory (SPEC.md §2's layout: the
/// `<dir>/NAME/` lines), which the documents cite as `text/` and the like.
fn data_dirs(spec: &str) -> HashSet<String> {
    spec.lines()
        .filter_map(|l| l.strip_prefix("<dir>/"))
        .filter_map(|rest| rest.split_whitespace().next()?.split_once('/'))
        .map(|(first, _)| format!("{first}/"))
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
    // What counts as a directory citation.
    assert_eq!(
        cited_dirs(
            "`engine/src/kuradb/`, `store/`, `benches/memory`, `.ci/run`, `x.rs`, \
             `<dir>/text/`, `routes/*`, `http://127.0.0.1:8080/`, `field:/…/`, \
             `~/notes/`, `/`, `a b/`, `mcp/sessions`\n```\n`benches/nope/`\n```"
        ),
        ["engine/src/kuradb/", "store/", "benches/memory", ".ci/run"]
    );
    let spec = std::fs::read_to_string(root.join("SPEC.md")).expect("read SPEC.md");
    let data = data_dirs(&spec);
    assert!(
        data.contains("text/") && data.contains("text.rebuild/"),
        "SPEC.md §2 lists the data directory: {data:?}"
    );
    let mut missing = Vec::new();
    for doc in ["SPEC.md", "README.md", "ARCHITECTURE.md"] {
        let text = std::fs::read_to_string(root.join(doc)).expect("read doc");
        for cited in cited_dirs(&text) {
            let found = if TOP_LEVEL.iter().any(|t| cited.starts_with(t)) {
                // Repository-relative: from the root only.
                let p = root.join(&cited);
                if cited.ends_with('/') {
                    p.is_dir()
                } else {
                    p.exists()
                }
            } else {
                // `store/`, `kuradb/`: a folder of a crate's sources, or a
                // directory inside the data directory (`text.rebuild/`).
                bases.iter().any(|b| root.join(b).join(&cited).is_dir())
                    || cited
                        .split_once('/')
                        .is_some_and(|(first, _)| data.contains(&format!("{first}/")))
            };
            if !found {
                missing.push(format!("{doc}: {cited}"));
            }
        }
        for cited in cited_paths(&text) {
            if EXTERNAL.contains(&cited.as_str()) || USER_FILES.contains(&cited.as_str()) {
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

/// The engine's layers, bottom first, as ARCHITECTURE.md's layer table
/// lists them: entry `n` holds the subsystems of layer `n` (a folder under
/// `engine/src/` or a top-level file, by stem). A module may import from
/// its own subsystem and from lower layers; never from a peer on its own
/// layer or from above. `lib.rs` (the public re-exports) sits on top.
fn layers() -> &'static [Vec<String>] {
    static LAYERS: OnceLock<Vec<Vec<String>>> = OnceLock::new();
    LAYERS.get_or_init(|| {
        let path = root().join("ARCHITECTURE.md");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "the layer table lives in {}, which cannot be read: {e}",
                path.display()
            )
        });
        parse_layer_table(&text)
            .unwrap_or_else(|e| panic!("ARCHITECTURE.md's layer table cannot be read: {e}"))
    })
}

/// The layer table of `text`: the markdown table whose header row's first
/// cell is `layer`. Each row is `| N | `a/`, `b.rs` | ... |`: N the layer
/// (rows numbered 0, 1, 2, ... in order) and the backticked names of the
/// second column its subsystems (a trailing `/` or `.rs` dropped). Later
/// columns are prose and may name anything.
fn parse_layer_table(text: &str) -> Result<Vec<Vec<String>>, String> {
    let cells = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split('|').map(|c| c.trim().to_string()).collect()
    };
    let mut lines = text
        .lines()
        .map(str::trim)
        .skip_while(|l| !(l.starts_with('|') && cells(l).first().is_some_and(|c| c == "layer")));
    if lines.next().is_none() {
        return Err("no table whose header row starts `| layer |`".to_string());
    }
    match lines.next() {
        Some(sep) if sep.starts_with('|') && sep.contains("---") => {}
        _ => return Err("the `| layer |` header row is not followed by `|---|`".to_string()),
    }
    let mut layers: Vec<Vec<String>> = Vec::new();
    for row in lines.take_while(|l| l.starts_with('|')) {
        let cols = cells(row);
        let (Some(number), Some(names)) = (cols.first(), cols.get(1)) else {
            return Err(format!("a row without two columns: {row}"));
        };
        let number: usize = number
            .parse()
            .map_err(|_| format!("layer `{number}` is not a number: {row}"))?;
        if number != layers.len() {
            return Err(format!(
                "layer {number} where layer {} was expected (rows in order from 0): {row}",
                layers.len()
            ));
        }
        let subsystems: Vec<String> = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|n| n.trim_end_matches('/').trim_end_matches(".rs").to_string())
            .filter(|n| !n.is_empty())
            .collect();
        if subsystems.is_empty() {
            return Err(format!(
                "layer {number} names no `folder/` or `file.rs`: {row}"
            ));
        }
        layers.push(subsystems);
    }
    if layers.is_empty() {
        return Err("the table has no rows".to_string());
    }
    Ok(layers)
}

fn layer_of(subsystem: &str) -> Option<usize> {
    layers()
        .iter()
        .position(|l| l.iter().any(|s| s == subsystem))
}

/// The non-test source of an engine file: the file without its
/// `#[cfg(test)] mod tests { .. }` blocks and `#[cfg(test)] mod tests;`
/// declarations (tests may use any layer; production code after them is
/// kept and checked), without comment lines (doc links are not imports).
fn engine_code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    without_test_modules(&text)
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with every `#[cfg(test)]` module cut out: a `mod x;` declaration
/// alone, a `mod x { .. }` block to its matching brace (braces inside
/// string, raw-string and char literals and comments are not counted).
fn without_test_modules(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let Some(decl) = trimmed.strip_prefix("mod ") else {
            // Not a module (a test-only item): keep the attribute.
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        };
        let name_len = decl
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(decl.len());
        let tail = decl[name_len..].trim_start();
        rest = if let Some(r) = tail.strip_prefix(';') {
            r
        } else if tail.starts_with('{') {
            &tail[block_end(tail)..]
        } else {
            tail
        };
    }
    out.push_str(rest);
    out
}

/// The byte just past the brace that closes the `{` `code` starts with.
fn block_end(code: &str) -> usize {
    let b = code.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'#' | b'"'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) == Some(&b'"') {
                    let close = format!("\"{}", "#".repeat(hashes));
                    let start = i + 2 + hashes;
                    i = code[start..]
                        .find(&close)
                        .map_or(b.len(), |e| start + e + close.len())
                        - 1;
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            // A char literal ('{', '\'', '\\'), not a lifetime ('a).
            b'\'' => {
                if b.get(i + 1) == Some(&b'\\') {
                    i += 3;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 2;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

#[test]
fn test_modules_are_cut_and_the_code_after_them_kept() {
    let src = "use crate::a::x;\n#[cfg(test)]\nmod tests;\nuse crate::b::y;\n\
               #[cfg(test)]\nmod more {\n    use crate::z::w;\n    \
               fn f() { let _ = \"}\"; let _ = '}'; let _ = r#\"}\"#; } // }\n}\n\
               fn g<'a>(_: &'a str) {}\nuse crate::c::v;\n#[cfg(test)]\nfn helper() {}\n";
    let code = without_test_modules(src);
    for kept in ["crate::a", "crate::b", "crate::c", "fn g<'a>", "fn helper"] {
        assert!(code.contains(kept), "{kept} lost: {code}");
    }
    assert!(!code.contains("crate::z"), "test module kept: {code}");
    // The one file with production code after `mod tests;`.
    let vector = root().join("engine/src/vector/mod.rs");
    let text = std::fs::read_to_string(&vector).unwrap();
    assert!(text.contains("mod tests;"));
    let last_line = text.trim_end().lines().last().unwrap().trim().to_string();
    assert!(engine_code(&vector).contains(&last_line), "{last_line}");
}

/// The subsystem an engine file belongs to: its folder under `src/`, or
/// its file stem for a top-level file.
fn subsystem_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.trim_end_matches(".rs").to_string()
}

/// Every `crate::<name>` the code mentions, with a line of context.
fn crate_refs(code: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in code.lines() {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((name, line.trim().to_string()));
            }
            rest = after;
        }
    }
    // `use crate::{a, b}` groups would hide a layer: refuse them outright.
    for line in code.lines() {
        if line.contains("crate::{") {
            out.push(("{".to_string(), line.trim().to_string()));
        }
    }
    out
}

#[test]
fn engine_imports_point_down_the_layer_table() {
    // The checker itself.
    assert_eq!(
        crate_refs("use crate::store::x; y(crate::db::z)"),
        [
            (
                "store".to_string(),
                "use crate::store::x; y(crate::db::z)".to_string()
            ),
            (
                "db".to_string(),
                "use crate::store::x; y(crate::db::z)".to_string()
            )
        ]
    );
    // The table reader.
    assert_eq!(
        parse_layer_table(
            "intro\n| layer | folders | owns |\n|---|---|---|\n\
             | 0 | `error.rs` | the errors |\n| 1 | `util/`, `cancel.rs` | `ids.rs`, `x/` |\n\nafter"
        ),
        Ok(vec![
            vec!["error".to_string()],
            vec!["util".to_string(), "cancel".to_string()]
        ])
    );
    assert!(parse_layer_table("| name | folders |\n|---|---|\n| 0 | `a/` |").is_err());
    assert!(parse_layer_table("| layer | folders |\n|---|---|\n| 1 | `a/` |").is_err());
    assert!(parse_layer_table("| layer | folders |\n|---|---|\n| 0 | none |").is_err());
    // The table ARCHITECTURE.md holds.
    assert!(layer_of("error").is_some() && layer_of("store").is_some());
    assert!(layer_of("store") < layer_of("text"));
    assert_eq!(layer_of("text"), layer_of("vector"));
    assert!(layer_of("db") < layer_of("query"));
    assert_eq!(layer_of("nonexistent_subsystem"), None);

    let src = root().join("engine/src");
    let mut rs = Vec::new();
    files(&src, ".rs", &mut rs);
    assert!(rs.len() > 40, "found only {} engine files", rs.len());
    let mut broken = Vec::new();
    for file in &rs {
        let me = subsystem_of(&src, file);
        if me == "lib" {
            continue;
        }
        let Some(my_layer) = layer_of(&me) else {
            broken.push(format!("{}: not in the layer table", file.display()));
            continue;
        };
        for (target, line) in crate_refs(&engine_code(file)) {
            if target == me {
                continue;
            }
            let ok = layer_of(&target).is_some_and(|l| l < my_layer);
            if !ok {
                broken.push(format!("{me} -> {target}: {line}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports against the layering: {broken:#?}"
    );
}

/// redb is the store's business alone (ARCHITECTURE.md, `store/`): no
/// engine file outside `engine/src/store/` names a redb type or opens a
/// table, test code included, so the store can be swapped behind its API.
#[test]
fn redb_stays_in_the_store() {
    let src = root().join("engine/src");
    let mut rs = Vec::new();
    files(&src, ".rs", &mut rs);
    let mut naming = Vec::new();
    for file in &rs {
        let rel = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("store/") {
            continue;
        }
        let code = std::fs::read_to_string(file).unwrap_or_default();
        if code.contains("redb::")
            || code.contains("open_table(")
            || code.contains("open_multimap_table(")
        {
            naming.push(rel);
        }
    }
    assert!(
        naming.is_empty(),
        "redb named or its tables opened outside engine/src/store/: {naming:?}"
    );
}

/// The modules a Rust file's production code names, as files of `src`:
/// each `crate::a::b::..` and `super::b::..` path resolved to the longest
/// prefix that is a file (`a/b.rs` or `a/b/mod.rs`).
fn module_refs(src: &Path, file: &Path, code: &str) -> BTreeSet<PathBuf> {
    let rel = file.strip_prefix(src).unwrap_or(file);
    // The module path of `file`'s folder, for `super::` (a `mod.rs` is its
    // folder's module, so its `super` is one folder up).
    let mut here: Vec<String> = rel
        .parent()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if rel.file_name().is_some_and(|n| n == "mod.rs") {
        here.pop();
    }
    let mut out = BTreeSet::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", here)] {
        let mut rest = code;
        while let Some(i) = rest.find(prefix) {
            let boundary = i == 0 || {
                let c = rest.as_bytes()[i - 1];
                !(c.is_ascii_alphanumeric() || c == b'_' || c == b':')
            };
            let after = &rest[i + prefix.len()..];
            rest = after;
            if !boundary {
                continue;
            }
            let mut path = base.clone();
            for seg in after.split("::") {
                let name: String = seg
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if name.is_empty() || name.len() != seg.len() && !seg.starts_with(&name) {
                    break;
                }
                path.push(name.clone());
                if name.len() != seg.len() {
                    break;
                }
            }
            // The longest prefix that is a module file.
            while !path.is_empty() {
                let joined = path.join("/");
                let leaf = src.join(format!("{joined}.rs"));
                let folder = src.join(&joined).join("mod.rs");
                if leaf.is_file() {
                    out.insert(leaf);
                    break;
                }
                if folder.is_file() {
                    out.insert(folder);
                    break;
                }
                path.pop();
            }
        }
    }
    out.remove(file);
    out
}

/// The import cycles among `src`'s files: each a list of files, `a -> b`
/// when `a`'s production code names `b`. A folder's `mod.rs` and the files
/// under that folder may name each other (the module tree itself); every
/// other cycle is reported.
fn import_cycles(src: &Path) -> Vec<Vec<PathBuf>> {
    let mut rs = Vec::new();
    files(src, ".rs", &mut rs);
    let parent_child = |a: &Path, b: &Path| {
        let under = |m: &Path, f: &Path| {
            m.file_name().is_some_and(|n| n == "mod.rs")
                && m.parent().is_some_and(|dir| f.starts_with(dir))
        };
        under(a, b) || under(b, a)
    };
    let edges: BTreeMap<PathBuf, Vec<PathBuf>> = rs
        .iter()
        .map(|f| {
            let to = module_refs(src, f, &engine_code(f))
                .into_iter()
                .filter(|t| !parent_child(f, t))
                .collect();
            (f.clone(), to)
        })
        .collect();
    strongly_connected(&edges)
}

/// The import cycles among `src`'s top-level units (a folder, or a file
/// directly under `src`): `a -> b` when a file of `a` names a file of `b`.
/// A loop that no file-level cycle shows (a file of folder `a` naming
/// folder `b`, another file of `b` naming `a`) is a loop across folders.
fn folder_cycles(src: &Path) -> Vec<Vec<PathBuf>> {
    let mut rs = Vec::new();
    files(src, ".rs", &mut rs);
    let unit = |f: &Path| -> PathBuf {
        let rel = f.strip_prefix(src).unwrap_or(f);
        rel.components()
            .next()
            .map_or_else(|| f.to_path_buf(), |c| src.join(c.as_os_str()))
    };
    let mut edges: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for f in &rs {
        let from = unit(f);
        let to: Vec<PathBuf> = module_refs(src, f, &engine_code(f))
            .iter()
            .map(|t| unit(t))
            .filter(|t| *t != from)
            .collect();
        edges.entry(from).or_default().extend(to);
    }
    strongly_connected(&edges)
}

/// The cycles of a graph: Tarjan's strongly connected components of two or
/// more nodes, each sorted.
fn strongly_connected(edges: &BTreeMap<PathBuf, Vec<PathBuf>>) -> Vec<Vec<PathBuf>> {
    // Tarjan's strongly connected components; every one of two or more
    // files is a cycle.
    struct Walk<'a> {
        edges: &'a BTreeMap<PathBuf, Vec<PathBuf>>,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a PathBuf) {
        w.index.insert(v, (w.next, w.next));
        w.next += 1;
        w.stack.push(v);
        w.on_stack.insert(v);
        for t in w.edges.get(v).into_iter().flatten() {
            let Some((t, _)) = w.edges.get_key_value(t) else {
                continue;
            };
            if !w.index.contains_key(t) {
                visit(w, t);
                let low = w.index[t].1.min(w.index[v].1);
                w.index.entry(v).and_modify(|e| e.1 = low);
            } else if w.on_stack.contains(t) {
                let low = w.index[t].0.min(w.index[v].1);
                w.index.entry(v).and_modify(|e| e.1 = low);
            }
        }
        if w.index[v].0 == w.index[v].1 {
            let mut component = Vec::new();
            while let Some(x) = w.stack.pop() {
                w.on_stack.remove(x);
                component.push(x.clone());
                if x == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.out.push(component);
            }
        }
    }
    let mut w = Walk {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !w.index.contains_key(v) {
            visit(&mut w, v);
        }
    }
    w.out
}

/// Every crate's source folder the loop checks cover.
const CRATE_SOURCES: [&str; 5] = [
    "engine/src",
    "server/src",
    "cli/src",
    "format/src",
    "bindings/python/src",
];

#[test]
fn no_crate_has_an_import_cycle() {
    // The checker on a scratch tree: a loop between two siblings is
    // found; a folder's mod.rs and its children are not a loop.
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    std::fs::create_dir_all(s.join("db")).unwrap();
    let put = |p: &str, text: &str| std::fs::write(s.join(p), text).unwrap();
    put("lib.rs", "mod db;\n");
    put("db/mod.rs", "mod a;\nmod b;\nuse crate::db::a::A;\n");
    put("db/a.rs", "use crate::db::Memdb;\nuse super::b::B;\n");
    put("db/b.rs", "use crate::db::Memdb;\n");
    assert_eq!(import_cycles(s), Vec::<Vec<PathBuf>>::new());
    put("db/b.rs", "use crate::db::a::A;\n");
    assert_eq!(
        import_cycles(s),
        vec![vec![s.join("db/a.rs"), s.join("db/b.rs")]]
    );
    // A loop through a test module does not count.
    put(
        "db/b.rs",
        "#[cfg(test)]\nmod tests {\n    use crate::db::a::A;\n}\n",
    );
    assert_eq!(import_cycles(s), Vec::<Vec<PathBuf>>::new());

    for crate_src in CRATE_SOURCES {
        let cycles = import_cycles(&root().join(crate_src));
        assert!(
            cycles.is_empty(),
            "import cycles in {crate_src}: {cycles:#?}"
        );
    }
}

#[test]
fn no_two_folders_import_each_other() {
    // The checker on a scratch tree: files without a loop between them,
    // whose folders still name each other, are a loop across folders.
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    std::fs::create_dir_all(s.join("mcp")).unwrap();
    let put = |p: &str, text: &str| std::fs::write(s.join(p), text).unwrap();
    put("lib.rs", "mod contract;\nmod mcp;\n");
    put("mcp/mod.rs", "mod text;\nuse crate::contract::TOOLS;\n");
    put("mcp/text.rs", "pub fn render() {}\n");
    put("contract.rs", "pub static TOOLS: () = ();\n");
    assert_eq!(folder_cycles(s), Vec::<Vec<PathBuf>>::new());
    put(
        "contract.rs",
        "use crate::mcp::text::render;\npub static TOOLS: () = ();\n",
    );
    assert_eq!(import_cycles(s), Vec::<Vec<PathBuf>>::new());
    assert_eq!(
        folder_cycles(s),
        vec![vec![s.join("contract.rs"), s.join("mcp")]]
    );

    for crate_src in CRATE_SOURCES {
        let cycles = folder_cycles(&root().join(crate_src));
        assert!(
            cycles.is_empty(),
            "folders of {crate_src} that import each other: {cycles:#?}"
        );
    }
}
