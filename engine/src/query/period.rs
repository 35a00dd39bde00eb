//! The searched history's timeline, for the period a question names
//! (SPEC.md §18.3, "Named periods"): the scope's latest date, against which
//! a relative period ("yesterday") is read, and the conversations dated in
//! the period, searched on their own, so that a question such as "What
//! errands did Zara run on 8 May 2018?" reaches that day's turns even when
//! the whole store's best matches for its words lie elsewhere; and the
//! boost of the fused candidates dated inside the period.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDate;
use uuid::Uuid;

use super::Query;
use super::Ranking;
use super::fusion::sort_fused;
use crate::error::Result;
use crate::model::types::{Filter, Message, ScoreExplain};
use crate::store::conversations::ConversationsView;
use crate::store::rows::RowReader;
use crate::util::dates::{Period, metadata_date};

/// Most conversations in scope whose dates are read for a period: each
/// costs two message reads, so a wider scope skips the stage (the period
/// boost still applies to the ordinary candidates). A store holding more
/// conversations is only listed through a folder-only or label-only
/// filter, whose index keys are the scope.
pub(crate) const MAX_PERIOD_SCOPE: usize = 2_000;

/// The date of message `m` for a period a question names: its metadata's
/// ([`metadata_date`]), else its conversation's metadata's, else its
/// timestamp's day (UTC). `conversations` keeps each conversation's
/// metadata date once read (one search reads many turns of one session).
fn message_date(
    rows: &RowReader<'_>,
    conversations: &mut HashMap<u128, Option<NaiveDate>>,
    m: &Message,
) -> Result<NaiveDate> {
    if let Some(d) = metadata_date(&m.metadata) {
        return Ok(d);
    }
    let cid = m.conversation_id.as_u128();
    let from_conversation = match conversations.get(&cid) {
        Some(d) => *d,
        None => {
            let d = rows.conversation(cid)?.and_then(|c| {
                serde_json::from_str::<serde_json::Value>(&c.metadata_json)
                    .ok()
                    .and_then(|meta| metadata_date(&meta))
            });
            conversations.insert(cid, d);
            d
        }
    };
    Ok(from_conversation.unwrap_or_else(|| m.timestamp.date_naive()))
}

/// The first and last message dates ([`message_date`]) of each dated
/// conversation in a search's scope: the searched history's own timeline.
pub(crate) struct ScopeDates {
    spans: Vec<(u128, NaiveDate, NaiveDate)>,
    /// Conversations in scope, dated or not.
    scope: usize,
}

impl ScopeDates {
    /// The latest date of the scope: the "today" a relative period
    /// ("yesterday", "last week") is read against.
    pub(crate) fn latest(&self) -> Option<NaiveDate> {
        self.spans.iter().map(|s| s.2).max()
    }

    /// The conversations whose first-to-last dates meet `period`; `None`
    /// when every conversation in scope does (searching them again would
    /// add nothing).
    pub(crate) fn meeting(&self, period: &Period) -> Option<Vec<Uuid>> {
        let inside: Vec<Uuid> = self
            .spans
            .iter()
            .filter(|(_, first, last)| *first < period.end && period.start <= *last)
            .map(|s| Uuid::from_u128(s.0))
            .collect();
        (inside.len() < self.scope).then_some(inside)
    }
}

impl Query<'_> {
    /// The dates of the conversations `filter` (and `conversation`, when
    /// given) selects; `None` when the scope holds more than
    /// [`MAX_PERIOD_SCOPE`] conversations.
    pub(crate) fn scope_dates(
        &self,
        filter: &Filter,
        conversation: Option<Uuid>,
    ) -> Result<Option<ScopeDates>> {
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
        let mut conversations = HashMap::new();
        let mut date_of = |id: Option<u128>| -> Result<Option<NaiveDate>> {
            Ok(match id {
                Some(id) => match rows.message(id)? {
                    Some(m) => Some(message_date(&rows, &mut conversations, &m)?),
                    None => None,
                },
                None => None,
            })
        };
        let mut spans = Vec::with_capacity(scope.len());
        for &cid in &scope {
            if let (Some(a), Some(b)) = (
                date_of(view.first_message(cid)?)?,
                date_of(view.last_message(cid)?)?,
            ) {
                spans.push((cid, a.min(b), a.max(b)));
            }
        }
        Ok(Some(ScopeDates {
            spans,
            scope: scope.len(),
        }))
    }
}

/// What hybrid search adds to the fused score of a candidate dated inside
/// the period the question names (SPEC.md §18): relative-score fusion
/// scores lie in `0..=keyword + semantic weight` (1.5 by default, 1.6 for
/// a question), so a dated candidate overtakes an undated one that is up
/// to this much better on the text.
pub const PERIOD_BOOST: f32 = 0.5;

/// Fused candidates read for their date when the question names a period.
const PERIOD_DEPTH: usize = 200;

/// A date every relative form resolves against, to ask whether the query
/// has one before the candidates' own timeline is known.
pub(super) fn probe_anchor() -> NaiveDate {
    NaiveDate::from_ymd_opt(2000, 6, 15).unwrap_or_default()
}

impl Query<'_> {
    /// The relative period ("last month") `query` names, resolved against
    /// the latest date among the candidates of both rankings: the fallback
    /// when the scope is too wide to read its own latest date
    /// ([`ScopeDates`]); `None` when it names none or no candidate
    /// is dated. A message's date is [`message_date`].
    pub(super) fn relative_period(
        &self,
        query: &str,
        keyword: &Ranking,
        semantic: &Ranking,
    ) -> Result<Option<crate::util::dates::Period>> {
        let mut seen = HashSet::new();
        let ids: Ranking = keyword
            .iter()
            .chain(semantic)
            .filter(|(id, _)| seen.insert(*id))
            .copied()
            .collect();
        let latest = self.event_dates(&ids)?.into_values().max();
        Ok(latest.and_then(|d| crate::util::dates::query_period(query, Some(d))))
    }

    /// The date ([`message_date`]) of each message of `ids` that still
    /// exists.
    pub(super) fn event_dates(&self, ids: &Ranking) -> Result<HashMap<u128, NaiveDate>> {
        let rows = self.row_reader();
        let mut conversations = HashMap::new();
        let mut out = HashMap::with_capacity(ids.len());
        for &(id, _) in ids {
            if let Some(m) = rows.message(id)? {
                out.insert(id, message_date(&rows, &mut conversations, &m)?);
            }
        }
        Ok(out)
    }

    /// Adds [`PERIOD_BOOST`] to the fused candidates (the first
    /// [`PERIOD_DEPTH`]) dated inside `period`, the period the query names
    /// (an absolute one, or a relative one [`Self::relative_period`]
    /// resolved). A message's date is [`message_date`].
    pub(super) fn favour_period(
        &self,
        fused: &mut [(u128, f32, ScoreExplain)],
        period: crate::util::dates::Period,
    ) -> Result<()> {
        let ids: Ranking = fused
            .iter()
            .take(PERIOD_DEPTH)
            .map(|(id, s, _)| (*id, *s))
            .collect();
        let dates = self.event_dates(&ids)?;
        let mut moved = false;
        for (id, f, e) in fused.iter_mut().take(PERIOD_DEPTH) {
            let inside = dates
                .get(id)
                .is_some_and(|d| period.start <= *d && *d < period.end);
            e.period_boost = Some(if inside { PERIOD_BOOST } else { 0.0 });
            if inside {
                *f += PERIOD_BOOST;
                e.fused = Some(*f);
                moved = true;
            }
        }
        if moved {
            sort_fused(fused);
        }
        Ok(())
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
