//! `Store`: an open data directory seen from one namespace. Each method is
//! one engine call (`db.sekha()`, `db.memorg()`, `db.kuradb()`, the core's vector API):
//! arguments are converted first, then the call runs with the GIL released,
//! then the result is converted back. The handle is shared freely across
//! Python threads (the engine is `Send + Sync`); `close()` ends one handle.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use memdb::{
    Config, ConversationUpdate, EmbedderKind, EmbedderSettings, Export, ExportFormat, Extractive,
    Filter, ImportOptions, Memdb, NewConversation, NewMessage, Page, PruneAction, Selection,
    SpaceSpec, Systems, VectorFilter, VectorSearch,
};
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde::Serialize;
use uuid::Uuid;

use crate::convert::{arg, id, out};
use crate::errors;

/// An open memdb store, in one namespace.
#[pyclass(frozen, module = "memdb._native")]
pub struct Store {
    db: Mutex<Option<Memdb>>,
    /// The data directory (readable after `close()`).
    dir: PathBuf,
    /// Why `auto` found no local model, when it did not.
    note: Option<String>,
}

impl Store {
    /// The engine handle (a cheap clone), or `Closed`.
    fn db(&self) -> PyResult<Memdb> {
        self.db
            .lock()
            .map_err(|_| errors::closed())?
            .clone()
            .ok_or_else(errors::closed)
    }

    /// Runs `f` on the engine with the GIL released.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Memdb) -> memdb::Result<T> + Send,
    ) -> PyResult<T> {
        let db = self.db()?;
        py.detach(|| f(&db)).map_err(errors::to_py)
    }

    /// [`Store::run`], then the result as plain Python values.
    fn answer<T: Serialize + Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Memdb) -> memdb::Result<T> + Send,
    ) -> PyResult<Py<PyAny>> {
        let value = self.run(py, f)?;
        out(py, &value)
    }
}

/// Runs `f` with the GIL released, calling `progress(done, total)` (with
/// the GIL) as the engine reports; when `progress` raises, the call is
/// cancelled at its next check and the callback's exception is raised.
fn with_progress<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    f: impl FnOnce(&mut dyn FnMut(u64, u64)) -> memdb::Result<T> + Send,
) -> PyResult<T> {
    let flag = Arc::new(AtomicBool::new(false));
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let result = py.detach(|| {
        memdb::with_cancel_flag(flag.clone(), || {
            let mut report = |done: u64, total: u64| {
                let Some(cb) = &progress else { return };
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                let call = Python::attach(|py| cb.call1(py, (done, total)).map(drop));
                if let Err(e) = call {
                    flag.store(true, Ordering::Relaxed);
                    if let Ok(mut slot) = raised.lock() {
                        *slot = Some(e);
                    }
                }
            };
            f(&mut report)
        })
    });
    if let Some(e) = raised.lock().ok().and_then(|mut s| s.take()) {
        return Err(e);
    }
    result.map_err(errors::to_py)
}

/// A JSON object argument (`None`: an empty object).
fn json_or_empty(field: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<serde_json::Value> {
    match value {
        Some(v) => arg(field, v),
        None => Ok(serde_json::Value::Object(Default::default())),
    }
}

#[pymethods]
impl Store {
    /// Opens (creating if needed) the store in `path`. `embedder` is
    /// `"auto"` (the local model when installed, else none), `"local"`,
    /// `"hashing"`, `"none"` or `"openai"` (configured by the `MEMDB_OPENAI_*`
    /// environment variables, as for the CLI); `models_dir` overrides where
    /// the local model lives.
    #[staticmethod]
    #[pyo3(signature = (path, embedder = "auto", namespace = None, models_dir = None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        embedder: &str,
        namespace: Option<String>,
        models_dir: Option<PathBuf>,
    ) -> PyResult<Store> {
        let kind: EmbedderKind = embedder.parse().map_err(errors::to_py)?;
        let openai = memdb::OpenAiSettings::from_env().map_err(errors::to_py)?;
        let (db, note) = py
            .detach(|| -> memdb::Result<(Memdb, Option<String>)> {
                let selected = memdb::select_embedder(&EmbedderSettings {
                    kind,
                    models_dir,
                    openai,
                    stored: Memdb::stored_message_model(&path),
                })?;
                let mut config = Config::default();
                config.embedder = selected.embedder;
                let db = Memdb::open_with(&path, config)?;
                let db = match namespace {
                    Some(ns) => db.namespace(&ns)?,
                    None => db,
                };
                Ok((db, selected.note))
            })
            .map_err(errors::to_py)?;
        Ok(Store {
            dir: db.dir().to_path_buf(),
            db: Mutex::new(Some(db)),
            note,
        })
    }

    /// A handle on namespace `name` of the same store (created by its first
    /// write).
    fn namespace(&self, name: &str) -> PyResult<Store> {
        let db = self.db()?.namespace(name).map_err(errors::to_py)?;
        Ok(Store {
            dir: self.dir.clone(),
            db: Mutex::new(Some(db)),
            note: self.note.clone(),
        })
    }

    /// The namespace this handle reads and writes.
    #[getter]
    fn namespace_name(&self) -> PyResult<String> {
        Ok(self.db()?.namespace_name().to_string())
    }

    /// The data directory (also after `close()`).
    #[getter]
    fn path(&self) -> PathBuf {
        self.dir.clone()
    }

    /// Why there is no embedder, when `embedder="auto"` found no model.
    #[getter]
    fn embedder_note(&self) -> Option<String> {
        self.note.clone()
    }

    /// Whether the store has an embedder (semantic and hybrid search).
    #[getter]
    fn has_embedder(&self) -> PyResult<bool> {
        Ok(self.db()?.config().embedder.is_some())
    }

    /// Commits and checkpoints the text index (`Memdb::close`) and ends
    /// this handle: its later calls raise `Closed`. Handles from
    /// `namespace()` share the engine and keep working; the directory is
    /// unlocked when the last one is closed or collected. Closing twice is
    /// a no-op.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.db.lock().map_err(|_| errors::closed())?.take();
        match taken {
            Some(db) => py.detach(|| db.close()).map_err(errors::to_py),
            None => Ok(()),
        }
    }

    /// Whether `close()` was called on this handle.
    #[getter]
    fn closed(&self) -> bool {
        self.db.lock().map(|g| g.is_none()).unwrap_or(true)
    }

    /// Makes every returned write durable and checkpoints the text index.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, Memdb::flush)
    }

    /// Embeds everything waiting in the embedding queue (a settled store);
    /// returns how many items were embedded.
    #[pyo3(signature = (progress = None))]
    fn embed_pending(&self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<u64> {
        let db = self.db()?;
        let report = with_progress(py, progress, |cb| {
            db.embed_pending(None, &mut |p| cb(p.done, p.total))
        })?;
        Ok(report.embedded)
    }

    // ----- Sekha ---------------------------------------------------------

    /// Creates a conversation; `new` is `{label, messages, folder?,
    /// importance_score?, metadata?}`.
    fn create_conversation(&self, py: Python<'_>, new: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let new: NewConversation = arg("conversation", new)?;
        self.answer(py, |db| db.sekha().create_conversation(new))
    }

    /// Creates many conversations in one transaction (all or nothing);
    /// answers their ids in order, not the stored rows (a bulk load does
    /// not pay to read them back).
    fn create_conversations(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<String>> {
        let batch: Vec<NewConversation> = arg("conversations", batch)?;
        let stored = self.run(py, |db| db.sekha().create_conversations(batch))?;
        Ok(stored
            .into_iter()
            .map(|c| c.conversation.id.to_string())
            .collect())
    }

    /// Appends messages (`[{role, content, timestamp?, metadata?}]`).
    fn append_messages(
        &self,
        py: Python<'_>,
        conversation_id: &Bound<'_, PyAny>,
        messages: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let cid = id("conversation_id", conversation_id)?;
        let messages: Vec<NewMessage> = arg("messages", messages)?;
        self.answer(py, |db| db.sekha().append_messages(cid, messages))
    }

    /// A conversation, with its messages when `messages` is true.
    #[pyo3(signature = (conversation_id, messages = false))]
    fn get_conversation(
        &self,
        py: Python<'_>,
        conversation_id: &Bound<'_, PyAny>,
        messages: bool,
    ) -> PyResult<Py<PyAny>> {
        let cid = id("conversation_id", conversation_id)?;
        if messages {
            self.answer(py, |db| db.sekha().get_conversation_with_messages(cid))
        } else {
            self.answer(py, |db| db.sekha().get_conversation(cid))
        }
    }

    /// One message.
    fn get_message(&self, py: Python<'_>, message_id: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let mid = id("message_id", message_id)?;
        self.answer(py, |db| db.sekha().get_message(mid))
    }

    /// A page of conversations matching `filter`, newest updated first.
    fn list_conversations(
        &self,
        py: Python<'_>,
        filter: &Bound<'_, PyAny>,
        offset: usize,
        limit: usize,
    ) -> PyResult<Py<PyAny>> {
        let filter: Filter = arg("filter", filter)?;
        let page = Page { offset, limit };
        self.answer(py, |db| db.sekha().list_conversations(&filter, page))
    }

    /// How many conversations match `filter`.
    fn count_conversations(&self, py: Python<'_>, filter: &Bound<'_, PyAny>) -> PyResult<u64> {
        let filter: Filter = arg("filter", filter)?;
        self.run(py, |db| db.sekha().count_conversations(&filter))
    }

    /// Applies `{label?, folder?, status?, importance_score?, metadata?}`.
    fn update_conversation(
        &self,
        py: Python<'_>,
        conversation_id: &Bound<'_, PyAny>,
        update: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let cid = id("conversation_id", conversation_id)?;
        let update: ConversationUpdate = arg("update", update)?;
        self.answer(py, |db| db.sekha().update_conversation(cid, update))
    }

    /// Pins a conversation (importance 10).
    fn pin(&self, py: Python<'_>, conversation_id: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let cid = id("conversation_id", conversation_id)?;
        self.answer(py, |db| db.sekha().pin(cid))
    }

    /// Archives a conversation.
    fn archive(&self, py: Python<'_>, conversation_id: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let cid = id("conversation_id", conversation_id)?;
        self.answer(py, |db| db.sekha().archive(cid))
    }

    /// Deletes a conversation; returns how many messages went with it.
    fn delete_conversation(
        &self,
        py: Python<'_>,
        conversation_id: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let cid = id("conversation_id", conversation_id)?;
        self.run(py, |db| db.sekha().delete_conversation(cid))
    }

    /// Searches messages; `request` is the engine's `SearchRequest`
    /// (`{query, mode?, limit, filter?, explain?, ...}`).
    fn search(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let req: memdb::SearchRequest = arg("request", request)?;
        self.answer(py, |db| db.sekha().search(&req))
    }

    /// Assembles a context window; `request` is the engine's
    /// `ContextRequest` (`{query, context_budget?, preferred_labels?, ...}`).
    fn assemble_context(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let req: memdb::ContextRequest = arg("request", request)?;
        self.answer(py, |db| db.sekha().assemble_context(&req))
    }

    /// Totals over the conversations matching `filter`.
    fn stats(&self, py: Python<'_>, filter: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let filter: Filter = arg("filter", filter)?;
        self.answer(py, |db| db.sekha().stats(&filter))
    }

    /// A daily/weekly/monthly summary of a conversation (extractive: no
    /// chat model is configured in process).
    fn summarize(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let req: memdb::SummarizeRequest = arg("request", request)?;
        self.answer(py, |db| db.sekha().summarize(&req, &Extractive))
    }

    /// Conversations the pruning rules would archive or delete.
    fn prune_suggestions(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let req: memdb::PruneRequest = arg("request", request)?;
        self.answer(py, |db| db.sekha().prune_suggestions(&req))
    }

    /// Archives or deletes the given conversations.
    fn prune_execute(
        &self,
        py: Python<'_>,
        conversation_ids: &Bound<'_, PyList>,
        action: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let ids = conversation_ids
            .iter()
            .enumerate()
            .map(|(i, v)| id(&format!("conversation_ids[{i}]"), &v))
            .collect::<PyResult<Vec<Uuid>>>()?;
        let action: PruneAction = arg("action", action)?;
        self.answer(py, |db| db.sekha().prune_execute(&ids, action))
    }

    /// Exports one conversation (`conversation_id`) or every one matching
    /// `filter`, as `"json"` or `"markdown"` text.
    #[pyo3(signature = (filter, conversation_id = None, format = "json"))]
    fn export(
        &self,
        py: Python<'_>,
        filter: &Bound<'_, PyAny>,
        conversation_id: Option<&Bound<'_, PyAny>>,
        format: &str,
    ) -> PyResult<String> {
        let selection = match conversation_id {
            Some(c) => Selection::One(id("conversation_id", c)?),
            None => Selection::Matching(arg("filter", filter)?),
        };
        let format: ExportFormat =
            serde_json::from_value(serde_json::Value::String(format.to_string()))
                .map_err(|e| errors::invalid("format", e))?;
        self.run(py, |db| db.sekha().export_to_string(&selection, format))
    }

    /// Imports a JSON export (what `export(format="json")` wrote); with
    /// `skip_existing`, conversations whose id exists are left alone.
    #[pyo3(signature = (data, skip_existing = false, progress = None))]
    fn import_export(
        &self,
        py: Python<'_>,
        data: &str,
        skip_existing: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let export: Export = serde_json::from_str(data).map_err(|e| errors::invalid("data", e))?;
        let db = self.db()?;
        let options = ImportOptions { skip_existing };
        let r = with_progress(py, progress, |cb| {
            db.sekha()
                .import(export, options, &mut |done, total| cb(done, total))
        })?;
        out(py, &r)
    }

    // ----- Memorg --------------------------------------------------------

    /// Memorg's `create_session(user_id, config)`.
    #[pyo3(signature = (user_id, config = None, metadata = None))]
    fn memorg_create_session(
        &self,
        py: Python<'_>,
        user_id: &str,
        config: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let config = json_or_empty("config", config)?;
        let metadata = json_or_empty("metadata", metadata)?;
        self.answer(py, |db| {
            db.memorg().create_session(user_id, config, metadata)
        })
    }

    /// The sessions, of one user when `user_id` is given.
    #[pyo3(signature = (user_id = None))]
    fn memorg_sessions(&self, py: Python<'_>, user_id: Option<&str>) -> PyResult<Py<PyAny>> {
        self.answer(py, |db| db.memorg().sessions(user_id))
    }

    /// Memorg's `start_conversation(session_id)`.
    #[pyo3(signature = (session_id, title = None))]
    fn memorg_start_conversation(
        &self,
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
        title: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let sid = id("session_id", session_id)?;
        self.answer(py, |db| db.memorg().start_conversation(sid, title))
    }

    /// A topic in a conversation.
    #[pyo3(signature = (conversation_id, title, summary = None))]
    fn memorg_create_topic(
        &self,
        py: Python<'_>,
        conversation_id: &Bound<'_, PyAny>,
        title: &str,
        summary: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let cid = id("conversation_id", conversation_id)?;
        self.answer(py, |db| db.memorg().create_topic(cid, title, summary))
    }

    /// Memorg's `add_exchange(topic_id, user_message, system_message)`.
    #[pyo3(signature = (topic_id, user_message, system_message, metadata = None))]
    fn memorg_add_exchange(
        &self,
        py: Python<'_>,
        topic_id: &Bound<'_, PyAny>,
        user_message: &str,
        system_message: &str,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let tid = id("topic_id", topic_id)?;
        let metadata = json_or_empty("metadata", metadata)?;
        self.answer(py, |db| {
            db.memorg()
                .add_exchange(tid, user_message, system_message, metadata)
        })
    }

    /// The exchanges of a topic, oldest first.
    fn memorg_topic_exchanges(
        &self,
        py: Python<'_>,
        topic_id: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let tid = id("topic_id", topic_id)?;
        self.answer(py, |db| db.memorg().topic_exchanges(tid))
    }

    /// Memorg's `search_context`; `request` is the engine's `ContextSearch`.
    fn memorg_search_context(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let req: memdb::memorg::system::ContextSearch = arg("request", request)?;
        self.answer(py, |db| db.memorg().search_context(&req))
    }

    /// Memorg's `get_memory_usage`.
    fn memorg_memory_usage(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.answer(py, |db| db.memorg().memory_usage())
    }

    /// Memorg's `optimize_context`: `content` fitted into `max_tokens`
    /// o200k tokens (extractive summary, then a head/tail cut), keeping the
    /// named `entities`; `template` (`default` or `summary`) renders one of
    /// Memorg's prompt templates around it.
    #[pyo3(signature = (content, max_tokens, entities = Vec::new(), template = None))]
    fn memorg_optimize_context(
        &self,
        py: Python<'_>,
        content: String,
        max_tokens: usize,
        entities: Vec<String>,
        template: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let entities: Vec<memdb::memorg::parse::Entity> = entities
            .iter()
            .map(|n| memdb::memorg::parse::Entity::named(n))
            .collect();
        let template = template
            .as_deref()
            .map(memdb::memorg::optimizer::PromptTemplate::parse)
            .transpose()
            .map_err(errors::to_py)?;
        self.answer(py, |db| {
            db.memorg().optimize_context(
                &content,
                &entities,
                max_tokens,
                template,
                memdb::TokenCounter::O200kBase,
            )
        })
    }

    /// A memory item (Memorg's `create_memory_item`).
    #[pyo3(signature = (content, item_type, parent_id = None, metadata = None, tags = Vec::new(), importance = None))]
    #[allow(clippy::too_many_arguments)]
    fn memorg_create_memory_item(
        &self,
        py: Python<'_>,
        content: &str,
        item_type: &str,
        parent_id: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        tags: Vec<String>,
        importance: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let parent = parent_id.map(|p| id("parent_id", p)).transpose()?;
        let metadata = json_or_empty("metadata", metadata)?;
        self.answer(py, |db| {
            db.memorg()
                .create_memory_item(content, item_type, parent, metadata, &tags, importance)
        })
    }

    /// A memory item under a caller-chosen id (`Conflict` when taken).
    #[pyo3(signature = (item_id, content, item_type, metadata = None, tags = Vec::new()))]
    fn memorg_create_memory_item_as(
        &self,
        py: Python<'_>,
        item_id: &Bound<'_, PyAny>,
        content: &str,
        item_type: &str,
        metadata: Option<&Bound<'_, PyAny>>,
        tags: Vec<String>,
    ) -> PyResult<Py<PyAny>> {
        let item = id("item_id", item_id)?;
        let metadata = json_or_empty("metadata", metadata)?;
        self.answer(py, |db| {
            db.memorg()
                .create_memory_item_as(item, content, item_type, metadata, &tags)
        })
    }

    /// One memory item.
    fn memorg_memory_item(
        &self,
        py: Python<'_>,
        item_id: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let iid = id("item_id", item_id)?;
        self.answer(py, |db| db.memorg().memory_item(iid))
    }

    /// Changes a memory item's content, metadata, importance or tags.
    #[pyo3(signature = (item_id, content = None, metadata = None, importance = None, tags = None))]
    fn memorg_update_memory_item(
        &self,
        py: Python<'_>,
        item_id: &Bound<'_, PyAny>,
        content: Option<&str>,
        metadata: Option<&Bound<'_, PyAny>>,
        importance: Option<f64>,
        tags: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        let iid = id("item_id", item_id)?;
        let metadata = metadata
            .map(|m| arg::<serde_json::Value>("metadata", m))
            .transpose()?;
        self.answer(py, |db| {
            db.memorg()
                .update_memory_item(iid, content, metadata, importance, tags.as_deref())
        })
    }

    /// Adds tags to a memory item.
    fn memorg_add_item_tags(
        &self,
        py: Python<'_>,
        item_id: &Bound<'_, PyAny>,
        tags: Vec<String>,
    ) -> PyResult<Py<PyAny>> {
        let iid = id("item_id", item_id)?;
        self.answer(py, |db| db.memorg().add_item_tags(iid, &tags))
    }

    /// Removes tags from a memory item.
    fn memorg_remove_item_tags(
        &self,
        py: Python<'_>,
        item_id: &Bound<'_, PyAny>,
        tags: Vec<String>,
    ) -> PyResult<Py<PyAny>> {
        let iid = id("item_id", item_id)?;
        self.answer(py, |db| db.memorg().remove_item_tags(iid, &tags))
    }

    /// Memorg's `search_memory`; `request` is the engine's `MemorySearch`.
    fn memorg_search_memory(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let req: memdb::memorg::system::MemorySearch = arg("request", request)?;
        self.answer(py, |db| db.memorg().search_memory(&req))
    }

    /// A memory item with its ancestors (and siblings).
    #[pyo3(signature = (item_id, depth = 1, include_siblings = false))]
    fn memorg_item_context(
        &self,
        py: Python<'_>,
        item_id: &Bound<'_, PyAny>,
        depth: usize,
        include_siblings: bool,
    ) -> PyResult<Py<PyAny>> {
        let iid = id("item_id", item_id)?;
        self.answer(py, |db| {
            db.memorg().item_context(iid, depth, include_siblings)
        })
    }

    /// Deletes a Memorg record (and what hangs under it); returns how many.
    fn memorg_delete(&self, py: Python<'_>, record_id: &Bound<'_, PyAny>) -> PyResult<u64> {
        let rid = id("record_id", record_id)?;
        self.run(py, |db| db.memorg().delete(rid))
    }

    // ----- KuraDB --------------------------------------------------------

    /// Registers knowledge base `name` over the `inbox` folders.
    fn kb_add(&self, py: Python<'_>, name: &str, inbox: Vec<PathBuf>) -> PyResult<Py<PyAny>> {
        self.answer(py, |db| db.kuradb().add(name, &inbox))
    }

    /// The knowledge bases of this namespace.
    fn kb_list(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.answer(py, |db| db.kuradb().list())
    }

    /// One knowledge base.
    fn kb_get(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        self.answer(py, |db| db.kuradb().get(name))
    }

    /// Renames a knowledge base.
    fn kb_rename(&self, py: Python<'_>, old: &str, new: &str) -> PyResult<Py<PyAny>> {
        self.answer(py, |db| db.kuradb().rename(old, new))
    }

    /// Removes a knowledge base and its documents; returns how many records
    /// went with it.
    fn kb_remove(&self, py: Python<'_>, name: &str) -> PyResult<u64> {
        self.run(py, |db| db.kuradb().remove(name))
    }

    /// Documents, chunks and the embedding backlog of a knowledge base.
    fn kb_status(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        self.answer(py, |db| db.kuradb().status(name))
    }

    /// Syncs a knowledge base with its inbox folders, calling
    /// `progress(done, total)` as files are read.
    #[pyo3(signature = (name, progress = None))]
    fn kb_sync(
        &self,
        py: Python<'_>,
        name: &str,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let db = self.db()?;
        let r = with_progress(py, progress, |cb| {
            db.kuradb()
                .sync_with_progress(name, &mut |p| cb(p.done, p.total))
        })?;
        out(py, &r)
    }

    /// Searches a knowledge base (`target`: `"keyword"`, `"semantic"` or
    /// `None` for both), hits grouped by source file.
    #[pyo3(signature = (name, query, target = None, limit = 10))]
    fn kb_search(
        &self,
        py: Python<'_>,
        name: &str,
        query: &str,
        target: Option<&str>,
        limit: usize,
    ) -> PyResult<Py<PyAny>> {
        let target = match target {
            Some(t) => memdb::kuradb::RagTarget::parse(t).map_err(errors::to_py)?,
            None => None,
        };
        self.answer(py, |db| db.kuradb().search(name, query, target, limit))
    }

    // ----- vectors -------------------------------------------------------

    /// Creates a vector space (`{name, dimension, metric, m?,
    /// ef_construction?}`).
    fn create_vector_space(&self, py: Python<'_>, spec: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let spec: SpaceSpec = arg("spec", spec)?;
        self.answer(py, |db| db.create_vector_space(&spec))
    }

    /// Writes vectors: `ids[i]` gets `vectors[i]` (rows of floats).
    fn upsert_vectors(
        &self,
        py: Python<'_>,
        space: &str,
        ids: &Bound<'_, PyList>,
        vectors: Vec<Vec<f32>>,
    ) -> PyResult<()> {
        if ids.len() != vectors.len() {
            return Err(errors::invalid(
                "vectors",
                format!("{} ids but {} vectors", ids.len(), vectors.len()),
            ));
        }
        let items = ids
            .iter()
            .enumerate()
            .map(|(i, v)| id(&format!("ids[{i}]"), &v))
            .zip(vectors)
            .map(|(id, v)| id.map(|id| (id, v)))
            .collect::<PyResult<Vec<(Uuid, Vec<f32>)>>>()?;
        self.run(py, |db| db.upsert_vectors(space, &items))
    }

    /// [`Store::upsert_vectors`] with the rows as one C-contiguous float32
    /// NumPy array of shape `(len(ids), dimension)`, read from its buffer
    /// (no Python float per element). The rows are copied once, while the
    /// GIL is held, so another thread writing the array during the call
    /// cannot tear them.
    fn upsert_vector_array(
        &self,
        py: Python<'_>,
        space: &str,
        ids: &Bound<'_, PyList>,
        vectors: PyReadonlyArray2<'_, f32>,
    ) -> PyResult<()> {
        let dimension = vectors.shape()[1];
        let data = vectors
            .as_slice()
            .map_err(|_| errors::invalid("vectors", "the array is not C-contiguous"))?;
        // Width-0 rows: `chunks` needs a positive size, and the engine
        // refuses them by dimension anyway.
        let rows: Vec<Vec<f32>> = if dimension == 0 {
            vec![Vec::new(); vectors.shape()[0]]
        } else {
            data.chunks(dimension).map(<[f32]>::to_vec).collect()
        };
        self.upsert_vectors(py, space, ids, rows)
    }

    /// [`Store::search_vectors`] with the query as a 1-D float32 NumPy
    /// array, read from its buffer.
    #[pyo3(signature = (space, query, k = 10, ef = None))]
    fn search_vector_array(
        &self,
        py: Python<'_>,
        space: &str,
        query: PyReadonlyArray1<'_, f32>,
        k: usize,
        ef: Option<usize>,
    ) -> PyResult<Vec<(String, f32)>> {
        let query = query
            .as_slice()
            .map_err(|_| errors::invalid("query", "the array is not contiguous"))?;
        self.search_vectors(py, space, query.to_vec(), k, ef)
    }

    /// The `k` nearest vectors to `query`: `[(id, similarity)]`, best first.
    #[pyo3(signature = (space, query, k = 10, ef = None))]
    fn search_vectors(
        &self,
        py: Python<'_>,
        space: &str,
        query: Vec<f32>,
        k: usize,
        ef: Option<usize>,
    ) -> PyResult<Vec<(String, f32)>> {
        let mut params = VectorSearch {
            k,
            ..VectorSearch::default()
        };
        if let Some(ef) = ef {
            params.ef = ef;
        }
        let hits = self.run(py, |db| {
            db.search_vectors(space, &query, params, &VectorFilter::default())
        })?;
        Ok(hits
            .into_iter()
            .map(|h| (h.record.to_string(), h.similarity))
            .collect())
    }

    fn __repr__(&self) -> String {
        match self.db.lock().ok().and_then(|g| g.clone()) {
            Some(db) => format!(
                "Store(path={:?}, namespace={:?})",
                db.dir(),
                db.namespace_name()
            ),
            None => "Store(closed)".to_string(),
        }
    }
}
