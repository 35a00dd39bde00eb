//! Pruning (SPEC.md §19.3): which conversations to keep, review, archive or
//! delete, by age, importance and inactivity, with the estimated savings;
//! and executing the chosen archive or delete in one transaction.
//!
//! Suggestions are computed from the store alone (no model, no writes) and
//! are deterministic given the request's `now`. Pinned conversations are
//! never suggested for archiving or deletion.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::types::{PINNED_IMPORTANCE, Status};
use crate::sekha::Sekha;
use crate::store::conversations::{self, ConversationsView};
use crate::util::time::{from_micros, now, to_micros};

/// Importance at or above which an old conversation is kept (not reviewed).
pub const KEEP_IMPORTANCE: u8 = 8;
/// Default `threshold_days` (the SDK's default).
pub const DEFAULT_THRESHOLD_DAYS: u32 = 90;
/// Default `importance_threshold` (Sekha's REST value).
pub const DEFAULT_IMPORTANCE_THRESHOLD: f32 = 3.0;
/// Default `inactivity_days`.
pub const DEFAULT_INACTIVITY_DAYS: u32 = 30;
/// Largest accepted day count (100 years).
pub const MAX_DAYS: u32 = 36_500;
/// Most ids one `prune_execute` accepts.
pub const MAX_PRUNE_IDS: usize = 10_000;

fn default_threshold() -> u32 {
    DEFAULT_THRESHOLD_DAYS
}

/// Sekha's `POST /api/v1/prune/dry-run` body (`threshold_days`) plus the MCP
/// tool's `importance_threshold`, an `inactivity_days` and `now`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PruneRequest {
    /// Days without activity after which a conversation is old (0..=36500,
    /// default 90; 0 makes every conversation old).
    #[serde(default = "default_threshold")]
    pub threshold_days: u32,
    /// Importance below which a conversation is low-importance (0..=10, default 3).
    #[serde(default)]
    pub importance_threshold: Option<f32>,
    /// Days without activity after which a not-yet-old conversation is
    /// idle (1..=36500, default 30; at or above `threshold_days` the rule never fires).
    #[serde(default)]
    pub inactivity_days: Option<u32>,
    /// The time ages are measured from (default: now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<DateTime<Utc>>,
    /// Suggestions skipped before the page (default 0).
    #[serde(default)]
    pub offset: usize,
    /// Most suggestions returned, 1..=1000 (default 1000); the counts
    /// cover every suggestion.
    #[serde(default)]
    pub limit: Option<usize>,
}

impl Default for PruneRequest {
    fn default() -> Self {
        PruneRequest {
            threshold_days: DEFAULT_THRESHOLD_DAYS,
            importance_threshold: None,
            inactivity_days: None,
            now: None,
            offset: 0,
            limit: None,
        }
    }
}

/// What to do with a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recommendation {
    /// Remove it and its messages.
    Delete,
    /// Set its status to archived.
    Archive,
    /// A person should look at it.
    Review,
    /// Leave it alone.
    Keep,
}

/// The rule that flagged a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PruneRule {
    /// No activity for `threshold_days` or more.
    Age,
    /// Importance below `importance_threshold`.
    Importance,
    /// No activity for `inactivity_days` or more, but less than `threshold_days`.
    Inactivity,
}

/// One suggestion. Carries the fields of the SDK's `PruningSuggestion`,
/// Sekha's controller and the MCP tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PruneSuggestion {
    /// The conversation.
    pub conversation_id: Uuid,
    /// Its label.
    pub label: String,
    /// Its folder.
    pub folder: String,
    /// Its status.
    pub status: Status,
    /// Last activity: the newest message's timestamp (the conversation's
    /// `updated_at` when it has no messages).
    pub last_accessed: DateTime<Utc>,
    /// Whole days since `last_accessed`.
    pub days_since_access: i64,
    /// Whole days since creation.
    pub age_days: i64,
    /// Messages.
    pub message_count: u32,
    /// `ceil(word_count · 4 / 3)` tokens.
    pub token_estimate: u64,
    /// Importance, 0..=10.
    pub importance_score: f32,
    /// What to do.
    pub recommendation: Recommendation,
    /// Why, in words.
    pub reason: String,
    /// The rules that fired.
    pub rules: Vec<PruneRule>,
    /// What archiving it would put away: the label, then the newest 5
    /// messages (`PREVIEW_MESSAGES`), oldest first, as `role: text` cut at
    /// 100 characters each (`PREVIEW_CHARS`; Sekha's field; Sekha asks its
    /// LLM to summarize the same material, memdb shows it).
    pub preview: String,
}

/// Messages shown in a suggestion's `preview` (Sekha's prompt reads 5).
pub const PREVIEW_MESSAGES: usize = 5;
/// Characters of each message in a `preview` (Sekha's 100).
pub const PREVIEW_CHARS: usize = 100;

/// Suggestions and what acting on them would save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PruneReport {
    /// Suggestions: delete, then archive, review, keep; oldest activity first.
    pub suggestions: Vec<PruneSuggestion>,
    /// Conversations examined.
    pub total_reviewed: u64,
    /// Suggestions in all (`suggestions` is one page of them).
    pub total_suggestions: u64,
    /// Suggestions per recommendation.
    pub recommended_delete: u64,
    /// Suggestions per recommendation.
    pub recommended_archive: u64,
    /// Suggestions per recommendation.
    pub recommended_review: u64,
    /// Suggestions per recommendation.
    pub recommended_keep: u64,
    /// Tokens of the conversations recommended for archive or delete.
    pub estimated_token_savings: u64,
    /// Messages of the conversations recommended for archive or delete.
    pub estimated_message_savings: u64,
    /// The thresholds in effect.
    pub threshold_days: u32,
    /// The thresholds in effect.
    pub importance_threshold: f32,
    /// The thresholds in effect.
    pub inactivity_days: u32,
    /// The time ages were measured from.
    pub now: DateTime<Utc>,
}

/// What `prune_execute` does to the chosen conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PruneAction {
    /// Set status archived (Sekha's execute).
    #[default]
    Archive,
    /// Delete them with their messages, vectors and summaries.
    Delete,
}

/// What `prune_execute` did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PruneExecuteReport {
    /// Newly archived.
    pub archived: Vec<Uuid>,
    /// Already archived before (unchanged).
    pub already_archived: Vec<Uuid>,
    /// Deleted.
    pub deleted: Vec<Uuid>,
    /// Messages removed by deletes.
    pub messages_deleted: u64,
}

/// Whole days between `then` and `now` (0 when `then` is later).
fn whole_days(now: i64, then: i64) -> i64 {
    (now.saturating_sub(then) / 86_400_000_000).max(0)
}

/// The rules and recommendation for one conversation, or `None` when it is
/// not worth listing. Pure, for unit tests.
pub(crate) fn judge(
    status: Status,
    importance: u8,
    days_idle: i64,
    threshold_days: u32,
    importance_threshold: f32,
    inactivity_days: u32,
) -> Option<(Recommendation, Vec<PruneRule>, String)> {
    let old = days_idle >= i64::from(threshold_days);
    let idle = !old && days_idle >= i64::from(inactivity_days);
    let low = f32::from(importance) < importance_threshold;
    let mut rules = Vec::new();
    if old {
        rules.push(PruneRule::Age);
    }
    if low {
        rules.push(PruneRule::Importance);
    }
    if idle {
        rules.push(PruneRule::Inactivity);
    }
    if rules.is_empty() {
        return None;
    }
    let why_idle = format!("no activity for {days_idle} days");
    let why_low = format!("importance {importance} < {importance_threshold}");
    if importance >= PINNED_IMPORTANCE {
        return Some((Recommendation::Keep, rules, format!("pinned; {why_idle}")));
    }
    if status == Status::Archived {
        return (old && low).then(|| {
            (
                Recommendation::Delete,
                rules,
                format!("archived, {why_idle} (≥ {threshold_days}) and {why_low}"),
            )
        });
    }
    let (rec, reason) = if old && low {
        (
            Recommendation::Archive,
            format!("{why_idle} (≥ {threshold_days}) and {why_low}"),
        )
    } else if old && importance >= KEEP_IMPORTANCE {
        (
            Recommendation::Keep,
            format!(
                "{why_idle} (≥ {threshold_days}) but importance {importance} ≥ {KEEP_IMPORTANCE}"
            ),
        )
    } else if old {
        (
            Recommendation::Review,
            format!("{why_idle} (≥ {threshold_days})"),
        )
    } else if idle && importance >= KEEP_IMPORTANCE {
        return None;
    } else if idle && low {
        (
            Recommendation::Review,
            format!("{why_idle} (≥ {inactivity_days}) and {why_low}"),
        )
    } else if idle {
        (
            Recommendation::Review,
            format!("{why_idle} (≥ {inactivity_days})"),
        )
    } else {
        (
            Recommendation::Review,
            format!("{why_low}; active {days_idle} days ago"),
        )
    };
    Some((rec, rules, reason))
}

/// A suggestion's `preview`: `label — role: text … | role: text …` over
/// the newest [`PREVIEW_MESSAGES`] messages, oldest first.
fn preview(view: &ConversationsView, sug: &PruneSuggestion) -> Result<String> {
    let mut newest = view.newest_messages(
        sug.conversation_id.as_u128(),
        i64::MIN,
        i64::MAX,
        PREVIEW_MESSAGES,
    )?;
    newest.reverse();
    let mut parts = Vec::with_capacity(newest.len());
    for (mid, _) in newest {
        if let Some(m) = view.message(mid)? {
            let text = crate::model::records::record_text(&m);
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let cut: String = text.chars().take(PREVIEW_CHARS).collect();
            let more = if cut.len() < text.len() { "…" } else { "" };
            parts.push(format!("{}: {cut}{more}", m.role));
        }
    }
    Ok(if parts.is_empty() {
        format!("{} (no messages)", sug.label)
    } else {
        format!("{} — {}", sug.label, parts.join(" | "))
    })
}

impl Sekha<'_> {
    /// Pruning suggestions (SPEC.md §19.3). Reads only.
    pub fn prune_suggestions(&self, req: &PruneRequest) -> Result<PruneReport> {
        let check_days = |field: &str, d: u32, min: u32| {
            if d < min || d > MAX_DAYS {
                Err(Error::invalid(
                    field,
                    format!("{d} is outside {min}..={MAX_DAYS}"),
                ))
            } else {
                Ok(d)
            }
        };
        // 0 is "everything older than now" (Sekha's SDK sends it).
        let threshold_days = check_days("threshold_days", req.threshold_days, 0)?;
        let inactivity_days = check_days(
            "inactivity_days",
            req.inactivity_days.unwrap_or(DEFAULT_INACTIVITY_DAYS),
            1,
        )?;
        let importance_threshold = req
            .importance_threshold
            .unwrap_or(DEFAULT_IMPORTANCE_THRESHOLD);
        if !(0.0..=10.0).contains(&importance_threshold) {
            return Err(Error::invalid(
                "importance_threshold",
                format!("{importance_threshold} is outside 0..=10"),
            ));
        }
        let limit = req.limit.unwrap_or(crate::model::filter::MAX_LIMIT);
        crate::model::filter::check_limit("limit", limit)?;
        let now = req.now.unwrap_or_else(now);
        let now_us = to_micros(now);
        let txn = self.db.snapshot()?;
        let view = ConversationsView::open(&txn)?;
        let mut report = PruneReport {
            suggestions: Vec::new(),
            total_reviewed: 0,
            total_suggestions: 0,
            recommended_delete: 0,
            recommended_archive: 0,
            recommended_review: 0,
            recommended_keep: 0,
            estimated_token_savings: 0,
            estimated_message_savings: 0,
            threshold_days,
            importance_threshold,
            inactivity_days,
            now,
        };
        let ns = self.db.ns_read()?;
        for row in view.iter()? {
            let (cid, c) = row?;
            if c.namespace != ns {
                continue;
            }
            report.total_reviewed += 1;
            let last = view.last_message_time(cid)?.unwrap_or(c.updated_at);
            let status = Status::from_code(c.status).unwrap_or(Status::Active);
            let days_idle = whole_days(now_us, last);
            let Some((recommendation, rules, reason)) = judge(
                status,
                c.importance,
                days_idle,
                threshold_days,
                importance_threshold,
                inactivity_days,
            ) else {
                continue;
            };
            let token_estimate = (c.word_count.saturating_mul(4)).div_ceil(3);
            match recommendation {
                Recommendation::Delete => report.recommended_delete += 1,
                Recommendation::Archive => report.recommended_archive += 1,
                Recommendation::Review => report.recommended_review += 1,
                Recommendation::Keep => report.recommended_keep += 1,
            }
            if matches!(
                recommendation,
                Recommendation::Delete | Recommendation::Archive
            ) {
                report.estimated_token_savings += token_estimate;
                report.estimated_message_savings += u64::from(c.message_count);
            }
            report.suggestions.push(PruneSuggestion {
                conversation_id: Uuid::from_u128(cid),
                label: c.label.clone(),
                folder: c.folder.clone(),
                status,
                last_accessed: from_micros(last),
                days_since_access: days_idle,
                age_days: whole_days(now_us, c.created_at),
                message_count: c.message_count,
                token_estimate,
                importance_score: f32::from(c.importance),
                recommendation,
                reason,
                rules,
                preview: String::new(),
            });
        }
        report.suggestions.sort_by(|a, b| {
            a.recommendation
                .cmp(&b.recommendation)
                .then(b.days_since_access.cmp(&a.days_since_access))
                .then(a.conversation_id.cmp(&b.conversation_id))
        });
        report.total_suggestions = report.suggestions.len() as u64;
        // One page: the answer stays bounded however large the store is.
        let end = req
            .offset
            .saturating_add(limit)
            .min(report.suggestions.len());
        let start = req.offset.min(end);
        report.suggestions.truncate(end);
        report.suggestions.drain(..start);
        for sug in &mut report.suggestions {
            sug.preview = preview(&view, sug)?;
        }
        Ok(report)
    }

    /// Archives or deletes the given conversations in one transaction.
    /// Every id must exist (else `NotFound`, nothing written); deleting a
    /// pinned conversation is `InvalidInput` (unpin it first). Duplicate ids
    /// count once; archiving an archived conversation changes nothing.
    pub fn prune_execute(&self, ids: &[Uuid], action: PruneAction) -> Result<PruneExecuteReport> {
        if ids.len() > MAX_PRUNE_IDS {
            return Err(Error::invalid(
                "conversation_ids",
                format!("{} ids; the limit is {MAX_PRUNE_IDS}", ids.len()),
            ));
        }
        let mut seen = HashSet::new();
        let unique: Vec<(usize, Uuid)> = ids
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, id)| seen.insert(*id))
            .collect();
        self.db.write(|txn, ops| {
            let mut report = PruneExecuteReport::default();
            let mut targets = Vec::with_capacity(unique.len());
            {
                for &(i, id) in &unique {
                    let rec = conversations::require_for_update(txn, id.as_u128())?;
                    self.db.ns_check("conversation", id, rec.namespace)?;
                    if action == PruneAction::Delete && rec.importance >= PINNED_IMPORTANCE {
                        return Err(Error::invalid(
                            format!("conversation_ids[{i}]"),
                            format!("conversation {id} is pinned; unpin it before deleting"),
                        ));
                    }
                    targets.push((id, rec));
                }
            }
            let t = to_micros(now());
            for (id, old) in targets {
                let key = id.as_u128();
                match action {
                    PruneAction::Archive => {
                        if old.status == Status::Archived.code() {
                            report.already_archived.push(id);
                            continue;
                        }
                        let mut rec = old.clone();
                        rec.status = Status::Archived.code();
                        rec.updated_at = t.max(old.updated_at);
                        conversations::put(txn, ops, key, &rec, Some(&old))?;
                        report.archived.push(id);
                    }
                    PruneAction::Delete => {
                        let removed = conversations::delete(txn, ops, key, &old)?;
                        crate::vector::spaces::delete_record_vectors(txn, &removed, ops)?;
                        report.messages_deleted += removed.len() as u64;
                        report.deleted.push(id);
                    }
                }
            }
            Ok(report)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Systems;
    use crate::db::Memdb;
    use crate::model::types::{NewConversation, NewMessage};
    use chrono::Duration;

    const T: u32 = 90;
    const I: f32 = 3.0;
    const D: u32 = 30;

    fn rec(status: Status, importance: u8, days: i64) -> Option<Recommendation> {
        judge(status, importance, days, T, I, D).map(|(r, _, _)| r)
    }

    #[test]
    fn age_rule() {
        // Old and low: archive; old and middling: review; old and important: keep.
        assert_eq!(rec(Status::Active, 2, 90), Some(Recommendation::Archive));
        assert_eq!(rec(Status::Active, 5, 120), Some(Recommendation::Review));
        assert_eq!(rec(Status::Active, 8, 400), Some(Recommendation::Keep));
        assert_eq!(rec(Status::Active, 5, 89), Some(Recommendation::Review)); // inactivity instead
        let (_, rules, reason) = judge(Status::Active, 2, 90, T, I, D).unwrap();
        assert_eq!(rules, vec![PruneRule::Age, PruneRule::Importance]);
        assert!(reason.contains("no activity for 90 days"), "{reason}");
    }

    #[test]
    fn importance_rule() {
        // Recent but below the threshold: review.
        assert_eq!(rec(Status::Active, 2, 0), Some(Recommendation::Review));
        // At the threshold is not below it.
        assert_eq!(rec(Status::Active, 3, 0), None);
        let (_, rules, _) = judge(Status::Active, 0, 1, T, I, D).unwrap();
        assert_eq!(rules, vec![PruneRule::Importance]);
        // The threshold is the caller's: 5.0 flags importance 4.
        assert!(judge(Status::Active, 4, 0, T, 5.0, D).is_some());
    }

    #[test]
    fn inactivity_rule() {
        assert_eq!(rec(Status::Active, 5, 29), None);
        assert_eq!(rec(Status::Active, 5, 30), Some(Recommendation::Review));
        assert_eq!(rec(Status::Active, 1, 45), Some(Recommendation::Review));
        assert_eq!(rec(Status::Active, 9, 45), None);
        let (_, rules, _) = judge(Status::Active, 5, 30, T, I, D).unwrap();
        assert_eq!(rules, vec![PruneRule::Inactivity]);
    }

    #[test]
    fn pinned_and_archived() {
        // Pinned is never archived or deleted, however old.
        assert_eq!(rec(Status::Active, 10, 1000), Some(Recommendation::Keep));
        assert_eq!(rec(Status::Archived, 10, 1000), Some(Recommendation::Keep));
        assert_eq!(
            judge(Status::Active, 10, 1000, T, 10.0, D).map(|r| r.0),
            Some(Recommendation::Keep)
        );
        // Archived, old and low: delete; otherwise nothing to do.
        assert_eq!(rec(Status::Archived, 1, 90), Some(Recommendation::Delete));
        assert_eq!(rec(Status::Archived, 5, 400), None);
        assert_eq!(rec(Status::Archived, 1, 10), None);
    }

    fn aged(db: &Memdb, label: &str, imp: u8, when: DateTime<Utc>, words: &str) -> Uuid {
        let mut m = NewMessage::new("user", words);
        m.timestamp = Some(when);
        let mut n = NewConversation::new(label, vec![m]);
        n.importance_score = Some(imp);
        db.sekha().create_conversation(n).unwrap().conversation.id
    }

    #[test]
    fn suggestions_savings_and_execute() {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        let now = DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let old_low = aged(
            &db,
            "old low",
            1,
            now - Duration::days(200),
            "one two three four five six",
        );
        let old_pin = aged(&db, "old pinned", 10, now - Duration::days(300), "keep me");
        let fresh = aged(&db, "fresh", 5, now - Duration::hours(2), "new");
        let idle = aged(&db, "idle", 5, now - Duration::days(40), "idle words");
        let req = PruneRequest {
            now: Some(now),
            ..PruneRequest::default()
        };
        // Paged: the counts cover everything, the page holds `limit`.
        let page = db
            .sekha()
            .prune_suggestions(&PruneRequest {
                now: Some(now),
                offset: 1,
                limit: Some(1),
                ..PruneRequest::default()
            })
            .unwrap();
        let all = db.sekha().prune_suggestions(&req).unwrap();
        assert_eq!(page.suggestions.len(), 1);
        assert_eq!(page.total_suggestions, all.total_suggestions);
        assert_eq!(
            page.suggestions[0].conversation_id,
            all.suggestions[1].conversation_id
        );
        assert!(
            db.sekha()
                .prune_suggestions(&PruneRequest {
                    limit: Some(0),
                    ..PruneRequest::default()
                })
                .is_err()
        );
        let r = db.sekha().prune_suggestions(&req).unwrap();
        assert_eq!(r.total_reviewed, 4);
        let ids: Vec<(Uuid, Recommendation)> = r
            .suggestions
            .iter()
            .map(|s| (s.conversation_id, s.recommendation))
            .collect();
        assert_eq!(
            ids,
            vec![
                (old_low, Recommendation::Archive),
                (idle, Recommendation::Review),
                (old_pin, Recommendation::Keep),
            ]
        );
        assert!(!ids.iter().any(|(id, _)| *id == fresh));
        let s = &r.suggestions[0];
        assert_eq!(s.days_since_access, 200);
        assert_eq!(s.message_count, 1);
        assert_eq!(s.token_estimate, 8); // ceil(6 · 4 / 3)
        assert_eq!(r.estimated_token_savings, 8);
        assert_eq!(r.estimated_message_savings, 1);
        assert_eq!(
            (
                r.recommended_archive,
                r.recommended_review,
                r.recommended_keep
            ),
            (1, 1, 1)
        );

        // Unknown id: NotFound and nothing archived.
        let missing = Uuid::new_v4();
        assert!(matches!(
            db.sekha()
                .prune_execute(&[old_low, missing], PruneAction::Archive),
            Err(Error::NotFound { .. })
        ));
        assert_eq!(
            db.sekha().get_conversation(old_low).unwrap().status,
            Status::Active
        );
        // Pinned cannot be deleted.
        assert!(matches!(
            db.sekha().prune_execute(&[idle, old_pin], PruneAction::Delete),
            Err(Error::InvalidInput { field, .. }) if field == "conversation_ids[1]"
        ));
        assert!(db.sekha().get_conversation(idle).is_ok());
        // Archive (duplicates once), then the archived old one is a delete suggestion.
        let done = db
            .sekha()
            .prune_execute(&[old_low, old_low], PruneAction::Archive)
            .unwrap();
        assert_eq!(done.archived, vec![old_low]);
        assert_eq!(
            db.sekha().get_conversation(old_low).unwrap().status,
            Status::Archived
        );
        let again = db
            .sekha()
            .prune_execute(&[old_low], PruneAction::Archive)
            .unwrap();
        assert_eq!(again.already_archived, vec![old_low]);
        let r = db.sekha().prune_suggestions(&req).unwrap();
        assert_eq!(r.suggestions[0].conversation_id, old_low);
        assert_eq!(r.suggestions[0].recommendation, Recommendation::Delete);
        let done = db
            .sekha()
            .prune_execute(&[old_low], PruneAction::Delete)
            .unwrap();
        assert_eq!(done.deleted, vec![old_low]);
        assert_eq!(done.messages_deleted, 1);
        assert!(db.sekha().get_conversation(old_low).is_err());
    }

    #[test]
    fn bad_thresholds_are_invalid_input() {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        for (req, field) in [
            (
                PruneRequest {
                    threshold_days: 36_501,
                    ..Default::default()
                },
                "threshold_days",
            ),
            (
                PruneRequest {
                    importance_threshold: Some(11.0),
                    ..Default::default()
                },
                "importance_threshold",
            ),
            (
                PruneRequest {
                    importance_threshold: Some(f32::NAN),
                    ..Default::default()
                },
                "importance_threshold",
            ),
            (
                PruneRequest {
                    inactivity_days: Some(0),
                    ..Default::default()
                },
                "inactivity_days",
            ),
        ] {
            match db.sekha().prune_suggestions(&req) {
                Err(Error::InvalidInput { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{other:?}"),
            }
        }
    }
}
