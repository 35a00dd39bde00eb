//! Vector spaces and vectors in redb (SPEC.md §3, §9): the `vector_spaces`
//! registry with the `next_vector_space_id` META key, the `vectors` rows
//! (their byte layout is `memdb_format::encode_vector`, SPEC.md §4.1), the
//! `vector_tombstones`, and the snapshot reads a vector filter resolves to
//! (a conversation row, its messages in a time window). The HNSW index in `vector/` is derived from
//! these rows; it reads and writes them only through this module.

use memdb_format::{ConversationRecord, Op, SpaceRecord, encode_vector};
use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, WriteTransaction};

use crate::error::{Error, Result};
use crate::model::types::Message;
use crate::store::embed_queue::{self, QueueWriter};
use crate::store::{
    CONV_MESSAGES, CONVERSATIONS, MESSAGES, META, OpBatch, VECTOR_SPACES, VECTOR_TOMBSTONES,
    VECTORS,
};
use crate::util::idhash::IdSet;

/// META key: the id the next vector space gets.
const NEXT_SPACE_ID: &str = "next_vector_space_id";

/// Decodes a stored vector of dimension `dim` (`memdb_format::decode_vector`),
/// a failure naming the vector.
fn decode(bytes: &[u8], dim: u32) -> Result<Vec<f32>> {
    memdb_format::decode_vector(bytes, dim).map_err(|e| Error::Corrupted {
        what: "vector".into(),
        reason: e.to_string(),
    })
}

fn get_space(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    name: &str,
) -> Result<Option<SpaceRecord>> {
    match table.get(name)? {
        Some(v) => Ok(Some(SpaceRecord::decode(v.value())?)),
        None => Ok(None),
    }
}

/// The space called `name`, as of a snapshot.
pub(crate) fn space(txn: &ReadTransaction, name: &str) -> Result<Option<SpaceRecord>> {
    get_space(&txn.open_table(VECTOR_SPACES)?, name)
}

/// The space called `name`, inside a write transaction.
pub(crate) fn space_for_write(txn: &WriteTransaction, name: &str) -> Result<Option<SpaceRecord>> {
    get_space(&txn.open_table(VECTOR_SPACES)?, name)
}

/// Every space with its name, in name order.
pub(crate) fn spaces(txn: &ReadTransaction) -> Result<Vec<(String, SpaceRecord)>> {
    let t = txn.open_table(VECTOR_SPACES)?;
    let mut out = Vec::new();
    for row in t.iter()? {
        let (k, v) = row?;
        out.push((k.value().to_string(), SpaceRecord::decode(v.value())?));
    }
    Ok(out)
}

/// The space whose id is `id`, with its name.
pub(crate) fn space_by_id(txn: &ReadTransaction, id: u32) -> Result<Option<(String, SpaceRecord)>> {
    space_in(&txn.open_table(VECTOR_SPACES)?, id)
}

/// [`space_by_id`] inside a write.
pub(crate) fn space_by_id_in_write(
    txn: &WriteTransaction,
    id: u32,
) -> Result<Option<(String, SpaceRecord)>> {
    space_in(&txn.open_table(VECTOR_SPACES)?, id)
}

fn space_in(
    t: &impl ReadableTable<&'static str, &'static [u8]>,
    id: u32,
) -> Result<Option<(String, SpaceRecord)>> {
    for row in t.iter()? {
        let (k, v) = row?;
        let rec = SpaceRecord::decode(v.value())?;
        if rec.id == id {
            return Ok(Some((k.value().to_string(), rec)));
        }
    }
    Ok(None)
}

/// The id for a new space, taken from META `next_vector_space_id` (which
/// moves past it). Ids only grow, also across deleted spaces, so oplog
/// entries and files of a deleted space never meet a new one.
pub(crate) fn allocate_space_id(txn: &WriteTransaction) -> Result<u32> {
    let t = txn.open_table(VECTOR_SPACES)?;
    let mut meta = txn.open_table(META)?;
    let mut next_id = meta.get(NEXT_SPACE_ID)?.map_or(1, |v| v.value() as u32);
    for row in t.iter()? {
        next_id = next_id.max(SpaceRecord::decode(row?.1.value())?.id + 1);
    }
    meta.insert(NEXT_SPACE_ID, u64::from(next_id) + 1)?;
    Ok(next_id)
}

/// Writes the registry row of space `name`.
pub(crate) fn put_space(txn: &WriteTransaction, name: &str, rec: &SpaceRecord) -> Result<()> {
    txn.open_table(VECTOR_SPACES)?
        .insert(name, rec.encode().as_slice())?;
    Ok(())
}

/// Records a new generation of space `name` (`rec` carries its number and
/// LSN) and drops the tombstones it covers (those at or below its LSN).
pub(crate) fn record_generation(
    txn: &WriteTransaction,
    name: &str,
    rec: &SpaceRecord,
) -> Result<()> {
    put_space(txn, name, rec)?;
    let mut tombs = txn.open_table(VECTOR_TOMBSTONES)?;
    let id = rec.id;
    let lsn = rec.generation_lsn;
    tombs.retain_in((id, 0u128)..=(id, u128::MAX), |_, at| at > lsn)?;
    Ok(())
}

/// Removes space `name` (id `id`) with its vectors, tombstones and
/// embedding-queue entries; returns the vectors removed. The META pointers
/// to message spaces are the caller's (`embed_queue::forget_message_space`).
pub(crate) fn delete_space(txn: &WriteTransaction, name: &str, id: u32) -> Result<u64> {
    txn.open_table(VECTOR_SPACES)?.remove(name)?;
    let range = (id, 0u128)..=(id, u128::MAX);
    let mut n = 0u64;
    txn.open_table(VECTORS)?.retain_in(range.clone(), |_, _| {
        n += 1;
        false
    })?;
    txn.open_table(VECTOR_TOMBSTONES)?
        .retain_in(range, |_, _| false)?;
    embed_queue::clear_space(txn, id)?;
    Ok(n)
}

/// The records of space `space` whose copy in the current generation is
/// stale.
pub(crate) fn tombstones(txn: &ReadTransaction, space: u32) -> Result<Vec<u128>> {
    let t = txn.open_table(VECTOR_TOMBSTONES)?;
    let mut out = Vec::new();
    for row in t.range((space, 0u128)..=(space, u128::MAX))? {
        out.push(row?.0.value().1);
    }
    Ok(out)
}

/// Writes vectors (already checked against the space) into space `space_id`
/// inside `txn`, with tombstones for replaced copies and one `PutVector` op
/// each.
pub(crate) fn put_vectors<'a>(
    txn: &WriteTransaction,
    space_id: u32,
    items: impl IntoIterator<Item = (u128, &'a Vec<f32>)>,
    ops: &mut OpBatch,
) -> Result<()> {
    let mut vectors = txn.open_table(VECTORS)?;
    let mut tombs = txn.open_table(VECTOR_TOMBSTONES)?;
    for (id, v) in items {
        let old = vectors.insert((space_id, id), encode_vector(v).as_slice())?;
        if old.is_some() {
            // The copy in the current generation (if any) is stale.
            tombs.insert((space_id, id), ops.lsn())?;
        }
        ops.push(Op::PutVector(space_id, id.to_le_bytes()));
    }
    Ok(())
}

/// Sets record `parent`'s vector in space `sum` to the normalized sum of
/// its children's vectors in the spaces `children` (dimension `dim`), or
/// removes it when no child has one (or they cancel out). Rewritten only
/// when it changed. The vector-sum rule of SPEC.md §13, "Vector-sum rule".
pub(crate) fn refresh_sum(
    txn: &WriteTransaction,
    children: &[u32],
    sum: u32,
    dim: u32,
    parent: u128,
    ops: &mut OpBatch,
) -> Result<()> {
    let kids = super::records::children_for_write(txn, parent)?;
    let mut total = crate::model::metric::VectorSum::new(dim as usize);
    let current = {
        let vectors = txn.open_table(VECTORS)?;
        for c in kids {
            for &space in children {
                if let Some(v) = vectors.get((space, c))? {
                    total.add(&decode(v.value(), dim)?);
                }
            }
        }
        match vectors.get((sum, parent))? {
            Some(v) => Some(decode(v.value(), dim)?),
            None => None,
        }
    };
    // No child vector leaves the sum zero, which has no unit length.
    let Some(v) = total.normalized() else {
        delete_vector(txn, sum, parent, ops)?;
        return Ok(());
    };
    if current.as_ref() != Some(&v) {
        put_vectors(txn, sum, [(parent, &v)], ops)?;
    }
    Ok(())
}

/// Removes record `id`'s vector from space `space`, with a tombstone and a
/// `DeleteVector` op; returns whether it existed.
pub(crate) fn delete_vector(
    txn: &WriteTransaction,
    space: u32,
    id: u128,
    ops: &mut OpBatch,
) -> Result<bool> {
    let existed = txn.open_table(VECTORS)?.remove((space, id))?.is_some();
    if existed {
        txn.open_table(VECTOR_TOMBSTONES)?
            .insert((space, id), ops.lsn())?;
        ops.push(Op::DeleteVector(space, id.to_le_bytes()));
    }
    Ok(existed)
}

/// Removes the vectors of `records` from every space, recording tombstones
/// and ops, and their embedding-queue entries. Used by the
/// conversation-delete cascade.
pub(crate) fn delete_record_vectors(
    txn: &WriteTransaction,
    records: &[u128],
    ops: &mut OpBatch,
) -> Result<()> {
    let spaces: Vec<u32> = {
        let t = txn.open_table(VECTOR_SPACES)?;
        let mut ids = Vec::new();
        for row in t.iter()? {
            ids.push(SpaceRecord::decode(row?.1.value())?.id);
        }
        ids
    };
    if spaces.is_empty() {
        return Ok(());
    }
    let mut vectors = txn.open_table(VECTORS)?;
    let mut tombs = txn.open_table(VECTOR_TOMBSTONES)?;
    let mut queue = QueueWriter::open(txn)?;
    for &space in &spaces {
        for &r in records {
            if vectors.remove((space, r))?.is_some() {
                tombs.insert((space, r), ops.lsn())?;
                ops.push(Op::DeleteVector(space, r.to_le_bytes()));
            }
            queue.remove(space, r)?;
        }
    }
    Ok(())
}

/// Sets each message's `embedding_id` from the active message space
/// (SPEC.md §11): the message id, as Sekha names a message's Chroma
/// vector, when the message has a vector there; `None` while it is queued
/// or when the store has no embedder. Derived on read, so it never goes
/// stale when the worker embeds, a rebuild switches spaces or a message is
/// edited.
pub(crate) fn fill_embedding_ids(txn: &ReadTransaction, messages: &mut [Message]) -> Result<()> {
    let Some(space) = embed_queue::message_space(txn, embed_queue::MessageSpace::Active)? else {
        for m in messages.iter_mut() {
            m.embedding_id = None;
        }
        return Ok(());
    };
    let vectors = txn.open_table(VECTORS)?;
    for m in messages.iter_mut() {
        m.embedding_id = match vectors.get((space, m.id.as_u128()))? {
            Some(_) => Some(m.id.to_string()),
            None => None,
        };
    }
    Ok(())
}

/// The conversation `id` with its messages, oldest first, and their
/// `embedding_id`s ([`fill_embedding_ids`]), from one snapshot; with the
/// conversation's namespace id.
pub(crate) fn conversation_with_messages_in(
    txn: &ReadTransaction,
    id: uuid::Uuid,
) -> Result<(crate::model::types::ConversationWithMessages, u32)> {
    let (mut found, namespace) =
        crate::store::conversations::conversation_and_messages_in(txn, id)?;
    fill_embedding_ids(txn, &mut found.messages)?;
    Ok((found, namespace))
}

/// The `vectors` table of one snapshot, opened once for many reads (opening
/// a table is a B-tree lookup): point reads, a space's scan and count.
pub(crate) struct VectorRows {
    vectors: ReadOnlyTable<(u32, u128), &'static [u8]>,
}

impl VectorRows {
    pub(crate) fn open(txn: &ReadTransaction) -> Result<VectorRows> {
        Ok(VectorRows {
            vectors: txn.open_table(VECTORS)?,
        })
    }

    /// The vector of record `id` in space `space` (dimension `dim`).
    pub(crate) fn get(&self, space: u32, id: u128, dim: u32) -> Result<Option<Vec<f32>>> {
        match self.vectors.get((space, id))? {
            Some(v) => Ok(Some(decode(v.value(), dim)?)),
            None => Ok(None),
        }
    }

    /// Visits every vector of space `space` (dimension `dim`) in record-id
    /// order.
    pub(crate) fn scan(
        &self,
        space: u32,
        dim: u32,
        mut visit: impl FnMut(u128, Vec<f32>) -> Result<()>,
    ) -> Result<()> {
        for row in self.vectors.range((space, 0u128)..=(space, u128::MAX))? {
            let (k, v) = row?;
            visit(k.value().1, decode(v.value(), dim)?)?;
        }
        Ok(())
    }

    /// The record ids of every vector of space `space`, in id order.
    pub(crate) fn ids(&self, space: u32) -> Result<Vec<u128>> {
        let mut out = Vec::new();
        for row in self.vectors.range((space, 0u128)..=(space, u128::MAX))? {
            out.push(row?.0.value().1);
        }
        Ok(out)
    }

    /// The number of vectors in space `space`.
    pub(crate) fn count(&self, space: u32) -> Result<u64> {
        let mut count = 0;
        for row in self.vectors.range((space, 0u128)..=(space, u128::MAX))? {
            row?;
            count += 1;
        }
        Ok(count)
    }
}

/// The conversation and message tables of one snapshot, opened once for
/// resolving a vector filter to message ids.
pub(crate) struct FilterRows {
    conversations: ReadOnlyTable<u128, &'static [u8]>,
    conv_messages: ReadOnlyTable<(u128, i64, u32), u128>,
    messages: ReadOnlyTable<u128, &'static [u8]>,
}

impl FilterRows {
    pub(crate) fn open(txn: &ReadTransaction) -> Result<FilterRows> {
        Ok(FilterRows {
            conversations: txn.open_table(CONVERSATIONS)?,
            conv_messages: txn.open_table(CONV_MESSAGES)?,
            messages: txn.open_table(MESSAGES)?,
        })
    }

    /// The conversation row `id`, if it exists.
    pub(crate) fn conversation(&self, id: u128) -> Result<Option<ConversationRecord>> {
        crate::store::conversations::get_conversation(&self.conversations, id)
    }

    /// Every (message, conversation) pair of the store, in index order
    /// (conversation, time): one scan of `conv_messages`, for the
    /// conversation postings of a vector generation (`vector/postings.rs`).
    pub(crate) fn message_conversations(&self) -> Result<Vec<(u128, u128)>> {
        let mut out = Vec::new();
        for row in self.conv_messages.iter()? {
            let (k, v) = row?;
            out.push((v.value(), k.value().0));
        }
        Ok(out)
    }

    /// The conversation of message `id`, if it is a message of this
    /// snapshot.
    pub(crate) fn conversation_of(&self, id: u128) -> Result<Option<u128>> {
        Ok(
            crate::store::conversations::get_message(&self.messages, id)?
                .map(|m| u128::from_le_bytes(m.conversation_id)),
        )
    }

    /// Adds to `out` the messages of conversation `conv` with a timestamp in
    /// `lo..hi` (µs) and, if given, role `role`.
    pub(crate) fn collect_messages(
        &self,
        conv: u128,
        lo: i64,
        hi: i64,
        role: Option<&str>,
        out: &mut IdSet,
    ) -> Result<()> {
        if hi == i64::MIN {
            return Ok(());
        }
        for row in self.conv_messages.range((conv, lo, 0)..(conv, hi, 0))? {
            let id = row?.1.value();
            if let Some(role) = role {
                let keep = crate::store::conversations::get_message(&self.messages, id)?
                    .is_some_and(|m| m.role == role);
                if !keep {
                    continue;
                }
            }
            out.insert(id);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_vector_row_is_a_corrupted_vector_error() {
        let bytes = encode_vector(&[1.0, -2.5]);
        assert_eq!(decode(&bytes, 2).unwrap(), vec![1.0, -2.5]);
        match decode(&bytes, 3) {
            Err(Error::Corrupted { what, reason }) => {
                assert_eq!(what, "vector");
                assert!(reason.contains("truncated"), "{reason}");
            }
            other => panic!("expected Corrupted, got {other:?}"),
        }
        assert!(matches!(decode(&[], 0), Err(Error::Corrupted { .. })));
    }
}
