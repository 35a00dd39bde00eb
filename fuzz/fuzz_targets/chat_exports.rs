//! Fuzzes the chat-export parsers (`engine/src/import/`) through their
//! store-free entry point `memdb::import::parse_str(text, path, format)`,
//! which the importer, the CLI and the watched folder all go through
//! before anything is stored. The first byte picks the format (`% 6`; the
//! seeds start with the digit): `0` ChatGPT JSON, `1` Claude JSON, `2`
//! Claude XML, `3` Markdown, `4` text transcript, `5` detected (`None`,
//! named `export.md`, so every detection branch is reachable); the rest,
//! lossy UTF-8, is the file. It runs on a thread with a 2 MiB stack, the
//! stack of the watcher's thread and of tokio's blocking threads.
//!
//! What must hold: no panic at all (the import path catches none), no
//! stack overflow; an `Ok` file is of the
//! format asked for, has a conversation with messages, and every message's
//! content is trimmed and not blank.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memdb::import::{ChatFormat, parse_str};

const STACK: usize = 2 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let (format, name) = match pick % 6 {
        0 => (Some(ChatFormat::ChatGpt), "conversations.json"),
        1 => (Some(ChatFormat::Claude), "claude.json"),
        2 => (Some(ChatFormat::Claude), "claude.xml"),
        3 => (Some(ChatFormat::Markdown), "chat.md"),
        4 => (Some(ChatFormat::Text), "chat.txt"),
        _ => (None, "export.md"),
    };
    let text = String::from_utf8_lossy(file).into_owned();
    // No catch_unwind here, as on the import path: any panic is a crash.
    let parsed = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("fuzz-chat".into())
            .stack_size(STACK)
            .spawn_scoped(s, || parse_str(&text, Path::new(name), format))
            .expect("spawn the parser thread")
            .join()
    });
    let parsed = parsed.unwrap_or_else(|p| std::panic::resume_unwind(p));
    if std::env::var_os("MEMDB_FUZZ_DEBUG").is_some() {
        eprintln!("{name} as {format:?}: {parsed:?}");
    }
    let Ok(file) = parsed else {
        return;
    };
    if let Some(f) = format {
        assert_eq!(file.format, f);
    }
    assert!(
        file.conversations.iter().any(|c| !c.messages.is_empty()),
        "{name}: Ok without messages"
    );
    for c in &file.conversations {
        for m in &c.messages {
            assert!(!m.content.trim().is_empty(), "{name}: a blank message");
            assert_eq!(m.content.trim(), m.content, "{name}: an untrimmed message");
        }
    }
});
