//! Sekha's conversation and message CRUD: create (one or many), append,
//! get, list and count with filters, update, pin, archive, delete, and the
//! totals `stats` reports. Writes go through the core's write path
//! ([`Memdb::write`] and the create combiner); reads take one snapshot.

use memdb_format::ConversationRecord;
use uuid::Uuid;

use super::Sekha;
use crate::db::add_messages;
use crate::error::{Error, Result};
use crate::model::filter::{check_limit, normalize_filter};
use crate::model::records::{conversation_from, message_from};
use crate::model::types::*;
use crate::model::validate;
use crate::store;
use crate::store::conversations::{self, ConversationsView, scan_matching_in};
use crate::util::time::{now, to_micros};

impl Sekha<'_> {
    /// Creates a conversation with its messages (at least one).
    pub fn create_conversation(&self, new: NewConversation) -> Result<ConversationWithMessages> {
        let record = self.prepare_conversation(&new)?;
        let mut out = self.db.write_new_conversations(vec![(record, new)])?;
        out.pop()
            .ok_or_else(|| Error::Store("create returned no conversation".into()))
    }

    /// Creates many conversations in one transaction (one fsync): the bulk
    /// path. All are validated first; on any error nothing is written and the
    /// error's field names the conversation (`conversations[3].label`).
    pub fn create_conversations(
        &self,
        batch: Vec<NewConversation>,
    ) -> Result<Vec<ConversationWithMessages>> {
        let mut prepared = Vec::with_capacity(batch.len());
        for (i, new) in batch.into_iter().enumerate() {
            let record = self
                .prepare_conversation(&new)
                .map_err(|e| e.in_item("conversations", i))?;
            prepared.push((record, new));
        }
        self.db.write_new_conversations(prepared)
    }

    /// Validates a new conversation and builds its row (counters at zero).
    fn prepare_conversation(&self, new: &NewConversation) -> Result<ConversationRecord> {
        let label = validate::label("label", &new.label)?;
        let folder = validate::folder("folder", new.folder.as_deref().unwrap_or("/"))?;
        let importance = validate::importance(
            "importance_score",
            new.importance_score.unwrap_or(DEFAULT_IMPORTANCE),
        )?;
        let metadata_json = validate::metadata("metadata", new.metadata.as_ref())?;
        validate::messages(&self.db.config().write_limits(), &new.messages, false)?;
        let t = to_micros(now());
        Ok(ConversationRecord {
            label,
            folder,
            status: Status::Active.code(),
            importance,
            word_count: 0,
            session_count: 1,
            message_count: 0,
            next_seq: 0,
            created_at: t,
            updated_at: t,
            metadata_json,
            // Set by the write (which may create the namespace).
            namespace: 0,
        })
    }

    /// Appends messages to a conversation; returns the stored messages.
    pub fn append_messages(&self, id: Uuid, messages: Vec<NewMessage>) -> Result<Vec<Message>> {
        validate::messages(&self.db.config().write_limits(), &messages, false)?;
        let key = id.as_u128();
        self.db.write(|txn, ops| {
            let old = conversations::require_for_update(txn, key)?;
            self.db.ns_check("conversation", id, old.namespace)?;
            let mut conv = old.clone();
            let t = to_micros(now());
            let msgs = add_messages(txn, key, &mut conv, &messages, t, ops)?;
            conv.updated_at = t.max(old.updated_at);
            conversations::put(txn, ops, key, &conv, Some(&old))?;
            Ok(msgs)
        })
    }

    /// The conversation `id` (without messages).
    pub fn get_conversation(&self, id: Uuid) -> Result<Conversation> {
        let txn = self.db.snapshot()?;
        let rec = ConversationsView::open(&txn)?.require(id.as_u128())?;
        self.db.ns_check("conversation", id, rec.namespace)?;
        conversation_from(id.as_u128(), &rec)
    }

    /// The conversation `id` with its messages, oldest first.
    pub fn get_conversation_with_messages(&self, id: Uuid) -> Result<ConversationWithMessages> {
        let found =
            crate::store::vectors::conversation_with_messages_in(&*self.db.snapshot()?, id)?;
        self.db.ns_check("conversation", id, found.1)?;
        Ok(found.0)
    }

    /// The message `id`.
    pub fn get_message(&self, id: Uuid) -> Result<Message> {
        let txn = self.db.snapshot()?;
        let view = ConversationsView::open(&txn)?;
        let m = view.message(id.as_u128())?.ok_or_else(|| Error::NotFound {
            what: "message",
            id: id.to_string(),
        })?;
        let conv_ns = view
            .conversation(u128::from_le_bytes(m.conversation_id))?
            .map_or(u32::MAX, |c| c.namespace);
        self.db.ns_check("message", id, conv_ns)?;
        let mut out = [message_from(id.as_u128(), &m)?];
        crate::store::vectors::fill_embedding_ids(&txn, &mut out)?;
        let [m] = out;
        Ok(m)
    }

    /// Conversations matching `filter`, newest `updated_at` first.
    pub fn list_conversations(&self, filter: &Filter, page: Page) -> Result<ConversationPage> {
        check_limit("limit", page.limit)?;
        let filter = normalize_filter(filter)?;
        let unfiltered = Filter {
            folder: filter.folder.clone().filter(|f| f != "/"),
            ..filter.clone()
        } == Filter::default();
        if unfiltered {
            // Every conversation matches: the total is the table's length,
            // and only the page's rows are read (newest updated first).
            let txn = self.db.snapshot()?;
            let ns = self.db.ns_read()?;
            let view = ConversationsView::open(&txn)?;
            let total = store::namespaces::conversation_count(&txn, ns)?;
            let mut out = Vec::with_capacity(page.limit.min(total as usize));
            for id in conversations::newest_updated(&txn, ns, page.offset, page.limit)? {
                if let Some(rec) = view.conversation(id)? {
                    out.push(conversation_from(id, &rec)?);
                }
            }
            return Ok(ConversationPage {
                conversations: out,
                total,
                offset: page.offset,
                limit: page.limit,
            });
        }
        let mut total = 0u64;
        let mut out = Vec::new();
        self.scan_matching(&filter, |id, rec| {
            if total as usize >= page.offset && out.len() < page.limit {
                out.push(conversation_from(id, rec)?);
            }
            total += 1;
            Ok(())
        })?;
        Ok(ConversationPage {
            conversations: out,
            total,
            offset: page.offset,
            limit: page.limit,
        })
    }

    /// Number of conversations matching `filter`.
    pub fn count_conversations(&self, filter: &Filter) -> Result<u64> {
        let filter = normalize_filter(filter)?;
        if filter == Filter::default() {
            let txn = self.db.snapshot()?;
            return store::namespaces::conversation_count(&txn, self.db.ns_read()?);
        }
        if let Some(status) = filter.status
            && filter
                == (Filter {
                    status: Some(status),
                    ..Filter::default()
                })
        {
            // Counted from the status index without decoding a row.
            let txn = self.db.snapshot()?;
            return conversations::count_with_status(&txn, self.db.ns_read()?, status.code());
        }
        let mut n = 0;
        self.scan_matching(&filter, |_, _| {
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }

    /// Visits conversations matching `filter` newest-updated first, using the
    /// most selective secondary index available.
    pub(crate) fn scan_matching(
        &self,
        filter: &Filter,
        visit: impl FnMut(u128, &ConversationRecord) -> Result<()>,
    ) -> Result<()> {
        scan_matching_in(&*self.db.snapshot()?, self.db.ns_read()?, filter, visit)
    }

    /// Applies `update` to conversation `id`; returns the updated conversation.
    pub fn update_conversation(
        &self,
        id: Uuid,
        update: ConversationUpdate,
    ) -> Result<Conversation> {
        let label = update
            .label
            .as_deref()
            .map(|l| validate::label("label", l))
            .transpose()?;
        let folder = update
            .folder
            .as_deref()
            .map(|f| validate::folder("folder", f))
            .transpose()?;
        let importance = update
            .importance_score
            .map(|i| validate::importance("importance_score", i))
            .transpose()?;
        let metadata = update
            .metadata
            .as_ref()
            .map(|m| validate::metadata("metadata", Some(m)))
            .transpose()?;
        let key = id.as_u128();
        let rec = self.db.write(|txn, ops| {
            let old = conversations::require_for_update(txn, key)?;
            self.db.ns_check("conversation", id, old.namespace)?;
            let mut rec = old.clone();
            if let Some(l) = &label {
                rec.label.clone_from(l);
            }
            if let Some(f) = &folder {
                rec.folder.clone_from(f);
            }
            if let Some(s) = update.status {
                rec.status = s.code();
            }
            if let Some(i) = importance {
                rec.importance = i;
            }
            if let Some(m) = &metadata {
                rec.metadata_json.clone_from(m);
            }
            if rec == old {
                return Ok(rec);
            }
            rec.updated_at = to_micros(now()).max(old.updated_at);
            conversations::put(txn, ops, key, &rec, Some(&old))?;
            Ok(rec)
        })?;
        conversation_from(key, &rec)
    }

    /// Pins conversation `id` (importance 10, Sekha's definition of pinned).
    pub fn pin(&self, id: Uuid) -> Result<Conversation> {
        self.update_conversation(
            id,
            ConversationUpdate {
                importance_score: Some(PINNED_IMPORTANCE),
                ..Default::default()
            },
        )
    }

    /// Archives conversation `id`.
    pub fn archive(&self, id: Uuid) -> Result<Conversation> {
        self.update_conversation(
            id,
            ConversationUpdate {
                status: Some(Status::Archived),
                ..Default::default()
            },
        )
    }

    /// Deletes conversation `id`, its messages and their index entries.
    /// Returns the number of messages removed.
    pub fn delete_conversation(&self, id: Uuid) -> Result<u64> {
        let key = id.as_u128();
        self.db.write(|txn, ops| {
            let rec = conversations::require_for_update(txn, key)?;
            self.db.ns_check("conversation", id, rec.namespace)?;
            let removed = conversations::delete(txn, ops, key, &rec)?;
            crate::vector::spaces::delete_record_vectors(txn, &removed, ops)?;
            Ok(removed.len() as u64)
        })
    }

    /// Totals over the conversations matching `filter`.
    pub fn stats(&self, filter: &Filter) -> Result<Stats> {
        let filter = normalize_filter(filter)?;
        let mut s = Stats::default();
        let mut importance_sum = 0u64;
        self.scan_matching(&filter, |_, rec| {
            s.total_conversations += 1;
            s.total_messages += u64::from(rec.message_count);
            s.total_words += rec.word_count;
            match Status::from_code(rec.status) {
                Some(Status::Archived) => s.archived += 1,
                _ => s.active += 1,
            }
            if rec.importance >= PINNED_IMPORTANCE {
                s.pinned += 1;
            }
            importance_sum += u64::from(rec.importance);
            *s.by_folder.entry(rec.folder.clone()).or_default() += 1;
            *s.by_label.entry(rec.label.clone()).or_default() += 1;
            Ok(())
        })?;
        if s.total_conversations > 0 {
            s.average_importance = importance_sum as f64 / s.total_conversations as f64;
        }
        Ok(s)
    }

    pub(crate) fn conversation_exists(&self, id: Uuid) -> Result<bool> {
        let txn = self.db.snapshot()?;
        Ok(ConversationsView::open(&txn)?
            .conversation(id.as_u128())?
            .is_some())
    }
}
