//! Fuzzes the JSON bodies of the REST server's write routes: each body is
//! decoded into the route's wire type (as `axum::Json` does, with
//! serde_json) and, when it decodes, converted, validated and applied
//! exactly as the handler does, against a small fixed store (common.rs).
//!
//! Input: the first byte picks the route (`byte % 7`, see [`ROUTES`]) and,
//! with `byte / 7`, a fixture conversation (the path `{id}` of the `PUT`
//! routes; for `summarize`, `prune/execute` and `memory_update`, odd
//! `byte / 28` makes the body name that fixture instead of its
//! (first) id, so the fuzzer gets past "not found" without guessing a
//! UUID). The rest is the body.
//!
//! Must hold: no panic (nor stack overflow on the server's 2 MiB stack),
//! and no body is answered with a 5xx: bad input is the client's error.
//! Writes are undone after each input (created conversations deleted,
//! fixtures restored), so every input sees the same store.
//!
//! Write routes without a JSON body are not here: `PUT .../pin`,
//! `PUT .../archive`, `DELETE /api/v1/conversations/{id}` and
//! `POST /api/v1/rebuild-embeddings` have no body extractor (axum never
//! reads the body).

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use memdb::{ConversationUpdate, Extractive, PruneAction, SummarizeRequest, Systems};
use memdb_server::error::ApiError;
use memdb_server::tools::{self, MemoryStoreArgs, MemoryUpdateArgs};
use memdb_server::wire::{
    CreateConversation, FolderUpdate, LabelUpdate, PruneActionWire, PruneExecuteBody,
    SummarizeBody, SummaryLevel,
};
use serde::de::DeserializeOwned;
use uuid::Uuid;

/// The write routes with a JSON body, in selector order.
const ROUTES: [&str; 7] = [
    "POST /api/v1/conversations",
    "PUT /api/v1/conversations/{id}/label",
    "PUT /api/v1/conversations/{id}/folder",
    "POST /api/v1/summarize",
    "POST /api/v1/prune/execute",
    "POST /mcp/tools/memory_store",
    "POST /mcp/tools/memory_update",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let body = body.to_vec();
    common::run(move |f| {
        let route = usize::from(selector) % ROUTES.len();
        let pick = usize::from(selector) / ROUTES.len();
        let fixture = f.ids[pick % f.ids.len()];
        let retarget = (pick / f.ids.len()) % 2 == 1;
        let out = handle(f, route, fixture, retarget, &body);
        if debug() {
            let outcome = match &out {
                None => "body does not decode (400)".to_string(),
                Some(Ok(())) => "ok".to_string(),
                Some(Err(e)) => format!("{} {}", e.status, e.message),
            };
            eprintln!("{}: {outcome}", ROUTES[route]);
        }
        if let Some(Err(e)) = &out {
            assert!(
                !e.status.is_server_error(),
                "{}: {} answered {} ({})",
                ROUTES[route],
                String::from_utf8_lossy(&body),
                e.status,
                e.message
            );
        }
        f.restore();
    });
});

/// `MEMDB_FUZZ_DEBUG=1`: print each input's route and answer (to check
/// what seeds and crash inputs reach).
fn debug() -> bool {
    static DEBUG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEBUG.get_or_init(|| std::env::var_os("MEMDB_FUZZ_DEBUG").is_some())
}

/// What `axum::Json<T>` accepts (it deserializes with serde_json and
/// refuses trailing characters, as `from_slice` does).
fn decode<T: DeserializeOwned>(body: &[u8]) -> Option<T> {
    serde_json::from_slice(body).ok()
}

/// Runs route `route`'s handler body on `body`: `None` when the body does
/// not decode (the extractor's 400), else what the handler answers.
fn handle(
    f: &common::Fixture,
    route: usize,
    fixture: Uuid,
    retarget: bool,
    body: &[u8],
) -> Option<Result<(), ApiError>> {
    let db = &f.db;
    Some(match route {
        // routes::conversations::create
        0 => {
            let b: CreateConversation = decode(body)?;
            b.into_new().and_then(|new| {
                let c = db.sekha().create_conversation(new)?;
                db.sekha().delete_conversation(c.conversation.id)?;
                Ok(())
            })
        }
        // routes::conversations::set_label
        1 => {
            let b: LabelUpdate = decode(body)?;
            let update = ConversationUpdate {
                label: Some(b.label),
                folder: b.folder,
                ..Default::default()
            };
            db.sekha().update_conversation(fixture, update)
                .map(drop)
                .map_err(ApiError::from)
        }
        // routes::conversations::set_folder
        2 => {
            let b: FolderUpdate = decode(body)?;
            let update = ConversationUpdate {
                folder: Some(b.folder),
                ..Default::default()
            };
            db.sekha().update_conversation(fixture, update)
                .map(drop)
                .map_err(ApiError::from)
        }
        // routes::orchestration::summarize
        3 => {
            let mut b: SummarizeBody = decode(body)?;
            if retarget {
                b.conversation_id = fixture;
            }
            let level = match b.level {
                SummaryLevel::Daily => "daily",
                SummaryLevel::Weekly => "weekly",
                SummaryLevel::Monthly => "monthly",
            };
            let req = SummarizeRequest {
                conversation_id: b.conversation_id,
                level: level.into(),
                now: None,
            };
            db.sekha().summarize(&req, &Extractive)
                .map(drop)
                .map_err(ApiError::from)
        }
        // routes::orchestration::prune_execute
        4 => {
            let mut b: PruneExecuteBody = decode(body)?;
            if retarget {
                match b.conversation_ids.first_mut() {
                    Some(first) => *first = fixture,
                    None => b.conversation_ids.push(fixture),
                }
            }
            let action = match b.action {
                PruneActionWire::Archive => PruneAction::Archive,
                PruneActionWire::Delete => PruneAction::Delete,
            };
            db.sekha().prune_execute(&b.conversation_ids, action)
                .map(drop)
                .map_err(ApiError::from)
        }
        // routes::mcp::memory_store
        5 => {
            let a: MemoryStoreArgs = decode(body)?;
            tools::memory_store(db, a).and_then(|d| {
                db.sekha().delete_conversation(d.conversation_id)?;
                Ok(())
            })
        }
        // routes::mcp::memory_update
        6 => {
            let mut a: MemoryUpdateArgs = decode(body)?;
            if retarget {
                a.conversation_id = fixture;
            }
            tools::memory_update(db, a).map(drop)
        }
        _ => unreachable!(),
    })
}
