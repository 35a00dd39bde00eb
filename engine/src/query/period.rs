//! Candidates from inside the period a question names (SPEC.md §18.3,
//! "Named periods"): the conversations dated in it, searched on their own,
//! so that a question such as "What errands did Zara run on 8 May 2018?"
//! reaches that day's turns even when the whole store's best matches for
//! its words lie elsewhere.

use uuid::Uuid;

use crate::db::Memdb;
use crate::error::Result;
use crate::model::types::Filter;
use crate::store::conversations::ConversationsView;
use crate::util::dates::{Period, event_date};

/// Most conversations in scope whose dates are read for a period: each
/// costs two message reads, so a wider scope skips the stage (the period
/// boost still applies to the ordinary candidates). A store holding more
/// conversations is only listed through a folder-only or label-only
/// filter, whose index keys are the scope.
pub(crate) const MAX_PERIOD_SCOPE: usize = 2_000;

impl Memdb {
    /// The conversations `filter` (and `conversation`, when given) selects
    /// whose first-to-last message dates ([`event_date`]) meet `period`;
    /// `None` when the scope holds more than [`MAX_PERIOD_SCOPE`]
    /// conversations, or when every one of them meets it (searching them
    /// again would add nothing).
    pub(crate) fn conversations_in_period(
        &self,
        filter: &Filter,
        conversation: Option<Uuid>,
        period: &Period,
    ) -> Result<Option<Vec<Uuid>>> {
        let (txn, rows) = self.row_snapshot()?;
        let view = ConversationsView::open(&txn)?;
        // Listing the scope must stay cheap: a store small enough, or a
        // filter a folder or label index answers from its keys alone.
        if conversation.is_none()
            && !crate::store::conversations::listed_by_index(filter)
            && view.conversation_count()? > MAX_PERIOD_SCOPE as u64
        {
            return Ok(None);
        }
        let scope = match conversation {
            Some(c) => vec![c.as_u128()],
            None => crate::store::conversations::matching_ids_in(&txn, self.ns_read()?, filter)?,
        };
        if scope.len() > MAX_PERIOD_SCOPE {
            return Ok(None);
        }
        let date_of = |id: Option<u128>| -> Result<Option<chrono::NaiveDate>> {
            Ok(match id {
                Some(id) => rows
                    .message(id)?
                    .map(|m| event_date(&m.metadata, m.timestamp)),
                None => None,
            })
        };
        let mut inside = Vec::new();
        for &cid in &scope {
            let (Some(a), Some(b)) = (
                date_of(view.first_message(cid)?)?,
                date_of(view.last_message(cid)?)?,
            ) else {
                continue;
            };
            let (first, last) = (a.min(b), a.max(b));
            if first < period.end && period.start <= last {
                inside.push(Uuid::from_u128(cid));
            }
        }
        Ok((inside.len() < scope.len()).then_some(inside))
    }
}

/// `base` with `extra`'s entries it lacks, best score first (both lists
/// score the same query the same way, so their scores compare).
pub(crate) fn merge_ranking(base: &mut Vec<(u128, f32)>, extra: Vec<(u128, f32)>) {
    let seen: std::collections::HashSet<u128> = base.iter().map(|x| x.0).collect();
    let before = base.len();
    base.extend(extra.into_iter().filter(|x| !seen.contains(&x.0)));
    if base.len() > before {
        base.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    }
}

#[cfg(test)]
mod tests {
    use super::merge_ranking;

    #[test]
    fn a_merged_ranking_keeps_one_entry_per_id_best_first() {
        let mut base = vec![(1, 0.9), (2, 0.5)];
        merge_ranking(&mut base, vec![(2, 0.5), (3, 0.7), (4, 0.1)]);
        assert_eq!(base, vec![(1, 0.9), (3, 0.7), (2, 0.5), (4, 0.1)]);
        let mut same = vec![(1, 0.9)];
        merge_ranking(&mut same, vec![(1, 0.9)]);
        assert_eq!(same, vec![(1, 0.9)]);
    }
}
