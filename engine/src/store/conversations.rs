//! Reading conversations and their messages from a snapshot: the filtered
//! scan (newest first, through the best secondary index) and "the messages of
//! a conversation".

use memdb_format::ConversationRecord;
use redb::ReadableTable;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::filter::matches_filter;
use crate::model::records::{conversation_from, message_from};
use crate::model::types::{ConversationWithMessages, Filter, PINNED_IMPORTANCE};
use crate::store;

/// [`Memdb::scan_matching`] over a given snapshot: visits the conversations
/// matching `filter` (normalized), newest `updated_at` first.
pub(crate) fn scan_matching_in(
    txn: &redb::ReadTransaction,
    filter: &Filter,
    mut visit: impl FnMut(u128, &ConversationRecord) -> Result<()>,
) -> Result<()> {
    let convs = txn.open_table(store::CONVERSATIONS)?;
    let candidates: Option<Vec<u128>> = if let Some(label) = &filter.label {
        let t = txn.open_table(store::CONV_BY_LABEL)?;
        let mut ids = Vec::new();
        for row in t.range((label.as_str(), 0u128)..=(label.as_str(), u128::MAX))? {
            ids.push(row?.0.value().1);
        }
        Some(ids)
    } else if let Some(folder) = filter.folder.as_deref().filter(|f| *f != "/") {
        let t = txn.open_table(store::CONV_BY_FOLDER)?;
        let mut ids = Vec::new();
        for row in t.range((folder, 0u128)..=(folder, u128::MAX))? {
            ids.push(row?.0.value().1);
        }
        let sub = format!("{folder}/");
        let end = format!("{folder}0"); // '0' is the byte after '/'
        for row in t.range((sub.as_str(), 0u128)..(end.as_str(), 0u128))? {
            ids.push(row?.0.value().1);
        }
        Some(ids)
    } else if filter.pinned == Some(true) || filter.min_importance.is_some() {
        let lo = if filter.pinned == Some(true) {
            PINNED_IMPORTANCE
        } else {
            filter.min_importance.unwrap_or(0)
        };
        let t = txn.open_table(store::CONV_BY_IMPORTANCE)?;
        let mut ids = Vec::new();
        for row in t.range((lo, 0u128)..=(u8::MAX, u128::MAX))? {
            ids.push(row?.0.value().1);
        }
        Some(ids)
    } else {
        None
    };
    match candidates {
        Some(ids) => {
            let mut recs = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(rec) = store::get_conversation(&convs, id)?
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
            let by_updated = txn.open_table(store::CONV_BY_UPDATED)?;
            for row in by_updated.iter()?.rev() {
                let (k, _) = row?;
                let (_, id) = k.value();
                if let Some(rec) = store::get_conversation(&convs, id)?
                    && matches_filter(filter, &rec)
                {
                    visit(id, &rec)?;
                }
            }
        }
    }
    Ok(())
}

/// The conversation `id` with its messages, oldest first, from one snapshot.
pub(crate) fn conversation_with_messages_in(
    txn: &redb::ReadTransaction,
    id: Uuid,
) -> Result<ConversationWithMessages> {
    let rec = store::get_conversation(&txn.open_table(store::CONVERSATIONS)?, id.as_u128())?
        .ok_or_else(|| Error::NotFound {
            what: "conversation",
            id: id.to_string(),
        })?;
    let msgs = txn.open_table(store::MESSAGES)?;
    let mut messages = Vec::with_capacity(rec.message_count as usize);
    for mid in store::conversation_message_ids(txn, id.as_u128())? {
        if let Some(m) = store::get_message(&msgs, mid)? {
            messages.push(message_from(mid, &m)?);
        }
    }
    Ok(ConversationWithMessages {
        conversation: conversation_from(id.as_u128(), &rec)?,
        messages,
    })
}
