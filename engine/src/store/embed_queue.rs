//! The embedding queue in redb (SPEC.md §10): the `embed_queue` rows
//! `(space, id)` of messages waiting to be embedded into a message space
//! and of generic records waiting to be embedded into their kind's record
//! space (the space names the kind), and the META pointers to the message
//! spaces (`embed_active_space`, the space semantic search reads;
//! `embed_next_space`, the one a rebuild is filling).

use memdb_format::{ItemRecord, MessageRecord};
use redb::{
    ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata, Table, WriteTransaction,
};

use crate::embed::Passage;
use crate::error::Result;
use crate::store::records::RECORDS;
use crate::store::{CONV_MESSAGES, EMBED_QUEUE, MESSAGES, META};

/// Which message space a META pointer names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageSpace {
    /// The space semantic search reads (META `embed_active_space`).
    Active,
    /// The space a rebuild is filling, switched to when full (META
    /// `embed_next_space`).
    Next,
}

impl MessageSpace {
    fn key(self) -> &'static str {
        match self {
            MessageSpace::Active => "embed_active_space",
            MessageSpace::Next => "embed_next_space",
        }
    }
}

fn pointer(
    meta: &impl ReadableTable<&'static str, u64>,
    which: MessageSpace,
) -> Result<Option<u32>> {
    Ok(meta
        .get(which.key())?
        .map(|v| v.value() as u32)
        .filter(|id| *id > 0))
}

/// The id of the `which` message space, if there is one.
pub(crate) fn message_space(txn: &ReadTransaction, which: MessageSpace) -> Result<Option<u32>> {
    pointer(&txn.open_table(META)?, which)
}

/// Points `which` at space `id`.
pub(crate) fn set_message_space(
    txn: &WriteTransaction,
    which: MessageSpace,
    id: u32,
) -> Result<()> {
    txn.open_table(META)?.insert(which.key(), u64::from(id))?;
    Ok(())
}

/// Makes the rebuild's space `id` the active message space and clears the
/// rebuild pointer.
pub(crate) fn promote_next(txn: &WriteTransaction, id: u32) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    meta.insert(MessageSpace::Active.key(), u64::from(id))?;
    meta.remove(MessageSpace::Next.key())?;
    Ok(())
}

/// Clears the pointers to space `id` (being deleted).
pub(crate) fn forget_message_space(txn: &WriteTransaction, id: u32) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    for which in [MessageSpace::Active, MessageSpace::Next] {
        if meta.get(which.key())?.map(|v| v.value()) == Some(u64::from(id)) {
            meta.remove(which.key())?;
        }
    }
    Ok(())
}

/// The ids of the message spaces (active, then rebuilding), in a write.
pub(crate) fn message_space_ids(txn: &WriteTransaction) -> Result<Vec<u32>> {
    let meta = txn.open_table(META)?;
    Ok([
        pointer(&meta, MessageSpace::Active)?,
        pointer(&meta, MessageSpace::Next)?,
    ]
    .into_iter()
    .flatten()
    .collect())
}

/// Queues the messages `ids` for every message space (active and
/// rebuilding); reads nothing when `ids` is empty.
pub(crate) fn enqueue_for_message_spaces(
    txn: &WriteTransaction,
    mut ids: impl Iterator<Item = u128>,
) -> Result<()> {
    let Some(first) = ids.next() else {
        return Ok(());
    };
    let targets = message_space_ids(txn)?;
    if targets.is_empty() {
        return Ok(());
    }
    let mut queue = txn.open_table(EMBED_QUEUE)?;
    for id in std::iter::once(first).chain(ids) {
        for &s in &targets {
            queue.insert((s, id), ())?;
        }
    }
    Ok(())
}

/// Queues again the turns whose passage the new messages `ids` changed, for
/// each of `spaces` (id, passage rule): the turn before each new message for
/// a space whose passage reads the turn after (SPEC.md §10.1), the turn
/// after it for one that reads the turn before (the new message was
/// inserted before it); a turn that is itself new is already queued.
pub(crate) fn requeue_neighbour_turns(
    txn: &WriteTransaction,
    spaces: &[(u32, Passage)],
    ids: &[u128],
) -> Result<()> {
    let new: std::collections::HashSet<u128> = ids.iter().copied().collect();
    let want_prev = spaces.iter().any(|(_, p)| p.wants_next());
    let want_next = spaces.iter().any(|(_, p)| p.wants_previous());
    let turns = TurnsInWrite::open(txn)?;
    let mut queue = txn.open_table(EMBED_QUEUE)?;
    for &id in ids {
        let Some((prev, next)) = turns.around(id, want_prev, want_next)? else {
            continue;
        };
        for &(s, passage) in spaces {
            for turn in [
                prev.filter(|_| passage.wants_next()),
                next.filter(|_| passage.wants_previous()),
            ]
            .into_iter()
            .flatten()
            {
                if !new.contains(&turn) {
                    queue.insert((s, turn), ())?;
                }
            }
        }
    }
    Ok(())
}

/// The messages and their conversation order inside a write, opened once
/// for many questions about a message's neighbouring turns.
pub(crate) struct TurnsInWrite<'txn> {
    messages: Table<'txn, u128, &'static [u8]>,
    conv_messages: Table<'txn, (u128, i64, u32), u128>,
}

impl<'txn> TurnsInWrite<'txn> {
    pub(crate) fn open(txn: &'txn WriteTransaction) -> Result<TurnsInWrite<'txn>> {
        Ok(TurnsInWrite {
            messages: txn.open_table(MESSAGES)?,
            conv_messages: txn.open_table(CONV_MESSAGES)?,
        })
    }

    /// The ids of the turns just before and after message `id` in its
    /// conversation, each when asked for and present; `None` when the
    /// message is gone.
    pub(crate) fn around(
        &self,
        id: u128,
        previous: bool,
        next: bool,
    ) -> Result<Option<(Option<u128>, Option<u128>)>> {
        let Some(m) = crate::store::conversations::get_message(&self.messages, id)? else {
            return Ok(None);
        };
        crate::store::conversations::neighbour_ids(&self.conv_messages, &m, previous, next)
            .map(Some)
    }
}

/// Queues the records `ids` for their record space `space`.
pub(crate) fn enqueue(
    txn: &WriteTransaction,
    space: u32,
    ids: impl IntoIterator<Item = u128>,
) -> Result<()> {
    let mut queue = txn.open_table(EMBED_QUEUE)?;
    for id in ids {
        queue.insert((space, id), ())?;
    }
    Ok(())
}

/// Queues every stored message for space `space`.
pub(crate) fn enqueue_all_messages(txn: &WriteTransaction, space: u32) -> Result<()> {
    let mut queue = txn.open_table(EMBED_QUEUE)?;
    let msgs = txn.open_table(MESSAGES)?;
    for row in msgs.iter()? {
        queue.insert((space, row?.0.value()), ())?;
    }
    Ok(())
}

/// Drops every queue entry of space `space`.
pub(crate) fn clear_space(txn: &WriteTransaction, space: u32) -> Result<()> {
    txn.open_table(EMBED_QUEUE)?
        .retain_in((space, 0u128)..=(space, u128::MAX), |_, _| false)?;
    Ok(())
}

/// Queue entries of every space.
pub(crate) fn len(txn: &ReadTransaction) -> Result<u64> {
    Ok(txn.open_table(EMBED_QUEUE)?.len()?)
}

/// The count of `space`'s entries without walking them, when it is the
/// table's length: the table is empty, or its first and last keys (keys
/// sort by space first) are both `space`'s. Otherwise `None`. Keeps the
/// embedding worker's per-pass counts O(log n) when one space is queued
/// (the usual case), however long the backlog.
fn count_if_alone(q: &ReadOnlyTable<(u32, u128), ()>, space: u32) -> Result<Option<u64>> {
    let first = q.first()?.map(|(k, _)| k.value().0);
    let last = q.last()?.map(|(k, _)| k.value().0);
    Ok(match (first, last) {
        (None, _) | (_, None) => Some(0),
        (Some(f), Some(l)) if f == space && l == space => Some(q.len()?),
        _ => None,
    })
}

/// Messages queued for space `space`.
pub(crate) fn queued(txn: &ReadTransaction, space: u32) -> Result<u64> {
    Ok(queued_up_to(txn, space, u64::MAX)?.0)
}

/// Messages queued for space `space`, counted up to `cap`: `(count, true)`
/// means "at least `count`".
pub(crate) fn queued_up_to(txn: &ReadTransaction, space: u32, cap: u64) -> Result<(u64, bool)> {
    let q = txn.open_table(EMBED_QUEUE)?;
    if let Some(n) = count_if_alone(&q, space)? {
        return Ok(if n >= cap && cap > 0 {
            (cap, true)
        } else {
            (n, false)
        });
    }
    let mut n = 0;
    for row in q.range((space, 0u128)..=(space, u128::MAX))? {
        row?;
        n += 1;
        if n == cap {
            return Ok((n, true));
        }
    }
    Ok((n, false))
}

/// A message with its id.
pub(crate) type Turn = (u128, MessageRecord);

/// The queue and the messages of one snapshot, opened once for reading a
/// batch of entries with their messages.
pub(crate) struct QueueReader {
    queue: ReadOnlyTable<(u32, u128), ()>,
    messages: ReadOnlyTable<u128, &'static [u8]>,
    conv_messages: ReadOnlyTable<(u128, i64, u32), u128>,
    records: ReadOnlyTable<u128, &'static [u8]>,
}

impl QueueReader {
    pub(crate) fn open(txn: &ReadTransaction) -> Result<QueueReader> {
        Ok(QueueReader {
            queue: txn.open_table(EMBED_QUEUE)?,
            messages: txn.open_table(MESSAGES)?,
            conv_messages: txn.open_table(CONV_MESSAGES)?,
            records: txn.open_table(RECORDS)?,
        })
    }

    /// The messages queued for space `space`, in id order.
    pub(crate) fn queued(&self, space: u32) -> Result<impl Iterator<Item = Result<u128>> + '_> {
        Ok(self
            .queue
            .range((space, 0u128)..=(space, u128::MAX))?
            .map(|row| Ok(row?.0.value().1)))
    }

    /// The message `id`, if it still exists.
    pub(crate) fn message(&self, id: u128) -> Result<Option<MessageRecord>> {
        crate::store::conversations::get_message(&self.messages, id)
    }

    /// The messages just before and just after `m` in its conversation
    /// (timestamp, then position order), with their ids, each when asked
    /// for and present.
    pub(crate) fn neighbours(
        &self,
        m: &MessageRecord,
        previous: bool,
        next: bool,
    ) -> Result<(Option<Turn>, Option<Turn>)> {
        let (p, n) =
            crate::store::conversations::neighbour_ids(&self.conv_messages, m, previous, next)?;
        let load = |id: Option<u128>| -> Result<Option<Turn>> {
            match id {
                Some(id) => Ok(self.message(id)?.map(|m| (id, m))),
                None => Ok(None),
            }
        };
        Ok((load(p)?, load(n)?))
    }

    /// The generic record `id`, if it still exists.
    pub(crate) fn record(&self, id: u128) -> Result<Option<ItemRecord>> {
        match self.records.get(id)? {
            Some(v) => Ok(Some(ItemRecord::decode(v.value())?)),
            None => Ok(None),
        }
    }
}

/// The queue inside a write transaction, opened once for many removals.
pub(crate) struct QueueWriter<'txn> {
    queue: Table<'txn, (u32, u128), ()>,
}

impl<'txn> QueueWriter<'txn> {
    pub(crate) fn open(txn: &'txn WriteTransaction) -> Result<QueueWriter<'txn>> {
        Ok(QueueWriter {
            queue: txn.open_table(EMBED_QUEUE)?,
        })
    }

    /// Whether `id` is queued for space `space`.
    pub(crate) fn contains(&self, space: u32, id: u128) -> Result<bool> {
        Ok(self.queue.get((space, id))?.is_some())
    }

    /// Removes the entry of message `id` for space `space`; returns whether
    /// it was queued.
    pub(crate) fn remove(&mut self, space: u32, id: u128) -> Result<bool> {
        Ok(self.queue.remove((space, id))?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn per_space_counts_agree_whether_one_space_or_several_are_queued() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("memdb.redb")).unwrap();
        let counts = |space: u32| {
            let txn = store.read().unwrap();
            (
                queued(&txn, space).unwrap(),
                queued_up_to(&txn, space, 3).unwrap(),
            )
        };
        assert_eq!(counts(1), (0, (0, false)));
        let put = |space: u32, ids: std::ops::Range<u128>| {
            store
                .write_volatile(|txn| enqueue(txn, space, ids))
                .unwrap();
        };
        // One space queued: counted from the table's length.
        put(2, 0..5);
        assert_eq!(counts(2), (5, (3, true)));
        assert_eq!(counts(1), (0, (0, false)));
        assert_eq!(counts(3), (0, (0, false)));
        // Spaces on both sides of it: walked.
        put(1, 0..2);
        put(3, 10..11);
        assert_eq!(counts(1), (2, (2, false)));
        assert_eq!(counts(2), (5, (3, true)));
        assert_eq!(counts(3), (1, (1, false)));
        assert_eq!(len(&store.read().unwrap()).unwrap(), 8);
    }
}
