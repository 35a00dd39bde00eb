//! Message and conversation rows read through the row cache: [`RowReader`]
//! serves a hit from memory and reads a miss from one redb snapshot.

use std::sync::Arc;

use memdb_format::ConversationRecord;

use crate::error::Result;
use crate::model::records::message_from;
use crate::model::types::Message;
use crate::store::rowcache::{Epoch, RowCache};
use crate::store::{self, Store, conversations};

/// Message and conversation rows read through the row cache: a hit costs
/// a hash lookup; a miss reads the snapshot and fills the cache. The redb
/// snapshot is opened at the first miss (opening one costs more than a
/// query's worth of hits), unless [`Memdb::row_snapshot`] supplied it.
pub(crate) struct RowReader<'a> {
    pub(crate) cache: &'a RowCache,
    pub(crate) epoch: Epoch,
    pub(crate) store: &'a Store,
    pub(crate) tables: std::cell::OnceCell<RowTables>,
}

pub(crate) struct RowTables {
    msgs: redb::ReadOnlyTable<u128, &'static [u8]>,
    convs: redb::ReadOnlyTable<u128, &'static [u8]>,
}

impl RowTables {
    pub(crate) fn open(txn: &redb::ReadTransaction) -> Result<RowTables> {
        Ok(RowTables {
            msgs: txn.open_table(store::MESSAGES)?,
            convs: txn.open_table(store::CONVERSATIONS)?,
        })
    }
}

impl RowReader<'_> {
    fn tables(&self) -> Result<&RowTables> {
        if let Some(t) = self.tables.get() {
            return Ok(t);
        }
        let opened = RowTables::open(&*self.store.read()?)?;
        Ok(self.tables.get_or_init(|| opened))
    }

    /// The message `id`, if it exists.
    pub(crate) fn message(&self, id: u128) -> Result<Option<Arc<Message>>> {
        if let Some(m) = self.cache.message(id) {
            return Ok(Some(m));
        }
        self.load_message(id)
    }

    /// The message `id` from the snapshot (cached on the way).
    pub(crate) fn load_message(&self, id: u128) -> Result<Option<Arc<Message>>> {
        let Some(rec) = conversations::get_message(&self.tables()?.msgs, id)? else {
            return Ok(None);
        };
        let m = Arc::new(message_from(id, &rec)?);
        self.cache.insert_message(self.epoch, id, m.clone());
        Ok(Some(m))
    }

    /// The conversation row `id`, if it exists.
    pub(crate) fn conversation(&self, id: u128) -> Result<Option<Arc<ConversationRecord>>> {
        if let Some(c) = self.cache.conversation(id) {
            return Ok(Some(c));
        }
        self.load_conversation(id)
    }

    /// The conversation row `id` from the snapshot (cached on the way).
    pub(crate) fn load_conversation(&self, id: u128) -> Result<Option<Arc<ConversationRecord>>> {
        let Some(rec) = conversations::get_conversation(&self.tables()?.convs, id)? else {
            return Ok(None);
        };
        let c = Arc::new(rec);
        self.cache.insert_conversation(self.epoch, id, c.clone());
        Ok(Some(c))
    }
}
