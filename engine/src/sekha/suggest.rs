//! Label suggestions and importance scores (SPEC.md §19.4).
//!
//! Both have a heuristic default that needs no model and is deterministic
//! given the store: labels from the conversation's distinctive words
//! (TF-IDF against a sample of the store), the labels already in use, code
//! blocks and questions; importance from length, code, questions and
//! decision/urgency words. With a [`ChatModel`], the model is asked and the
//! heuristic stands in (with a note) when its answer fails or cannot be read.

use std::collections::{BTreeMap, HashMap, HashSet};

use memdb_format::ConversationRecord;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::Result;
use crate::llm::ChatModel;
use crate::model::records::record_text;
use crate::sekha::Sekha;
use crate::store::conversations::{self, ConversationsView};
use crate::util::keywords::{code_fences, content_words, sentences, words};

/// Most suggestions returned.
pub const MAX_SUGGESTIONS: usize = 5;
/// Conversations sampled (first message each) for document frequencies.
pub const IDF_SAMPLE: usize = 500;
/// Most characters of a conversation read for suggestions.
const MAX_CONVERSATION_CHARS: usize = 64 * 1024;

/// One suggested label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelSuggestion {
    /// The label.
    pub label: String,
    /// A folder for it: the folder most used with an existing label, else
    /// the conversation's own folder.
    pub folder: String,
    /// 0..=1.
    pub confidence: f32,
    /// Whether some conversation already carries this label.
    pub is_existing: bool,
    /// Why it was suggested.
    pub reason: String,
}

/// Label suggestions for a conversation (the SDK's `LabelSuggestResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelSuggestions {
    /// The conversation.
    pub conversation_id: Uuid,
    /// Up to 5, most confident first.
    pub suggestions: Vec<LabelSuggestion>,
    /// The first suggestion, if any.
    pub top_suggestion: Option<LabelSuggestion>,
    /// `heuristic` or the chat model's name.
    pub model: String,
    /// Fallbacks and other remarks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What [`Sekha::auto_label`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoLabel {
    /// The conversation.
    pub conversation_id: Uuid,
    /// Whether the label was changed.
    pub applied: bool,
    /// The label after the call.
    pub label: String,
    /// The folder after the call.
    pub folder: String,
    /// The top suggestion's confidence (absent when nothing was suggested).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
    /// `heuristic` or the chat model's name.
    pub model: String,
    /// Fallbacks, and why nothing was applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Sekha's folder for a label it assigns itself (`auto_label` in its
/// `label_intelligence.rs`): `/work` when the label contains `:` (a
/// `project: topic` label), else `/personal`.
pub fn auto_label_folder(label: &str) -> &'static str {
    if label.contains(':') {
        "/work"
    } else {
        "/personal"
    }
}

/// An importance score (the SDK's `MessageScoreResponse`, also used for
/// whole conversations).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportanceScore {
    /// The scored message (absent for a conversation score).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Uuid>,
    /// The conversation.
    pub conversation_id: Uuid,
    /// 1..=10.
    pub importance_score: f32,
    /// Named contributions (heuristic parts, or `heuristic` and `llm`).
    pub factors: BTreeMap<String, f32>,
    /// Why, in words.
    pub reasoning: String,
    /// `heuristic` or the chat model's name.
    pub model: String,
    /// Fallbacks: why a configured chat model's score was not used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Word groups that raise importance by 1 each when present.
const KEYWORD_GROUPS: &[(&str, &[&str])] = &[
    (
        "urgency",
        &["urgent", "asap", "critical", "deadline", "emergency"],
    ),
    (
        "importance",
        &["important", "importantly", "essential", "crucial", "vital"],
    ),
    (
        "decision",
        &["decision", "decided", "decide", "agreed", "chose", "choose"],
    ),
    (
        "memory",
        &[
            "remember",
            "forget",
            "always",
            "never",
            "prefer",
            "preference",
        ],
    ),
];

/// The heuristic importance of a text: base 5; +1 over 100 characters; +2
/// with a fenced code block; +0.5 when a sentence ends with `?`; +1 per
/// keyword group present (urgency, importance, decision, memory); −1 when
/// under 20 characters without a question; clamped to 1..=10.
pub fn heuristic_importance(text: &str) -> (f32, BTreeMap<String, f32>, String) {
    let mut factors = BTreeMap::new();
    let mut reasons = Vec::new();
    factors.insert("base".to_string(), 5.0);
    let chars = text.chars().count();
    if chars > 100 {
        factors.insert("length".into(), 1.0);
        reasons.push(format!("{chars} characters"));
    }
    if code_fences(text).0 {
        factors.insert("code".into(), 2.0);
        reasons.push("contains code".to_string());
    }
    let question = sentences(text).iter().any(|s| s.ends_with('?'));
    if question {
        factors.insert("question".into(), 0.5);
        reasons.push("asks a question".to_string());
    }
    let ws: HashSet<String> = words(text).into_iter().collect();
    let mut groups = Vec::new();
    for (name, list) in KEYWORD_GROUPS {
        if list.iter().any(|w| ws.contains(*w)) {
            groups.push(*name);
        }
    }
    if !groups.is_empty() {
        factors.insert("keywords".into(), groups.len() as f32);
        reasons.push(format!("{} words", groups.join("/")));
    }
    if chars < 20 && !question {
        factors.insert("brevity".into(), -1.0);
        reasons.push("very short".to_string());
    }
    let score = factors.values().sum::<f32>().clamp(1.0, 10.0);
    let reasoning = if reasons.is_empty() {
        "ordinary message".to_string()
    } else {
        reasons.join(", ")
    };
    (score, factors, reasoning)
}

/// The first number in `s`, if any (for model answers like "8/10 because").
fn first_number(s: &str) -> Option<f32> {
    let mut num = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() || (c == '.' && !num.is_empty() && !num.contains('.')) {
            num.push(c);
        } else if !num.is_empty() {
            break;
        }
    }
    num.trim_end_matches('.').parse().ok()
}

fn title_case(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

struct LabelStats {
    count: usize,
    folders: BTreeMap<String, usize>,
}

impl LabelStats {
    fn top_folder(&self) -> String {
        let mut best: Option<(&String, usize)> = None;
        for (f, &n) in &self.folders {
            if best.is_none_or(|(_, b)| n > b) {
                best = Some((f, n));
            }
        }
        best.map_or_else(|| "/".to_string(), |(f, _)| f.clone())
    }
}

/// Label statistics, document frequencies and the number of sampled documents.
type LabelCorpus = (BTreeMap<String, LabelStats>, HashMap<String, usize>, usize);

impl Sekha<'_> {
    fn conversation_text(&self, cid: u128) -> Result<(ConversationRecord, Vec<(String, String)>)> {
        let txn = self.db.snapshot()?;
        let view = ConversationsView::open(&txn)?;
        let conv = view.require(cid)?;
        self.db
            .ns_check("conversation", Uuid::from_u128(cid), conv.namespace)?;
        let mut out = Vec::new();
        let mut total = 0usize;
        for mid in conversations::conversation_message_ids(&txn, cid)? {
            if total >= MAX_CONVERSATION_CHARS {
                break;
            }
            if let Some(m) = view.message(mid)? {
                let t = record_text(&m);
                total += t.len();
                out.push((m.role.clone(), t));
            }
        }
        Ok((conv, out))
    }

    /// Label statistics over the store and document frequencies of content
    /// words over a sample of conversations (first message and label each).
    fn label_corpus(&self, except: u128) -> Result<LabelCorpus> {
        let txn = self.db.snapshot()?;
        let view = ConversationsView::open(&txn)?;
        let mut labels: BTreeMap<String, LabelStats> = BTreeMap::new();
        let mut df: HashMap<String, usize> = HashMap::new();
        let mut docs = 0usize;
        let ns = self.db.ns_read()?;
        for row in view.iter()? {
            let (cid, c) = row?;
            if c.namespace != ns {
                continue;
            }
            if cid != except {
                let e = labels.entry(c.label.clone()).or_insert(LabelStats {
                    count: 0,
                    folders: BTreeMap::new(),
                });
                e.count += 1;
                *e.folders.entry(c.folder.clone()).or_default() += 1;
            }
            if docs < IDF_SAMPLE {
                let mut text = c.label.clone();
                if let Some(mid) = view.first_message(cid)?
                    && let Some(m) = view.message(mid)?
                {
                    text.push('\n');
                    text.push_str(&record_text(&m));
                }
                let set: HashSet<String> = content_words(&text).into_iter().collect();
                for w in set {
                    *df.entry(w).or_default() += 1;
                }
                docs += 1;
            }
        }
        Ok((labels, df, docs))
    }

    /// Label suggestions for a conversation (SPEC.md §19.4). Reads only.
    pub fn suggest_labels(
        &self,
        conversation_id: Uuid,
        model: Option<&dyn ChatModel>,
    ) -> Result<LabelSuggestions> {
        let cid = conversation_id.as_u128();
        let (conv, texts) = self.conversation_text(cid)?;
        let (labels, df, docs) = self.label_corpus(cid)?;
        let mut notes = Vec::new();
        if let Some(m) = model {
            match self.llm_labels(m, &conv, &texts, &labels) {
                Ok(s) if !s.is_empty() => {
                    return Ok(LabelSuggestions {
                        conversation_id,
                        top_suggestion: s.first().cloned(),
                        suggestions: s,
                        model: m.name(),
                        notes,
                    });
                }
                Ok(_) => notes.push(format!("{} suggested no labels; heuristic used", m.name())),
                Err(e) => notes.push(format!("{} failed ({e}); heuristic used", m.name())),
            }
        }
        let suggestions = heuristic_labels(&conv, &texts, &labels, &df, docs);
        Ok(LabelSuggestions {
            conversation_id,
            top_suggestion: suggestions.first().cloned(),
            suggestions,
            model: "heuristic".into(),
            notes,
        })
    }

    /// Labels conversation `id` with its top suggestion (SPEC.md §19.4)
    /// when that suggestion's confidence is at least `threshold` (0..=1):
    /// Sekha's `auto_label`. With `set_folder`, the folder becomes Sekha's
    /// folder for the label ([`auto_label_folder`]); without, it is kept.
    /// Nothing is written when nothing qualifies.
    pub fn auto_label(
        &self,
        id: Uuid,
        model: Option<&dyn ChatModel>,
        threshold: f32,
        set_folder: bool,
    ) -> Result<AutoLabel> {
        if !(0.0..=1.0).contains(&threshold) {
            return Err(crate::error::Error::invalid(
                "threshold",
                format!("{threshold} is outside 0..=1"),
            ));
        }
        let s = self.suggest_labels(id, model)?;
        let mut notes = s.notes;
        let current = self.get_conversation(id)?;
        let Some(top) = s.top_suggestion else {
            notes.push("no label suggested; the label is unchanged".into());
            return Ok(AutoLabel {
                conversation_id: id,
                applied: false,
                label: current.label,
                folder: current.folder,
                confidence: None,
                model: s.model,
                notes,
            });
        };
        if top.confidence < threshold {
            notes.push(format!(
                "top suggestion {:?} has confidence {:.2} < {threshold}; the label is unchanged",
                top.label, top.confidence
            ));
            return Ok(AutoLabel {
                conversation_id: id,
                applied: false,
                label: current.label,
                folder: current.folder,
                confidence: Some(top.confidence),
                model: s.model,
                notes,
            });
        }
        let folder = set_folder.then(|| auto_label_folder(&top.label).to_string());
        let updated = self.update_conversation(
            id,
            crate::model::types::ConversationUpdate {
                label: Some(top.label.clone()),
                folder,
                ..Default::default()
            },
        )?;
        Ok(AutoLabel {
            conversation_id: id,
            applied: true,
            label: updated.label,
            folder: updated.folder,
            confidence: Some(top.confidence),
            model: s.model,
            notes,
        })
    }

    fn llm_labels(
        &self,
        model: &dyn ChatModel,
        conv: &ConversationRecord,
        texts: &[(String, String)],
        labels: &BTreeMap<String, LabelStats>,
    ) -> Result<Vec<LabelSuggestion>> {
        let existing: Vec<&str> = labels.keys().map(String::as_str).take(200).collect();
        let system = "You organize an AI assistant's long-term memory. Suggest 3 to 5 short labels \
                      (1-4 words) for the conversation. Prefer an existing label when one fits. \
                      Answer with a JSON array of objects {\"label\": string, \"confidence\": \
                      number 0..1, \"reason\": string} and nothing else.";
        let mut user = format!(
            "Existing labels: {}\n\nConversation:\n",
            existing.join(", ")
        );
        let mut n = 0;
        for (role, t) in texts {
            let line = format!("{role}: {t}\n");
            n += line.len();
            user.push_str(&line);
            if n > 8000 {
                break;
            }
        }
        let answer = model.complete(system, &user, 400)?;
        let mut out: Vec<LabelSuggestion> = Vec::new();
        let parsed: Option<Vec<serde_json::Value>> = answer
            .find('[')
            .zip(answer.rfind(']'))
            .and_then(|(a, b)| serde_json::from_str(answer.get(a..=b)?).ok());
        let items: Vec<(String, Option<f32>, Option<String>)> = match parsed {
            Some(v) => v
                .iter()
                .filter_map(|o| {
                    let label = o.get("label")?.as_str()?.trim().to_string();
                    let conf = o
                        .get("confidence")
                        .and_then(serde_json::Value::as_f64)
                        .map(|c| c as f32);
                    let reason = o.get("reason").and_then(|r| r.as_str()).map(str::to_string);
                    Some((label, conf, reason))
                })
                .collect(),
            // Sekha's format: a comma-separated list.
            None => answer
                .split([',', '\n'])
                .map(|s| {
                    s.trim()
                        .trim_matches(|c: char| c == '"' || c == '-' || c == '*')
                        .trim()
                        .to_string()
                })
                .map(|l| (l, None, None))
                .collect(),
        };
        for (label, conf, reason) in items {
            let Ok(label) = crate::model::validate::label("label", &label) else {
                continue;
            };
            if label.chars().count() > 60
                || out.iter().any(|s| s.label.eq_ignore_ascii_case(&label))
            {
                continue;
            }
            let stats = labels.get(&label);
            let is_existing = stats.is_some();
            let confidence = conf
                .filter(|c| c.is_finite())
                .map_or(if is_existing { 0.9 } else { 0.6 }, |c| c.clamp(0.0, 1.0));
            out.push(LabelSuggestion {
                folder: stats.map_or_else(|| conv.folder.clone(), LabelStats::top_folder),
                label,
                confidence,
                is_existing,
                reason: reason.unwrap_or_else(|| format!("suggested by {}", model.name())),
            });
            if out.len() == MAX_SUGGESTIONS {
                break;
            }
        }
        out.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
        Ok(out)
    }

    /// Importance of one message (SPEC.md §19.4). Reads only.
    pub fn score_message(
        &self,
        message_id: Uuid,
        model: Option<&dyn ChatModel>,
    ) -> Result<ImportanceScore> {
        let msg = self.get_message(message_id)?;
        let text = msg.content.text();
        let mut s = score_text(&text, model);
        s.message_id = Some(message_id);
        s.conversation_id = msg.conversation_id;
        Ok(s)
    }

    /// Importance of a conversation: `0.5·max + 0.5·mean` of its messages'
    /// heuristic scores (first 64 KiB of text), or the model's score of the
    /// whole text blended like a message's. Reads only.
    pub fn score_conversation(
        &self,
        conversation_id: Uuid,
        model: Option<&dyn ChatModel>,
    ) -> Result<ImportanceScore> {
        let (_, texts) = self.conversation_text(conversation_id.as_u128())?;
        if let Some(m) = model {
            let all: Vec<String> = texts.iter().map(|(r, t)| format!("{r}: {t}")).collect();
            let mut s = score_text(&all.join("\n"), Some(m));
            s.conversation_id = conversation_id;
            return Ok(s);
        }
        let scores: Vec<f32> = texts
            .iter()
            .map(|(_, t)| heuristic_importance(t).0)
            .collect();
        let max = scores.iter().copied().fold(1.0f32, f32::max);
        let mean = if scores.is_empty() {
            1.0
        } else {
            scores.iter().sum::<f32>() / scores.len() as f32
        };
        let score = ((0.5 * max + 0.5 * mean) * 10.0).round() / 10.0;
        let mut factors = BTreeMap::new();
        factors.insert("max".into(), max);
        factors.insert("mean".into(), mean);
        factors.insert("messages".into(), scores.len() as f32);
        Ok(ImportanceScore {
            message_id: None,
            conversation_id,
            importance_score: score.clamp(1.0, 10.0),
            factors,
            reasoning: format!(
                "0.5·max ({max}) + 0.5·mean ({mean:.2}) of {} messages",
                scores.len()
            ),
            model: "heuristic".into(),
            notes: Vec::new(),
        })
    }
}

/// Heuristic score, blended `0.3·heuristic + 0.7·model` when a model
/// answers with a number in 1..=10 (Sekha's blend).
fn score_text(text: &str, model: Option<&dyn ChatModel>) -> ImportanceScore {
    let (h, factors, reasoning) = heuristic_importance(text);
    let mut out = ImportanceScore {
        message_id: None,
        conversation_id: Uuid::nil(),
        importance_score: h,
        factors,
        reasoning,
        model: "heuristic".into(),
        notes: Vec::new(),
    };
    let Some(m) = model else { return out };
    let system = "Rate how important this text is to remember long-term for an AI assistant, \
                  from 1 (trivial) to 10 (critical). Answer with the number first, then one \
                  short sentence of reasons.";
    let excerpt: String = text.chars().take(8000).collect();
    match m.complete(system, &excerpt, 60) {
        Ok(answer) => match first_number(&answer).filter(|n| (1.0..=10.0).contains(n)) {
            Some(llm) => {
                let blended = ((0.3 * h + 0.7 * llm) * 10.0).round() / 10.0;
                out.factors =
                    BTreeMap::from([("heuristic".to_string(), h), ("llm".to_string(), llm)]);
                out.importance_score = blended.clamp(1.0, 10.0);
                out.reasoning = format!(
                    "0.3·heuristic ({h}) + 0.7·{} ({llm}): {}",
                    m.name(),
                    answer.trim()
                );
                out.model = m.name();
            }
            None => {
                let note = format!("{} gave no score in 1..=10; heuristic used", m.name());
                out.reasoning = format!("{}; {note}", out.reasoning);
                out.notes.push(note);
            }
        },
        Err(e) => {
            let note = format!("{} failed ({e}); heuristic used", m.name());
            out.reasoning = format!("{}; {note}", out.reasoning);
            out.notes.push(note);
        }
    }
    out
}

/// The heuristic suggestions (SPEC.md §19.4 gives the confidences).
fn heuristic_labels(
    conv: &ConversationRecord,
    texts: &[(String, String)],
    labels: &BTreeMap<String, LabelStats>,
    df: &HashMap<String, usize>,
    docs: usize,
) -> Vec<LabelSuggestion> {
    let all: String = texts
        .iter()
        .map(|(_, t)| t.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let mut tf: HashMap<String, usize> = HashMap::new();
    for w in content_words(&all) {
        *tf.entry(w).or_default() += 1;
    }
    let idf =
        |w: &str| ((docs as f64 + 1.0) / (df.get(w).copied().unwrap_or(0) as f64 + 1.0)).ln() + 1.0;
    let mut weighted: Vec<(String, f64)> = tf
        .iter()
        .map(|(w, &n)| (w.clone(), n as f64 * idf(w)))
        .collect();
    weighted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let max_w = weighted.first().map_or(1.0, |x| x.1).max(f64::MIN_POSITIVE);
    let max_tf = tf.values().copied().max().unwrap_or(1).max(1) as f64;
    let mut out: Vec<LabelSuggestion> = Vec::new();

    // Existing labels whose words the conversation uses.
    for (label, stats) in labels {
        let mut toks: Vec<String> = content_words(label);
        if toks.is_empty() {
            toks = words(label)
                .into_iter()
                .filter(|w| w.chars().count() >= 2)
                .collect();
        }
        toks.sort();
        toks.dedup();
        if toks.is_empty() {
            continue;
        }
        let matched: Vec<&String> = toks.iter().filter(|t| tf.contains_key(*t)).collect();
        if matched.is_empty() {
            continue;
        }
        let coverage = matched.len() as f64 / toks.len() as f64;
        let strength = matched
            .iter()
            .map(|t| tf.get(*t).copied().unwrap_or(0) as f64 / max_tf)
            .fold(0.0, f64::max);
        let confidence = (0.4 + 0.5 * coverage * (0.5 + 0.5 * strength)).min(0.95);
        out.push(LabelSuggestion {
            label: label.clone(),
            folder: stats.top_folder(),
            confidence: confidence as f32,
            is_existing: true,
            reason: format!(
                "existing label ({} conversation{}); this conversation mentions {}",
                stats.count,
                if stats.count == 1 { "" } else { "s" },
                matched
                    .iter()
                    .map(|m| format!("'{m}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }

    // Code blocks: the languages named, else "Programming".
    let (has_code, langs) = code_fences(&all);
    if has_code {
        let (label, reason, conf) = match langs.first() {
            Some(l) => (title_case(l), format!("contains {l} code blocks"), 0.65),
            None => (
                "Programming".to_string(),
                "contains code blocks".to_string(),
                0.55,
            ),
        };
        out.push(LabelSuggestion {
            label,
            folder: conv.folder.clone(),
            confidence: conf,
            is_existing: false,
            reason,
        });
    }

    // Distinctive words: the top two together, then each alone.
    let top: Vec<&(String, f64)> = weighted.iter().take(3).collect();
    let kw_conf = |w: f64| (0.3 + 0.3 * (w / max_w)) as f32;
    if top.len() >= 2 && top[1].1 >= 0.5 * top[0].1 {
        out.push(LabelSuggestion {
            label: format!("{} {}", title_case(&top[0].0), title_case(&top[1].0)),
            folder: conv.folder.clone(),
            confidence: kw_conf(top[1].1),
            is_existing: false,
            reason: format!(
                "most distinctive words: '{}', '{}' (TF-IDF)",
                top[0].0, top[1].0
            ),
        });
    }
    for (w, weight) in top {
        out.push(LabelSuggestion {
            label: title_case(w),
            folder: conv.folder.clone(),
            confidence: kw_conf(*weight) - 0.05,
            is_existing: false,
            reason: format!(
                "distinctive word '{w}' ({} mentions, TF-IDF)",
                tf.get(w).copied().unwrap_or(0)
            ),
        });
    }

    // Mostly questions.
    let user_msgs: Vec<&String> = texts
        .iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t)
        .collect();
    let questions = user_msgs
        .iter()
        .filter(|t| sentences(t).iter().any(|s| s.ends_with('?')))
        .count();
    if !user_msgs.is_empty() && questions * 2 >= user_msgs.len() {
        out.push(LabelSuggestion {
            label: "Questions".into(),
            folder: conv.folder.clone(),
            confidence: 0.35,
            is_existing: false,
            reason: format!(
                "{questions} of {} user messages ask questions",
                user_msgs.len()
            ),
        });
    }

    // A new label equal to an existing one is that existing label.
    for s in &mut out {
        if !s.is_existing
            && let Some((l, stats)) = labels
                .iter()
                .find(|(l, _)| l.eq_ignore_ascii_case(&s.label))
        {
            s.label = l.clone();
            s.is_existing = true;
            s.folder = stats.top_folder();
        }
    }
    out.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then(a.label.cmp(&b.label))
    });
    let mut seen = HashSet::new();
    out.retain(|s| s.label != conv.label && seen.insert(s.label.to_lowercase()));
    out.truncate(MAX_SUGGESTIONS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Systems;
    use crate::db::Memdb;
    use crate::error::Error;
    use crate::model::types::{NewConversation, NewMessage};
    use std::sync::Mutex;

    #[test]
    fn heuristic_importance_by_hand() {
        let (s, f, _) = heuristic_importance("ok thanks");
        assert_eq!(s, 4.0); // 5 − 1 (brevity)
        assert_eq!(f["brevity"], -1.0);
        let (s, _, _) = heuristic_importance("How do I configure the writer?");
        assert_eq!(s, 5.5); // 5 + 0.5
        let long_code = format!(
            "We decided this is urgent.\n```rust\nfn main() {{}}\n```\n{}",
            "x".repeat(100)
        );
        let (s, f, r) = heuristic_importance(&long_code);
        // 5 + 1 (length) + 2 (code) + 2 (urgency, decision)
        assert_eq!(s, 10.0);
        assert_eq!(f["keywords"], 2.0);
        assert!(r.contains("contains code"));
        // Clamped at 10.
        let (s, _, _) =
            heuristic_importance(&format!("{long_code} Important! Remember? Critical."));
        assert_eq!(s, 10.0);
    }

    #[test]
    fn first_number_reads_model_answers() {
        assert_eq!(first_number("8/10: decisions"), Some(8.0));
        assert_eq!(first_number("Score: 7.5."), Some(7.5));
        assert_eq!(first_number("none"), None);
    }

    fn store_conv(db: &Memdb, label: &str, folder: &str, texts: &[(&str, &str)]) -> Uuid {
        db.sekha()
            .create_conversation(
                NewConversation::new(
                    label,
                    texts.iter().map(|(r, t)| NewMessage::new(*r, *t)).collect(),
                )
                .in_folder(folder),
            )
            .unwrap()
            .conversation
            .id
    }

    #[test]
    fn suggests_existing_labels_code_and_keywords() {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        store_conv(
            &db,
            "Rust Lifetimes",
            "/work/rust",
            &[("user", "Explain lifetimes in Rust")],
        );
        store_conv(
            &db,
            "Gardening",
            "/home",
            &[("user", "When to plant tomatoes")],
        );
        store_conv(&db, "Cooking", "/home", &[("user", "A pasta recipe")]);
        let id = store_conv(
            &db,
            "Untitled",
            "/inbox",
            &[
                (
                    "user",
                    "Why does the borrow checker reject my Rust closure?",
                ),
                (
                    "assistant",
                    "The closure borrows the vector mutably.\n```rust\nlet v = vec![1];\n```",
                ),
                (
                    "user",
                    "And how do lifetimes interact with the borrow checker?",
                ),
            ],
        );
        let s = db.sekha().suggest_labels(id, None).unwrap();
        assert_eq!(s.model, "heuristic");
        assert!(s.suggestions.len() <= MAX_SUGGESTIONS);
        let top = s.top_suggestion.clone().unwrap();
        // Both words of "Rust Lifetimes" occur: the existing label wins, with its folder.
        assert_eq!(top.label, "Rust Lifetimes");
        assert!(top.is_existing);
        assert_eq!(top.folder, "/work/rust");
        assert!(top.confidence >= 0.7, "{top:?}");
        let labels: Vec<&str> = s.suggestions.iter().map(|x| x.label.as_str()).collect();
        assert!(labels.contains(&"Rust"), "{labels:?}"); // the code fence language
        assert!(
            labels.contains(&"Borrow Checker") || labels.contains(&"Borrow"),
            "{labels:?}"
        );
        assert!(!labels.contains(&"Gardening"));
        assert!(
            s.suggestions
                .windows(2)
                .all(|w| w[0].confidence >= w[1].confidence)
        );
        // Unknown conversation.
        assert!(matches!(
            db.sekha().suggest_labels(Uuid::new_v4(), None),
            Err(Error::NotFound { .. })
        ));
    }

    struct Fixed(Result<String>, Mutex<usize>);
    impl ChatModel for Fixed {
        fn complete(&self, _s: &str, _u: &str, _m: u32) -> Result<String> {
            *self.1.lock().unwrap() += 1;
            match &self.0 {
                Ok(s) => Ok(s.clone()),
                Err(_) => Err(Error::invalid("model", "unreachable")),
            }
        }
        fn name(&self) -> String {
            "fixed".into()
        }
    }

    #[test]
    fn llm_labels_and_scores_with_fallbacks() {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        store_conv(&db, "Gardening", "/home", &[("user", "tomatoes")]);
        let id = store_conv(&db, "x", "/", &[("user", "Plant basil next to tomatoes?")]);
        let m = Fixed(
            Ok(r#"Sure: [{"label":"Gardening","confidence":0.8,"reason":"plants"},{"label":"Herbs"}]"#.into()),
            Mutex::new(0),
        );
        let s = db.sekha().suggest_labels(id, Some(&m)).unwrap();
        assert_eq!(s.model, "fixed");
        assert_eq!(s.suggestions.len(), 2);
        assert_eq!(s.suggestions[0].label, "Gardening");
        assert!(s.suggestions[0].is_existing);
        assert_eq!(s.suggestions[0].folder, "/home");
        assert_eq!(s.suggestions[1].confidence, 0.6); // new label without confidence
        // Sekha's comma list is read too.
        let m = Fixed(Ok("Herbs, Gardening".into()), Mutex::new(0));
        let s = db.sekha().suggest_labels(id, Some(&m)).unwrap();
        assert_eq!(s.suggestions[0].label, "Gardening");
        assert_eq!(s.suggestions[0].confidence, 0.9);
        // A failing model: heuristic, with a note.
        let m = Fixed(Err(Error::invalid("x", "y")), Mutex::new(0));
        let s = db.sekha().suggest_labels(id, Some(&m)).unwrap();
        assert_eq!(s.model, "heuristic");
        assert!(s.notes[0].contains("fixed failed"));
        // Scores: 0.3 · 5.5 + 0.7 · 9 = 7.95 → 8.0 (one decimal).
        let mid = db
            .sekha()
            .get_conversation_with_messages(id)
            .unwrap()
            .messages[0]
            .id;
        let m = Fixed(Ok("9 - a preference worth keeping".into()), Mutex::new(0));
        let sc = db.sekha().score_message(mid, Some(&m)).unwrap();
        assert_eq!(sc.importance_score, 8.0);
        assert_eq!(sc.factors["llm"], 9.0);
        assert_eq!(sc.message_id, Some(mid));
        assert_eq!(sc.conversation_id, id);
        let m = Fixed(Ok("eleven".into()), Mutex::new(0));
        let sc = db.sekha().score_message(mid, Some(&m)).unwrap();
        assert_eq!(sc.importance_score, 5.5);
        assert_eq!(sc.model, "heuristic");
        let sc = db.sekha().score_conversation(id, None).unwrap();
        assert_eq!(sc.importance_score, 5.5);
        assert!(matches!(
            db.sekha().score_message(Uuid::new_v4(), None),
            Err(Error::NotFound { .. })
        ));
    }
}
