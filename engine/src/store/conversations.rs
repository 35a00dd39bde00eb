//! The conversation and message tables behind a typed API: the only code
//! that reads or writes `conversations`, `messages`, `conv_messages`, the
//! five `conv_by_*` indexes and `summaries`.
//!
//! Writes record their own oplog entries: [`put`] notices a scope change
//! (label, folder, status, importance) by comparing with the previous row
//! and records `Op::PutConversation`; [`delete`] records
//! `Op::DeleteConversation`; [`MessageTables::insert`] records
//! `Op::InsertMessage`. Callers never push these themselves.
//!
//! Reads go through [`ConversationsView`] (the three row tables of one
//! snapshot, opened once) and a few index scans.

use std::collections::HashMap;

use memdb_format::{ConversationRecord, MessageRecord, Op, SummaryRecord};
use redb::{
    ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata, Table, WriteTransaction,
};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::filter::matches_filter;
use crate::model::records::{conversation_from, message_from};
use crate::model::types::{ConversationWithMessages, Filter, PINNED_IMPORTANCE};
use crate::store::namespaces;
use crate::store::{
    CONV_BY_FOLDER, CONV_BY_IMPORTANCE, CONV_BY_LABEL, CONV_BY_STATUS, CONV_BY_UPDATED,
    CONV_MESSAGES, CONVERSATIONS, MESSAGES, OpBatch, SUMMARIES,
};

/// Reads and decodes a conversation.
pub(crate) fn get_conversation(
    table: &impl ReadableTable<u128, &'static [u8]>,
    id: u128,
) -> Result<Option<ConversationRecord>> {
    match table.get(id)? {
        Some(v) => Ok(Some(ConversationRecord::decode(v.value())?)),
        None => Ok(None),
    }
}

/// Reads and decodes a message.
pub(crate) fn get_message(
    table: &impl ReadableTable<u128, &'static [u8]>,
    id: u128,
) -> Result<Option<MessageRecord>> {
    match table.get(id)? {
        Some(v) => Ok(Some(MessageRecord::decode(v.value())?)),
        None => Ok(None),
    }
}

fn not_found(id: u128) -> Error {
    Error::NotFound {
        what: "conversation",
        id: Uuid::from_u128(id).to_string(),
    }
}

// ----- reads -----------------------------------------------------------

/// The conversation, message and per-conversation message-index tables of
/// one snapshot, opened once (opening a table is a B-tree lookup).
pub(crate) struct ConversationsView {
    convs: ReadOnlyTable<u128, &'static [u8]>,
    msgs: ReadOnlyTable<u128, &'static [u8]>,
    conv_msgs: ReadOnlyTable<(u128, i64, u32), u128>,
}

impl ConversationsView {
    pub(crate) fn open(txn: &ReadTransaction) -> Result<ConversationsView> {
        Ok(ConversationsView {
            convs: txn.open_table(CONVERSATIONS)?,
            msgs: txn.open_table(MESSAGES)?,
            conv_msgs: txn.open_table(CONV_MESSAGES)?,
        })
    }

    /// The turn just before message `m` in its conversation, if any.
    pub(crate) fn turn_before(&self, m: &MessageRecord) -> Result<Option<MessageRecord>> {
        match neighbour_ids(&self.conv_msgs, m, true, false)?.0 {
            Some(id) => self.message(id),
            None => Ok(None),
        }
    }

    /// The id of the turn just after message `m` in its conversation, if
    /// any.
    pub(crate) fn turn_after(&self, m: &MessageRecord) -> Result<Option<u128>> {
        Ok(neighbour_ids(&self.conv_msgs, m, false, true)?.1)
    }

    /// The conversation row `id`, if it exists.
    pub(crate) fn conversation(&self, id: u128) -> Result<Option<ConversationRecord>> {
        get_conversation(&self.convs, id)
    }

    /// The conversation row `id`, or `NotFound`.
    pub(crate) fn require(&self, id: u128) -> Result<ConversationRecord> {
        self.conversation(id)?.ok_or_else(|| not_found(id))
    }

    /// The message row `id`, if it exists.
    pub(crate) fn message(&self, id: u128) -> Result<Option<MessageRecord>> {
        get_message(&self.msgs, id)
    }

    /// Number of conversations.
    pub(crate) fn conversation_count(&self) -> Result<u64> {
        Ok(self.convs.len()?)
    }

    /// Every conversation row in id order.
    pub(crate) fn iter(
        &self,
    ) -> Result<impl Iterator<Item = Result<(u128, ConversationRecord)>> + '_> {
        Ok(self.convs.iter()?.map(|row| {
            let (k, v) = row?;
            Ok((k.value(), ConversationRecord::decode(v.value())?))
        }))
    }

    /// Every message id, in order.
    pub(crate) fn message_ids(&self) -> Result<std::collections::BTreeSet<u128>> {
        let mut out = std::collections::BTreeSet::new();
        for row in self.msgs.iter()? {
            out.insert(row?.0.value());
        }
        Ok(out)
    }

    /// Every message row in id order.
    pub(crate) fn messages(
        &self,
    ) -> Result<impl Iterator<Item = Result<(u128, MessageRecord)>> + '_> {
        Ok(self.msgs.iter()?.map(|row| {
            let (k, v) = row?;
            Ok((k.value(), MessageRecord::decode(v.value())?))
        }))
    }

    /// `(message id, timestamp)` of conversation `cid` with timestamp in
    /// `[since, until]`, oldest first.
    pub(crate) fn messages_between(
        &self,
        cid: u128,
        since: i64,
        until: i64,
    ) -> Result<Vec<(u128, i64)>> {
        let mut out = Vec::new();
        for row in self
            .conv_msgs
            .range((cid, since, 0u32)..=(cid, until, u32::MAX))?
        {
            let (k, v) = row?;
            out.push((v.value(), k.value().1));
        }
        Ok(out)
    }

    /// The newest `cap` `(message id, timestamp)` of conversation `cid` with
    /// timestamp in `[since, until]`, newest first, from the index keys alone.
    pub(crate) fn newest_messages(
        &self,
        cid: u128,
        since: i64,
        until: i64,
        cap: usize,
    ) -> Result<Vec<(u128, i64)>> {
        let mut out = Vec::new();
        for row in self
            .conv_msgs
            .range((cid, since, 0u32)..=(cid, until, u32::MAX))?
            .rev()
        {
            if out.len() >= cap {
                break;
            }
            let (k, v) = row?;
            out.push((v.value(), k.value().1));
        }
        Ok(out)
    }

    /// The first message id of conversation `cid`, if any.
    pub(crate) fn first_message(&self, cid: u128) -> Result<Option<u128>> {
        Ok(self.end_of(cid, true)?.map(|(_, id)| id))
    }

    /// The last message id of conversation `cid`, if any.
    pub(crate) fn last_message(&self, cid: u128) -> Result<Option<u128>> {
        Ok(self.end_of(cid, false)?.map(|(_, id)| id))
    }

    /// The timestamp of the last message of conversation `cid`, if any.
    pub(crate) fn last_message_time(&self, cid: u128) -> Result<Option<i64>> {
        Ok(self.end_of(cid, false)?.map(|(ts, _)| ts))
    }

    /// The (timestamp, id) of conversation `cid`'s first or last message.
    fn end_of(&self, cid: u128, first: bool) -> Result<Option<(i64, u128)>> {
        let mut range = self
            .conv_msgs
            .range((cid, i64::MIN, 0u32)..=(cid, i64::MAX, u32::MAX))?;
        let row = if first {
            range.next()
        } else {
            range.next_back()
        };
        Ok(row.transpose()?.map(|(k, v)| (k.value().1, v.value())))
    }
}

/// Ids of namespace `ns`'s conversations labeled `label`, by id.
pub(crate) fn ids_with_label(txn: &ReadTransaction, ns: u32, label: &str) -> Result<Vec<u128>> {
    let t = txn.open_table(CONV_BY_LABEL)?;
    let mut ids = Vec::new();
    for row in t.range((ns, label, 0u128)..=(ns, label, u128::MAX))? {
        ids.push(row?.0.value().2);
    }
    Ok(ids)
}

/// Namespace `ns`'s conversations with importance ≥ 10 (any status), by id.
pub(crate) fn pinned_ids(txn: &ReadTransaction, ns: u32) -> Result<Vec<u128>> {
    let t = txn.open_table(CONV_BY_IMPORTANCE)?;
    let mut out = Vec::new();
    for row in t.range((ns, PINNED_IMPORTANCE, 0u128)..=(ns, u8::MAX, u128::MAX))? {
        out.push(row?.0.value().2);
    }
    out.sort_unstable();
    Ok(out)
}

/// Up to `n` `(updated_at, id)` keys of namespace `ns`'s update-time index
/// strictly below `cursor` (everything when `None`), newest first.
pub(crate) fn updated_before(
    txn: &ReadTransaction,
    ns: u32,
    cursor: Option<(i64, u128)>,
    n: usize,
) -> Result<Vec<(i64, u128)>> {
    let t = txn.open_table(CONV_BY_UPDATED)?;
    let lo = (ns, i64::MIN, 0u128);
    let range = match cursor {
        Some((at, id)) => t.range(lo..(ns, at, id))?,
        None => t.range(lo..=(ns, i64::MAX, u128::MAX))?,
    };
    let mut out = Vec::with_capacity(n);
    for row in range.rev().take(n) {
        let (_, at, id) = row?.0.value();
        out.push((at, id));
    }
    Ok(out)
}

/// Ids of namespace `ns`'s `limit` most recently updated conversations
/// after skipping `offset`, newest first.
pub(crate) fn newest_updated(
    txn: &ReadTransaction,
    ns: u32,
    offset: usize,
    limit: usize,
) -> Result<Vec<u128>> {
    let t = txn.open_table(CONV_BY_UPDATED)?;
    let mut out = Vec::with_capacity(limit.min(1024));
    for row in t
        .range((ns, i64::MIN, 0u128)..=(ns, i64::MAX, u128::MAX))?
        .rev()
        .skip(offset)
        .take(limit)
    {
        out.push(row?.0.value().2);
    }
    Ok(out)
}

/// Number of namespace `ns`'s conversations with status code `status`.
pub(crate) fn count_with_status(txn: &ReadTransaction, ns: u32, status: u8) -> Result<u64> {
    let t = txn.open_table(CONV_BY_STATUS)?;
    let mut n = 0;
    for row in t.range((ns, status, 0u128)..=(ns, status, u128::MAX))? {
        row?;
        n += 1;
    }
    Ok(n)
}

/// The ids a secondary index (label, folder subtree, importance) holds for
/// `filter` in namespace `ns`, a superset of the matches; `None` when no
/// index applies.
fn index_candidates(txn: &ReadTransaction, ns: u32, filter: &Filter) -> Result<Option<Vec<u128>>> {
    Ok(if let Some(label) = &filter.label {
        let t = txn.open_table(CONV_BY_LABEL)?;
        let mut ids = Vec::new();
        for row in t.range((ns, label.as_str(), 0u128)..=(ns, label.as_str(), u128::MAX))? {
            ids.push(row?.0.value().2);
        }
        Some(ids)
    } else if let Some(folder) = filter.folder.as_deref().filter(|f| *f != "/") {
        let t = txn.open_table(CONV_BY_FOLDER)?;
        let mut ids = Vec::new();
        for row in t.range((ns, folder, 0u128)..=(ns, folder, u128::MAX))? {
            ids.push(row?.0.value().2);
        }
        let sub = format!("{folder}/");
        let end = format!("{folder}0"); // '0' is the byte after '/'
        for row in t.range((ns, sub.as_str(), 0u128)..(ns, end.as_str(), 0u128))? {
            ids.push(row?.0.value().2);
        }
        Some(ids)
    } else if filter.pinned == Some(true) || filter.min_importance.is_some() {
        let lo = if filter.pinned == Some(true) {
            PINNED_IMPORTANCE
        } else {
            filter.min_importance.unwrap_or(0)
        };
        let t = txn.open_table(CONV_BY_IMPORTANCE)?;
        let mut ids = Vec::new();
        for row in t.range((ns, lo, 0u128)..=(ns, u8::MAX, u128::MAX))? {
            ids.push(row?.0.value().2);
        }
        Some(ids)
    } else {
        None
    })
}

/// Whether `filter` is exactly one of a label or a folder below the root,
/// nothing else: its matches are the keys of that index, listed without
/// decoding a conversation row ([`matching_ids_in`]).
pub(crate) fn listed_by_index(filter: &Filter) -> bool {
    let rest = Filter {
        folder: None,
        label: None,
        ..filter.clone()
    };
    rest == Filter::default()
        && match (&filter.label, filter.folder.as_deref()) {
            (Some(_), None) => true,
            (None, Some(f)) => f != "/",
            _ => false,
        }
}

/// The ids of namespace `ns`'s conversations matching `filter`, in no
/// particular order. A filter of only a label or only a folder is answered
/// from its index alone (its keys are exactly the matches), without
/// decoding a conversation row: a folder filter of a vector search costs a
/// range scan, not a row per conversation.
pub(crate) fn matching_ids_in(
    txn: &ReadTransaction,
    ns: u32,
    filter: &Filter,
) -> Result<Vec<u128>> {
    if listed_by_index(filter)
        && let Some(ids) = index_candidates(txn, ns, filter)?
    {
        return Ok(ids);
    }
    let mut ids = Vec::new();
    scan_matching_in(txn, ns, filter, |id, _| {
        ids.push(id);
        Ok(())
    })?;
    Ok(ids)
}

/// [`crate::Sekha::scan_matching`] over a given snapshot: visits the conversations
/// matching `filter` (normalized), newest `updated_at` first.
pub(crate) fn scan_matching_in(
    txn: &redb::ReadTransaction,
    ns: u32,
    filter: &Filter,
    mut visit: impl FnMut(u128, &ConversationRecord) -> Result<()>,
) -> Result<()> {
    let convs = txn.open_table(CONVERSATIONS)?;
    let candidates = index_candidates(txn, ns, filter)?;
    match candidates {
        Some(ids) => {
            let mut recs = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(rec) = get_conversation(&convs, id)?
                    && rec.namespace == ns
                    && matches_filter(filter, &rec)
                {
                    recs.push((id, rec));
                }
            }
            recs.sort_by(|a, b| b.1.updated_at.cmp(&a.1.updated_at).then(b.0.cmp(&a.0)));
            for (id, rec) in &recs {
                visit(*id, rec)?;
            }
        }
        None => {
            let by_updated = txn.open_table(CONV_BY_UPDATED)?;
            for row in by_updated
                .range((ns, i64::MIN, 0u128)..=(ns, i64::MAX, u128::MAX))?
                .rev()
            {
                let (k, _) = row?;
                let (_, _, id) = k.value();
                if let Some(rec) = get_conversation(&convs, id)?
                    && rec.namespace == ns
                    && matches_filter(filter, &rec)
                {
                    visit(id, &rec)?;
                }
            }
        }
    }
    Ok(())
}

/// The conversation `id` with its messages, oldest first, from one
/// snapshot, and the conversation's namespace id; the messages'
/// `embedding_id`s are left `None` (the vector tables fill them:
/// [`crate::store::vectors::conversation_with_messages_in`]).
pub(crate) fn conversation_and_messages_in(
    txn: &redb::ReadTransaction,
    id: Uuid,
) -> Result<(ConversationWithMessages, u32)> {
    let rec =
        get_conversation(&txn.open_table(CONVERSATIONS)?, id.as_u128())?.ok_or_else(|| {
            Error::NotFound {
                what: "conversation",
                id: id.to_string(),
            }
        })?;
    let msgs = txn.open_table(MESSAGES)?;
    let mut messages = Vec::with_capacity(rec.message_count as usize);
    for mid in conversation_message_ids(txn, id.as_u128())? {
        if let Some(m) = get_message(&msgs, mid)? {
            messages.push(message_from(mid, &m)?);
        }
    }
    Ok((
        ConversationWithMessages {
            conversation: conversation_from(id.as_u128(), &rec)?,
            messages,
        },
        rec.namespace,
    ))
}

// ----- writes ----------------------------------------------------------

/// The conversation row `id` as of the write transaction, if it exists.
pub(crate) fn get_for_update(
    txn: &WriteTransaction,
    id: u128,
) -> Result<Option<ConversationRecord>> {
    get_conversation(&txn.open_table(CONVERSATIONS)?, id)
}

/// The conversation row `id` as of the write transaction, or `NotFound`.
pub(crate) fn require_for_update(txn: &WriteTransaction, id: u128) -> Result<ConversationRecord> {
    get_for_update(txn, id)?.ok_or_else(|| not_found(id))
}

/// Inserts the index rows of conversation `id` and counts it in its
/// namespace (a new row, or the migration filling the indexes).
pub(crate) fn index(txn: &WriteTransaction, id: u128, rec: &ConversationRecord) -> Result<()> {
    let ns = rec.namespace;
    txn.open_table(CONV_BY_UPDATED)?
        .insert((ns, rec.updated_at, id), ())?;
    txn.open_table(CONV_BY_FOLDER)?
        .insert((ns, rec.folder.as_str(), id), ())?;
    txn.open_table(CONV_BY_LABEL)?
        .insert((ns, rec.label.as_str(), id), ())?;
    txn.open_table(CONV_BY_STATUS)?
        .insert((ns, rec.status, id), ())?;
    txn.open_table(CONV_BY_IMPORTANCE)?
        .insert((ns, rec.importance, id), ())?;
    namespaces::add_to_count(txn, ns, 1)
}

/// Removes the index rows of conversation `id` and uncounts it.
fn unindex(txn: &WriteTransaction, id: u128, rec: &ConversationRecord) -> Result<()> {
    let ns = rec.namespace;
    txn.open_table(CONV_BY_UPDATED)?
        .remove((ns, rec.updated_at, id))?;
    txn.open_table(CONV_BY_FOLDER)?
        .remove((ns, rec.folder.as_str(), id))?;
    txn.open_table(CONV_BY_LABEL)?
        .remove((ns, rec.label.as_str(), id))?;
    txn.open_table(CONV_BY_STATUS)?
        .remove((ns, rec.status, id))?;
    txn.open_table(CONV_BY_IMPORTANCE)?
        .remove((ns, rec.importance, id))?;
    namespaces::add_to_count(txn, ns, -1)
}

/// Writes a conversation row and keeps its secondary indexes in step with
/// `old` (the previous row, if any). When a scope field (label, folder,
/// status, importance) of an existing row changes, records
/// `Op::PutConversation` so the derived indexes re-scope its messages. A
/// conversation never changes namespace.
pub(crate) fn put(
    txn: &WriteTransaction,
    ops: &mut OpBatch,
    id: u128,
    rec: &ConversationRecord,
    old: Option<&ConversationRecord>,
) -> Result<()> {
    ops.changed.conversations.push(id);
    txn.open_table(CONVERSATIONS)?
        .insert(id, rec.encode().as_slice())?;
    let Some(old) = old else {
        return index(txn, id, rec);
    };
    if old.namespace != rec.namespace {
        return Err(Error::invalid(
            "namespace",
            "a conversation cannot move to another namespace",
        ));
    }
    let ns = rec.namespace;
    if old.updated_at != rec.updated_at {
        let mut t = txn.open_table(CONV_BY_UPDATED)?;
        t.remove((ns, old.updated_at, id))?;
        t.insert((ns, rec.updated_at, id), ())?;
    }
    if old.folder != rec.folder {
        let mut t = txn.open_table(CONV_BY_FOLDER)?;
        t.remove((ns, old.folder.as_str(), id))?;
        t.insert((ns, rec.folder.as_str(), id), ())?;
    }
    if old.label != rec.label {
        let mut t = txn.open_table(CONV_BY_LABEL)?;
        t.remove((ns, old.label.as_str(), id))?;
        t.insert((ns, rec.label.as_str(), id), ())?;
    }
    if old.status != rec.status {
        let mut t = txn.open_table(CONV_BY_STATUS)?;
        t.remove((ns, old.status, id))?;
        t.insert((ns, rec.status, id), ())?;
    }
    if old.importance != rec.importance {
        let mut t = txn.open_table(CONV_BY_IMPORTANCE)?;
        t.remove((ns, old.importance, id))?;
        t.insert((ns, rec.importance, id), ())?;
    }
    let scope_changed = rec.label != old.label
        || rec.folder != old.folder
        || rec.status != old.status
        || rec.importance != old.importance;
    if scope_changed {
        ops.push(Op::PutConversation(id.to_le_bytes()));
    }
    Ok(())
}

/// Removes a conversation, its index rows, its summaries and all of its
/// messages, and records `Op::DeleteConversation`; returns the removed
/// message ids (the caller removes their vectors).
pub(crate) fn delete(
    txn: &WriteTransaction,
    ops: &mut OpBatch,
    id: u128,
    rec: &ConversationRecord,
) -> Result<Vec<u128>> {
    ops.changed.removed.push(id);
    txn.open_table(CONVERSATIONS)?.remove(id)?;
    unindex(txn, id, rec)?;
    let mut conv_messages = txn.open_table(CONV_MESSAGES)?;
    let mut messages = txn.open_table(MESSAGES)?;
    let mut removed = Vec::new();
    for row in
        conv_messages.extract_from_if((id, i64::MIN, 0)..=(id, i64::MAX, u32::MAX), |_, _| true)?
    {
        let (_, msg) = row?;
        let msg = msg.value();
        messages.remove(msg)?;
        removed.push(msg);
    }
    txn.open_table(SUMMARIES)?.retain_in(
        (id, 0u8, i64::MIN, 0u128)..=(id, u8::MAX, i64::MAX, u128::MAX),
        |_, _| false,
    )?;
    ops.push(Op::DeleteConversation(id.to_le_bytes()));
    Ok(removed)
}

/// The two tables a message insert writes, opened once for a batch of
/// inserts in one write transaction.
pub(crate) struct MessageTables<'txn> {
    messages: Table<'txn, u128, &'static [u8]>,
    conv_messages: Table<'txn, (u128, i64, u32), u128>,
}

impl<'txn> MessageTables<'txn> {
    pub(crate) fn open(txn: &'txn WriteTransaction) -> Result<Self> {
        Ok(MessageTables {
            messages: txn.open_table(MESSAGES)?,
            conv_messages: txn.open_table(CONV_MESSAGES)?,
        })
    }

    /// Inserts a new message row and its per-conversation index row, and
    /// records `Op::InsertMessage`. An id that already exists is
    /// `Error::Conflict`; the row has been overwritten in the transaction by
    /// then, so the caller must abort it (returning the error from
    /// [`crate::store::Store::write`]'s closure drops the transaction uncommitted).
    pub(crate) fn insert(
        &mut self,
        ops: &mut OpBatch,
        id: u128,
        rec: &MessageRecord,
    ) -> Result<()> {
        if self.messages.insert(id, rec.encode().as_slice())?.is_some() {
            return Err(Error::Conflict(format!(
                "message {} already exists",
                Uuid::from_u128(id)
            )));
        }
        let conv = u128::from_le_bytes(rec.conversation_id);
        self.conv_messages
            .insert((conv, rec.timestamp, rec.seq), id)?;
        ops.push(Op::InsertMessage(id.to_le_bytes()));
        Ok(())
    }
}

/// The ids of the turns just before and just after message `m` in its
/// conversation ((timestamp, seq) order), each when asked for and present:
/// two index lookups, whatever the conversation's length.
pub(crate) fn neighbour_ids(
    conv_messages: &impl ReadableTable<(u128, i64, u32), u128>,
    m: &MessageRecord,
    previous: bool,
    next: bool,
) -> Result<(Option<u128>, Option<u128>)> {
    let (before, after) = turns_around(conv_messages, m, usize::from(previous), usize::from(next))?;
    Ok((before.first().copied(), after.first().copied()))
}

/// The ids of up to `before` turns before message `m` and `after` turns
/// after it in its conversation ((timestamp, seq) order), nearest first.
fn turns_around(
    conv_messages: &impl ReadableTable<(u128, i64, u32), u128>,
    m: &MessageRecord,
    before: usize,
    after: usize,
) -> Result<(Vec<u128>, Vec<u128>)> {
    let conv = u128::from_le_bytes(m.conversation_id);
    let at = (conv, m.timestamp, m.seq);
    let mut out = (Vec::new(), Vec::new());
    if before > 0 {
        for row in conv_messages
            .range((conv, i64::MIN, 0)..at)?
            .rev()
            .take(before)
        {
            out.0.push(row?.1.value());
        }
    }
    if after > 0 {
        // The first row of the range is `m` itself.
        for row in conv_messages
            .range(at..=(conv, i64::MAX, u32::MAX))?
            .skip(1)
            .take(after)
        {
            out.1.push(row?.1.value());
        }
    }
    Ok(out)
}

/// Message id → (the turns before it, the turns after it) in its
/// conversation, nearest first, at most the `reach` asked for on each side.
pub(crate) type NeighbourTurns = HashMap<u128, (Vec<u128>, Vec<u128>)>;

/// For each message of `ids` that still exists: up to `reach` turns before
/// and after it in its conversation, nearest first ([`turns_around`]), from
/// one snapshot.
pub(crate) fn neighbour_turns(
    txn: &ReadTransaction,
    ids: &[u128],
    reach: usize,
) -> Result<NeighbourTurns> {
    let messages = txn.open_table(MESSAGES)?;
    let conv_messages = txn.open_table(CONV_MESSAGES)?;
    let mut out = HashMap::with_capacity(ids.len());
    for &id in ids {
        if let Some(m) = get_message(&messages, id)? {
            out.insert(id, turns_around(&conv_messages, &m, reach, reach)?);
        }
    }
    Ok(out)
}

/// Message ids of a conversation in (timestamp, seq) order.
pub(crate) fn conversation_message_ids(txn: &ReadTransaction, conv: u128) -> Result<Vec<u128>> {
    let table = txn.open_table(CONV_MESSAGES)?;
    let mut out = Vec::new();
    for row in table.range((conv, i64::MIN, 0)..=(conv, i64::MAX, u32::MAX))? {
        out.push(row?.1.value());
    }
    Ok(out)
}

// ----- summaries -------------------------------------------------------

/// Stores a summary of conversation `conv` (which must exist) and records
/// `Op::PutSummary`.
pub(crate) fn put_summary(
    txn: &WriteTransaction,
    ops: &mut OpBatch,
    conv: u128,
    id: u128,
    rec: &SummaryRecord,
) -> Result<()> {
    require_for_update(txn, conv)?;
    txn.open_table(SUMMARIES)?.insert(
        (conv, rec.level, rec.generated_at, id),
        rec.encode().as_slice(),
    )?;
    ops.push(Op::PutSummary(conv.to_le_bytes()));
    Ok(())
}

/// Summaries of conversation `conv` with level in `levels` and generation
/// time in `[since, until]`, in key order (level, then time, then id):
/// `(summary id, record)`.
pub(crate) fn summaries(
    txn: &ReadTransaction,
    conv: u128,
    levels: std::ops::RangeInclusive<u8>,
    since: i64,
    until: i64,
) -> Result<Vec<(u128, SummaryRecord)>> {
    let t = txn.open_table(SUMMARIES)?;
    let mut out = Vec::new();
    for row in
        t.range((conv, *levels.start(), since, 0u128)..=(conv, *levels.end(), until, u128::MAX))?
    {
        let (k, v) = row?;
        out.push((k.value().3, SummaryRecord::decode(v.value())?));
    }
    Ok(out)
}
