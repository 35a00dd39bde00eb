//! Test helper for the KuraDB crash test: opens a data directory with the
//! `Hashing` embedder, registers knowledge base `crash` over INBOX if it is
//! missing, then forever writes file N into the inbox (and rewrites file
//! N-3, so changed files are re-parsed too), syncs, and prints `SYNCED <n>`
//! after each sync returned, until it is killed. An `EmbedWorker` embeds
//! the queued chunks meanwhile, so kills also land inside its passes.
//!
//! Usage: `memdb-kb-crash-child DIR INBOX START`.

use memdb::Systems;
#[path = "hashing_store.rs"]
mod hashing_store;

use std::io::Write;
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(inbox), Some(start)) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: memdb-kb-crash-child DIR INBOX START");
        std::process::exit(2);
    };
    let start: u64 = start.parse().unwrap_or(0);
    let inbox = PathBuf::from(inbox);
    let db = std::sync::Arc::new(hashing_store::open(&dir));
    let _worker = match memdb::EmbedWorker::spawn(db.clone()) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("embed worker: {e}");
            std::process::exit(1);
        }
    };
    if db.kuradb().get("crash").is_err()
        && let Err(e) = db.kuradb().add("crash", std::slice::from_ref(&inbox))
    {
        eprintln!("kb_add: {e}");
        std::process::exit(1);
    }
    let mut out = std::io::stdout().lock();
    for n in start.. {
        let body = format!("file {n} holds marker{n}x.\n\nA second paragraph for {n}.\n");
        if std::fs::write(inbox.join(format!("f{n}.md")), body).is_err() {
            std::process::exit(1);
        }
        if n >= 3 {
            let old = n - 3;
            let body = format!("file {old} holds marker{old}x.\n\nRewritten after {n}.\n");
            let _ = std::fs::write(inbox.join(format!("f{old}.md")), body);
        }
        match db.kuradb().sync("crash") {
            Ok(_) => {
                let _ = writeln!(out, "SYNCED {n}");
                let _ = out.flush();
            }
            Err(e) => {
                eprintln!("sync {n}: {e}");
                std::process::exit(1);
            }
        }
    }
}
