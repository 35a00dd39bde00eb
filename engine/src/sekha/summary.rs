//! Hierarchical summaries (SPEC.md §19.2): daily summaries of a
//! conversation's last 24 hours, weekly ones from the dailies of the last 7
//! days, monthly ones from the weeklies of the last 30 days, with 200/500/
//! 1000-word targets. Every generated summary is persisted in the
//! `summaries` table through the ordinary write path (one oplog entry,
//! `Op::PutSummary`); reads serve the newest summary of a level, or of the
//! next lower level when the requested one has none, and say which.
//!
//! Who writes the text is a [`Summarizer`]: [`Extractive`] (the default: no
//! model, deterministic sentence selection) or [`LlmSummarizer`] over a
//! [`ChatModel`]. When a summarizer fails, the extractive one stands in and
//! the summary records that.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use memdb_format::SummaryRecord;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::llm::ChatModel;
use crate::model::records::record_text;
use crate::sekha::Sekha;
use crate::store::conversations::{self, ConversationsView};
use crate::util::keywords;
use crate::util::time::{from_micros, now, to_micros};
use crate::util::tokens::estimate_tokens;

/// A summary level.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum SummaryLevel {
    /// The last 24 hours of messages (200 words).
    #[default]
    Daily,
    /// The daily summaries of the last 7 days (500 words).
    Weekly,
    /// The weekly summaries of the last 30 days (1000 words).
    Monthly,
}

impl SummaryLevel {
    /// All levels, lowest first.
    pub const ALL: [SummaryLevel; 3] = [
        SummaryLevel::Daily,
        SummaryLevel::Weekly,
        SummaryLevel::Monthly,
    ];

    fn code(self) -> u8 {
        self as u8
    }
    fn from_code(c: u8) -> Option<Self> {
        Self::ALL.get(usize::from(c)).copied()
    }
    /// The word target: 200, 500 or 1000.
    pub fn target_words(self) -> usize {
        match self {
            SummaryLevel::Daily => 200,
            SummaryLevel::Weekly => 500,
            SummaryLevel::Monthly => 1000,
        }
    }
    /// The level this one is built from (`None` for daily: messages).
    pub fn lower(self) -> Option<SummaryLevel> {
        match self {
            SummaryLevel::Daily => None,
            SummaryLevel::Weekly => Some(SummaryLevel::Daily),
            SummaryLevel::Monthly => Some(SummaryLevel::Weekly),
        }
    }
    /// How far back the sources reach: 24 hours, 7 days, 30 days.
    pub fn window(self) -> Duration {
        match self {
            SummaryLevel::Daily => Duration::hours(24),
            SummaryLevel::Weekly => Duration::days(7),
            SummaryLevel::Monthly => Duration::days(30),
        }
    }
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryLevel::Daily => "daily",
            SummaryLevel::Weekly => "weekly",
            SummaryLevel::Monthly => "monthly",
        }
    }
}

impl FromStr for SummaryLevel {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "daily" => Ok(SummaryLevel::Daily),
            "weekly" => Ok(SummaryLevel::Weekly),
            "monthly" => Ok(SummaryLevel::Monthly),
            other => Err(Error::invalid(
                "level",
                format!(
                    "unknown summary level {other:?}: expected \"daily\", \"weekly\" or \"monthly\""
                ),
            )),
        }
    }
}

fn default_level() -> String {
    "daily".into()
}

/// Sekha's `POST /api/v1/summarize` body `{conversation_id, level}`, plus
/// an optional `now` (the end of the summarized window; default now).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummarizeRequest {
    /// The conversation.
    pub conversation_id: Uuid,
    /// `daily` (default), `weekly` or `monthly`; anything else is `InvalidInput`.
    #[serde(default = "default_level")]
    pub level: String,
    /// End of the window (default: now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<DateTime<Utc>>,
}

/// A summary. Serializes with the SDK's `SummaryResponse` fields
/// (`conversation_id`, `summary`, `level`, `token_count`, `created_at`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Summary id (nil when not persisted).
    pub id: Uuid,
    /// The conversation.
    pub conversation_id: Uuid,
    /// Its level.
    pub level: SummaryLevel,
    /// The text.
    pub summary: String,
    /// Estimated tokens of the text (`ceil(chars / 4)`).
    pub token_count: u32,
    /// Words of the text (≤ the level's target).
    pub word_count: u32,
    /// When it was generated (Sekha's `generated_at`).
    pub created_at: DateTime<Utc>,
    /// Oldest source time covered.
    pub range_start: DateTime<Utc>,
    /// Newest source time covered.
    pub range_end: DateTime<Utc>,
    /// Messages (daily) or lower-level summaries (weekly, monthly) summarized.
    pub source_count: u32,
    /// The summarizer that wrote it.
    pub model: String,
    /// False when there was nothing to summarize (nothing was stored).
    pub persisted: bool,
    /// What happened on the way, e.g. a fallback.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The newest summary of a requested level, or of a lower one when the
/// requested level has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServedSummary {
    /// The level asked for.
    pub requested_level: SummaryLevel,
    /// The level served (`summary.level`).
    pub served_level: SummaryLevel,
    /// The summary.
    #[serde(flatten)]
    pub summary: Summary,
}

/// One text to summarize: a message, or a lower-level summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SummarySource {
    /// The message role, or the summary level's name.
    pub role: String,
    /// The message time, or the summary's generation time.
    pub timestamp: DateTime<Utc>,
    /// The text.
    pub text: String,
}

/// What a [`Summarizer`] is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryInput<'a> {
    /// The level being produced.
    pub level: SummaryLevel,
    /// Upper bound on the words of the answer.
    pub max_words: usize,
    /// The conversation's label.
    pub label: &'a str,
    /// The sources, oldest first.
    pub sources: &'a [SummarySource],
}

/// Writes summary text.
pub trait Summarizer: Send + Sync {
    /// Summarizes `input` in at most `input.max_words` words (the engine
    /// truncates longer answers).
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String>;
    /// Recorded with each summary (`extractive`, a model name, ...).
    fn name(&self) -> String;
}

/// The default summarizer: picks the sentences that best cover the
/// sources' frequent content words, in their original order, within the
/// word target. No model; the same input always gives the same output.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extractive;

impl Summarizer for Extractive {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String> {
        Ok(extract(input.sources, input.max_words))
    }
    fn name(&self) -> String {
        "extractive".into()
    }
}

/// Summarizes with a chat model.
#[derive(Clone)]
pub struct LlmSummarizer {
    model: Arc<dyn ChatModel>,
}

impl LlmSummarizer {
    /// A summarizer asking `model`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmSummarizer { model }
    }
}

impl std::fmt::Debug for LlmSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSummarizer")
            .field("model", &self.model.name())
            .finish()
    }
}

impl Summarizer for LlmSummarizer {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String> {
        let system = format!(
            "You maintain an AI assistant's long-term memory. Write a {} summary of the \
             conversation excerpts below in at most {} words: keep facts, decisions, names, \
             numbers and open questions; plain prose, no preamble.",
            input.level.as_str(),
            input.max_words
        );
        let mut user = format!("Conversation: {}\n\n", input.label);
        for s in input.sources {
            user.push_str(&format!(
                "[{}] {}: {}\n",
                s.timestamp.format("%Y-%m-%d %H:%M"),
                s.role,
                s.text
            ));
        }
        let max_tokens = u32::try_from(input.max_words.saturating_mul(2)).unwrap_or(u32::MAX);
        let answer = self.model.complete(&system, &user, max_tokens)?;
        let answer = answer.trim();
        if answer.is_empty() {
            return Err(Error::invalid("summary", "the model answered with nothing"));
        }
        Ok(answer.to_string())
    }
    fn name(&self) -> String {
        self.model.name()
    }
}

/// The first `n` whitespace-separated words of `text`, with `…` when cut.
pub(crate) fn truncate_words(text: &str, n: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() <= n {
        return words.join(" ");
    }
    let mut s = words[..n].join(" ");
    s.push('…');
    s
}

/// Extractive selection. Each sentence scores the sum of its distinct
/// content words' frequencies over all sources, divided by
/// `sqrt(content words + 1)` (long sentences do not win by length alone),
/// times 1.25 for the first sentence of a source (openings state topics).
/// Sentences are taken best first (ties: earlier) while they fit the word
/// target, duplicates skipped, and emitted in source order. If even the
/// best sentence is longer than the target, its first `max_words` words are
/// returned.
pub(crate) fn extract(sources: &[SummarySource], max_words: usize) -> String {
    struct Sent {
        text: String,
        words: usize,
        score: f64,
    }
    let mut sents: Vec<Sent> = Vec::new();
    let mut tf: HashMap<String, usize> = HashMap::new();
    let mut per_sent_words: Vec<Vec<String>> = Vec::new();
    let mut first_flags: Vec<bool> = Vec::new();
    for src in sources {
        for (i, s) in keywords::sentences(&src.text).into_iter().enumerate() {
            let cw = keywords::content_words(&s);
            for w in &cw {
                *tf.entry(w.clone()).or_default() += 1;
            }
            per_sent_words.push(cw);
            first_flags.push(i == 0);
            let words = s.split_whitespace().count();
            sents.push(Sent {
                text: s,
                words,
                score: 0.0,
            });
        }
    }
    for (i, sent) in sents.iter_mut().enumerate() {
        let mut distinct = per_sent_words[i].clone();
        distinct.sort();
        distinct.dedup();
        let sum: usize = distinct
            .iter()
            .map(|w| tf.get(w).copied().unwrap_or(0))
            .sum();
        let mut score = sum as f64 / ((per_sent_words[i].len() + 1) as f64).sqrt();
        if first_flags[i] {
            score *= 1.25;
        }
        sent.score = score;
    }
    let mut order: Vec<usize> = (0..sents.len()).collect();
    order.sort_by(|&a, &b| sents[b].score.total_cmp(&sents[a].score).then(a.cmp(&b)));
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0usize;
    for &i in &order {
        let s = &sents[i];
        if used + s.words > max_words {
            continue;
        }
        if chosen.iter().any(|&j| sents[j].text == s.text) {
            continue;
        }
        chosen.push(i);
        used += s.words;
    }
    if chosen.is_empty() {
        return order
            .first()
            .map(|&i| truncate_words(&sents[i].text, max_words))
            .unwrap_or_default();
    }
    chosen.sort_unstable();
    chosen
        .iter()
        .map(|&i| sents[i].text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn summary_from(conv: u128, key_id: u128, r: &SummaryRecord) -> Result<Summary> {
    let level = SummaryLevel::from_code(r.level).ok_or_else(|| Error::Corrupted {
        what: format!("summary {}", Uuid::from_u128(key_id)),
        reason: format!("unknown level code {}", r.level),
    })?;
    Ok(Summary {
        id: Uuid::from_u128(key_id),
        conversation_id: Uuid::from_u128(conv),
        level,
        summary: r.text.clone(),
        token_count: r.token_count,
        word_count: r.word_count,
        created_at: from_micros(r.generated_at),
        range_start: from_micros(r.range_start),
        range_end: from_micros(r.range_end),
        source_count: r.source_count,
        model: r.model.clone(),
        persisted: true,
        notes: Vec::new(),
    })
}

impl Sekha<'_> {
    /// Generates, persists and returns a summary of `req.level` (SPEC.md
    /// §19.2). A weekly with no dailies in its window first generates the
    /// daily; a monthly with no weeklies first generates the weekly. With
    /// nothing at all to summarize, the result has `persisted: false`.
    pub fn summarize(
        &self,
        req: &SummarizeRequest,
        summarizer: &dyn Summarizer,
    ) -> Result<Summary> {
        let level: SummaryLevel = req.level.parse()?;
        let now = req.now.unwrap_or_else(now);
        self.get_conversation(req.conversation_id)?;
        self.summarize_level(req.conversation_id, level, now, summarizer)
    }

    fn summarize_level(
        &self,
        conv: Uuid,
        level: SummaryLevel,
        now: DateTime<Utc>,
        summarizer: &dyn Summarizer,
    ) -> Result<Summary> {
        let since = now - level.window();
        let mut notes = Vec::new();
        let sources: Vec<SummarySource> = match level.lower() {
            None => self.messages_between(conv, since, now)?,
            Some(lower) => {
                let mut s = self.summaries_between(conv, lower, since, now)?;
                if s.is_empty() {
                    let made = self.summarize_level(conv, lower, now, summarizer)?;
                    notes.push(format!(
                        "no {} summaries in the window: generated one first",
                        lower.as_str()
                    ));
                    notes.extend(made.notes.iter().cloned());
                    if made.persisted {
                        s.push(SummarySource {
                            role: lower.as_str().into(),
                            timestamp: made.created_at,
                            text: made.summary,
                        });
                    }
                }
                s
            }
        };
        let label = self.get_conversation(conv)?.label;
        if sources.is_empty() {
            notes.push(format!(
                "nothing to summarize between {} and {}",
                since.to_rfc3339(),
                now.to_rfc3339()
            ));
            return Ok(Summary {
                id: Uuid::nil(),
                conversation_id: conv,
                level,
                summary: String::new(),
                token_count: 0,
                word_count: 0,
                created_at: now,
                range_start: since,
                range_end: now,
                source_count: 0,
                model: summarizer.name(),
                persisted: false,
                notes,
            });
        }
        let max_words = level.target_words();
        let input = SummaryInput {
            level,
            max_words,
            label: &label,
            sources: &sources,
        };
        let (text, model) = match summarizer.summarize(&input) {
            Ok(t) => (t, summarizer.name()),
            Err(e) => {
                notes.push(format!(
                    "{} failed ({e}); extractive summary used",
                    summarizer.name()
                ));
                (extract(&sources, max_words), Extractive.name())
            }
        };
        let text = truncate_words(&text, max_words);
        let range_start = sources.iter().map(|s| s.timestamp).min().unwrap_or(since);
        let range_end = sources.iter().map(|s| s.timestamp).max().unwrap_or(now);
        let rec = SummaryRecord {
            level: level.code(),
            text: text.clone(),
            generated_at: to_micros(now),
            range_start: to_micros(range_start),
            range_end: to_micros(range_end),
            source_count: u32::try_from(sources.len()).unwrap_or(u32::MAX),
            word_count: u32::try_from(text.split_whitespace().count()).unwrap_or(u32::MAX),
            token_count: u32::try_from(estimate_tokens(&text)).unwrap_or(u32::MAX),
            model,
        };
        let id = crate::util::ids::new_id().as_u128();
        let key = conv.as_u128();
        self.db
            .write(|txn, ops| conversations::put_summary(txn, ops, key, id, &rec))?;
        let mut s = summary_from(key, id, &rec)?;
        s.notes = notes;
        Ok(s)
    }

    fn messages_between(
        &self,
        conv: Uuid,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<SummarySource>> {
        let txn = self.db.snapshot()?;
        let view = ConversationsView::open(&txn)?;
        let key = conv.as_u128();
        let mut out = Vec::new();
        for (mid, _) in view.messages_between(key, to_micros(since), to_micros(until))? {
            if let Some(m) = view.message(mid)? {
                let text = record_text(&m);
                if !text.trim().is_empty() {
                    out.push(SummarySource {
                        role: m.role.clone(),
                        timestamp: from_micros(m.timestamp),
                        text,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Summaries of `level` generated in `[since, until]`, oldest first.
    fn summaries_between(
        &self,
        conv: Uuid,
        level: SummaryLevel,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<SummarySource>> {
        let key = conv.as_u128();
        let l = level.code();
        let txn = self.db.snapshot()?;
        let mut out = Vec::new();
        for (_, r) in
            conversations::summaries(&txn, key, l..=l, to_micros(since), to_micros(until))?
        {
            out.push(SummarySource {
                role: level.as_str().into(),
                timestamp: from_micros(r.generated_at),
                text: r.text,
            });
        }
        Ok(out)
    }

    /// Stored summaries of a conversation, newest first, optionally of one level.
    pub fn list_summaries(
        &self,
        conversation_id: Uuid,
        level: Option<SummaryLevel>,
    ) -> Result<Vec<Summary>> {
        self.get_conversation(conversation_id)?;
        let key = conversation_id.as_u128();
        let txn = self.db.snapshot()?;
        let (lo, hi) = match level {
            Some(l) => (l.code(), l.code()),
            None => (0, u8::MAX),
        };
        let mut out = Vec::new();
        for (id, r) in conversations::summaries(&txn, key, lo..=hi, i64::MIN, i64::MAX)? {
            out.push(summary_from(key, id, &r)?);
        }
        out.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then(b.level.cmp(&a.level))
                .then(b.id.cmp(&a.id))
        });
        Ok(out)
    }

    /// The newest stored summary of `level`; when there is none, the newest
    /// of the next lower level (monthly → weekly → daily), saying which
    /// level was served. `NotFound` when the conversation has no summary at
    /// or below `level`.
    pub fn latest_summary(
        &self,
        conversation_id: Uuid,
        level: SummaryLevel,
    ) -> Result<ServedSummary> {
        self.get_conversation(conversation_id)?;
        let key = conversation_id.as_u128();
        let txn = self.db.snapshot()?;
        let mut cur = Some(level);
        while let Some(l) = cur {
            let c = l.code();
            if let Some((id, r)) =
                conversations::summaries(&txn, key, c..=c, i64::MIN, i64::MAX)?.pop()
            {
                return Ok(ServedSummary {
                    requested_level: level,
                    served_level: l,
                    summary: summary_from(key, id, &r)?,
                });
            }
            cur = l.lower();
        }
        Err(Error::NotFound {
            what: "summary",
            id: format!("{conversation_id} ({} or lower)", level.as_str()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Systems;
    use crate::db::Memdb;
    use crate::model::types::{NewConversation, NewMessage};
    use std::sync::Mutex;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn src(text: &str) -> SummarySource {
        SummarySource {
            role: "user".into(),
            timestamp: at("2026-01-01T00:00:00Z"),
            text: text.into(),
        }
    }

    #[test]
    fn extractive_picks_central_sentences_in_order_within_target() {
        let sources = [
            src("We chose redb for the store. The weather is nice."),
            src("redb commits are durable. Lunch was pasta."),
            src("The store keeps an oplog in redb."),
        ];
        // "redb" appears 3 times, "store" twice: the three redb sentences
        // (6 + 4 + 7 = 17 words) win; the filler (3 or 4 words) does not fit.
        let out = extract(&sources, 17);
        assert_eq!(
            out,
            "We chose redb for the store. redb commits are durable. The store keeps an oplog in redb."
        );
        // With 3 more words the best filler joins, still in source order.
        assert_eq!(
            extract(&sources, 20),
            "We chose redb for the store. redb commits are durable. Lunch was pasta. The store keeps an oplog in redb."
        );
        // A tight target keeps only the best sentence that fits.
        let out = extract(&sources, 7);
        assert!(out.split_whitespace().count() <= 7, "{out}");
        assert!(out.contains("redb"), "{out}");
        // Deterministic.
        assert_eq!(extract(&sources, 7), out);
    }

    #[test]
    fn extractive_truncates_a_single_long_sentence() {
        let long = "word ".repeat(50);
        let out = extract(&[src(&long)], 10);
        assert_eq!(out.split_whitespace().count(), 10);
        assert!(out.ends_with('…'));
        assert_eq!(extract(&[], 10), "");
    }

    #[test]
    fn unknown_level_is_invalid_input() {
        assert!(matches!(
            "hourly".parse::<SummaryLevel>(),
            Err(Error::InvalidInput { field, .. }) if field == "level"
        ));
        assert_eq!(
            "weekly".parse::<SummaryLevel>().unwrap(),
            SummaryLevel::Weekly
        );
    }

    fn setup() -> (tempfile::TempDir, Memdb, Uuid) {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        let msgs = [
            (
                "We decided to store memories in redb.",
                "2026-03-10T09:00:00Z",
            ),
            (
                "The redb store is the source of truth.",
                "2026-03-10T10:00:00Z",
            ),
            ("Old chatter from last week.", "2026-03-03T10:00:00Z"),
        ]
        .iter()
        .map(|(t, ts)| {
            let mut m = NewMessage::new("user", *t);
            m.timestamp = Some(at(ts));
            m
        })
        .collect();
        let id = db
            .sekha()
            .create_conversation(NewConversation::new("Design", msgs))
            .unwrap()
            .conversation
            .id;
        (dir, db, id)
    }

    fn req(id: Uuid, level: &str, now: &str) -> SummarizeRequest {
        SummarizeRequest {
            conversation_id: id,
            level: level.into(),
            now: Some(at(now)),
        }
    }

    #[test]
    fn daily_weekly_monthly_are_persisted_and_served_with_fallback() {
        let (_d, db, id) = setup();
        // Nothing stored yet.
        assert!(matches!(
            db.sekha().latest_summary(id, SummaryLevel::Monthly),
            Err(Error::NotFound {
                what: "summary",
                ..
            })
        ));
        let daily = db
            .sekha()
            .summarize(&req(id, "daily", "2026-03-10T12:00:00Z"), &Extractive)
            .unwrap();
        assert!(daily.persisted);
        assert_eq!(daily.source_count, 2, "only the last 24 hours");
        assert!(!daily.summary.contains("Old chatter"));
        assert_eq!(daily.model, "extractive");
        // A monthly request is served from the daily, and says so.
        let served = db
            .sekha()
            .latest_summary(id, SummaryLevel::Monthly)
            .unwrap();
        assert_eq!(served.served_level, SummaryLevel::Daily);
        assert_eq!(served.summary, daily);
        // Weekly from the daily; monthly from the weekly.
        let weekly = db
            .sekha()
            .summarize(&req(id, "weekly", "2026-03-10T13:00:00Z"), &Extractive)
            .unwrap();
        assert_eq!(weekly.level, SummaryLevel::Weekly);
        assert_eq!(weekly.source_count, 1);
        let monthly = db
            .sekha()
            .summarize(&req(id, "monthly", "2026-03-10T14:00:00Z"), &Extractive)
            .unwrap();
        assert_eq!(monthly.source_count, 1);
        let served = db
            .sekha()
            .latest_summary(id, SummaryLevel::Monthly)
            .unwrap();
        assert_eq!(served.served_level, SummaryLevel::Monthly);
        assert_eq!(served.summary.id, monthly.id);
        let all = db.sekha().list_summaries(id, None).unwrap();
        assert_eq!(
            all.iter().map(|s| s.level).collect::<Vec<_>>(),
            vec![
                SummaryLevel::Monthly,
                SummaryLevel::Weekly,
                SummaryLevel::Daily
            ]
        );
        assert_eq!(
            db.sekha()
                .list_summaries(id, Some(SummaryLevel::Weekly))
                .unwrap()
                .len(),
            1
        );
        // Survives reopen.
        let dir = db.dir().to_path_buf();
        drop(db);
        let db = Memdb::open(&dir).unwrap();
        assert_eq!(db.sekha().list_summaries(id, None).unwrap(), all);
        // Deleting the conversation deletes its summaries.
        db.sekha().delete_conversation(id).unwrap();
        let txn = db.snapshot().unwrap();
        let left = crate::store::conversations::summaries(
            &txn,
            id.as_u128(),
            0..=u8::MAX,
            i64::MIN,
            i64::MAX,
        )
        .unwrap();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn weekly_without_dailies_generates_the_daily_first() {
        let (_d, db, id) = setup();
        let weekly = db
            .sekha()
            .summarize(&req(id, "weekly", "2026-03-10T12:00:00Z"), &Extractive)
            .unwrap();
        assert!(weekly.persisted);
        assert!(
            weekly
                .notes
                .iter()
                .any(|n| n.contains("no daily summaries"))
        );
        assert_eq!(
            db.sekha()
                .list_summaries(id, Some(SummaryLevel::Daily))
                .unwrap()
                .len(),
            1
        );
        // Nothing in the window: not persisted.
        let empty = db
            .sekha()
            .summarize(&req(id, "daily", "2026-06-01T00:00:00Z"), &Extractive)
            .unwrap();
        assert!(!empty.persisted);
        assert_eq!(db.sekha().list_summaries(id, None).unwrap().len(), 2);
    }

    #[test]
    fn bad_requests_write_nothing() {
        let (_d, db, id) = setup();
        assert!(matches!(
            db.sekha()
                .summarize(&req(id, "yearly", "2026-03-10T12:00:00Z"), &Extractive),
            Err(Error::InvalidInput { .. })
        ));
        assert!(matches!(
            db.sekha().summarize(
                &req(Uuid::new_v4(), "daily", "2026-03-10T12:00:00Z"),
                &Extractive
            ),
            Err(Error::NotFound {
                what: "conversation",
                ..
            })
        ));
        assert!(db.sekha().list_summaries(id, None).unwrap().is_empty());
    }

    /// A local chat model double: records prompts, answers from a script.
    struct Scripted {
        answer: Result<String>,
        seen: Mutex<Vec<(String, String, u32)>>,
    }
    impl ChatModel for Scripted {
        fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<String> {
            self.seen
                .lock()
                .unwrap()
                .push((system.into(), user.into(), max_tokens));
            match &self.answer {
                Ok(s) => Ok(s.clone()),
                Err(e) => Err(Error::invalid("model", e.to_string())),
            }
        }
        fn name(&self) -> String {
            "scripted-model".into()
        }
    }

    #[test]
    fn llm_path_sends_the_sources_and_respects_the_target() {
        let (_d, db, id) = setup();
        let long_answer = format!("Summary: {}", "redb ".repeat(400));
        let model = Arc::new(Scripted {
            answer: Ok(long_answer),
            seen: Mutex::new(Vec::new()),
        });
        let s = LlmSummarizer::new(model.clone());
        let daily = db
            .sekha()
            .summarize(&req(id, "daily", "2026-03-10T12:00:00Z"), &s)
            .unwrap();
        assert_eq!(daily.model, "scripted-model");
        assert_eq!(daily.word_count, 200, "truncated to the daily target");
        let seen = model.seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].0.contains("at most 200 words"));
        assert!(
            seen[0]
                .1
                .contains("user: We decided to store memories in redb.")
        );
        assert!(!seen[0].1.contains("Old chatter"));
        assert_eq!(seen[0].2, 400);
    }

    #[test]
    fn llm_failure_falls_back_to_extractive() {
        let (_d, db, id) = setup();
        let model = Arc::new(Scripted {
            answer: Err(Error::invalid("x", "down")),
            seen: Mutex::new(Vec::new()),
        });
        let daily = db
            .sekha()
            .summarize(
                &req(id, "daily", "2026-03-10T12:00:00Z"),
                &LlmSummarizer::new(model),
            )
            .unwrap();
        assert_eq!(daily.model, "extractive");
        assert!(
            daily
                .notes
                .iter()
                .any(|n| n.contains("scripted-model failed"))
        );
        assert!(daily.summary.contains("redb"));
    }
}
