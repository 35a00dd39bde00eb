//! The benchmark corpus: conversations of timestamped messages.
//!
//! The real corpus is the Chit Chat Challenge dataset (PyPI
//! `chitchat-dataset` 0.9.0, MIT): 7,168 conversations, 258,145 messages,
//! fetched into `benches/data/` by `benches/fetch-data.sh`. Each chitchat
//! conversation becomes one conversation labelled with its prompt, in folder
//! [`FOLDER`]; its two senders become roles `user` (who spoke first) and
//! `assistant`. Messages whose text is blank are dropped (memdb refuses empty
//! content), so the loaded corpus is a little under 258,145 messages.
//!
//! Without the data file, [`generate`] makes deterministic text with a
//! Zipf-like word distribution, so benchmarks still run (with different
//! numbers: real chat text has a very different vocabulary).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use chrono::{DateTime, TimeZone as _, Utc};
use serde::Deserialize;

use crate::Rng;

/// Folder of every benchmark conversation.
pub const FOLDER: &str = "/chitchat";

/// memdb's label limit, in bytes.
const MAX_LABEL_BYTES: usize = 500;

/// One message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Non-blank text.
    pub text: String,
    /// When it was sent, if the source says.
    pub timestamp: Option<DateTime<Utc>>,
}

/// One conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// Human label (at most 500 bytes, no control characters).
    pub label: String,
    /// Folder path.
    pub folder: String,
    /// At least one message, oldest first.
    pub messages: Vec<Message>,
}

impl Conversation {
    /// The conversation as memdb's input: its label, folder and messages
    /// with their roles and timestamps.
    pub fn to_new(&self) -> memdb::NewConversation {
        let messages = self
            .messages
            .iter()
            .map(|m| memdb::NewMessage {
                timestamp: m.timestamp,
                ..memdb::NewMessage::new(m.role, m.text.as_str())
            })
            .collect();
        memdb::NewConversation::new(self.label.as_str(), messages).in_folder(self.folder.as_str())
    }
}

/// A list of conversations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Corpus {
    /// The conversations, in a fixed order.
    pub conversations: Vec<Conversation>,
    /// Where it came from (for reports): `chitchat` or `generated`.
    pub source: &'static str,
}

impl Corpus {
    /// Number of messages over all conversations.
    pub fn message_count(&self) -> usize {
        self.conversations.iter().map(|c| c.messages.len()).sum()
    }

    /// Every message, conversation by conversation.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.conversations.iter().flat_map(|c| c.messages.iter())
    }

    /// A corpus of exactly `n` messages: the conversations in order, cycling
    /// through the corpus as often as needed (copies get a ` #2`, ` #3`...
    /// label suffix; the stores give them new ids), the last one truncated.
    pub fn sized(&self, n: usize) -> Corpus {
        let mut out = Corpus {
            conversations: Vec::new(),
            source: self.source,
        };
        if self.message_count() == 0 {
            return out;
        }
        let mut left = n;
        let mut round = 1;
        while left > 0 {
            for c in &self.conversations {
                if left == 0 {
                    break;
                }
                let take = c.messages.len().min(left);
                left -= take;
                let label = if round == 1 {
                    c.label.clone()
                } else {
                    clip_label(&format!("{} #{round}", c.label), &format!(" #{round}"))
                };
                out.conversations.push(Conversation {
                    label,
                    folder: c.folder.clone(),
                    messages: c.messages[..take].to_vec(),
                });
            }
            round += 1;
        }
        out
    }
}

/// Where `benches/fetch-data.sh` puts the chitchat dataset.
pub fn default_data_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/dataset.json")
}

#[derive(Deserialize)]
struct RawConversation {
    messages: Vec<Vec<RawMessage>>,
    #[serde(default)]
    prompt: Option<String>,
}

#[derive(Deserialize)]
struct RawMessage {
    text: String,
    #[serde(default)]
    timestamp: Option<String>,
    sender: String,
}

/// Loads chitchat's `dataset.json`. Conversations come in key order, so the
/// corpus is the same on every run.
pub fn load_chitchat(path: &Path) -> anyhow::Result<Corpus> {
    let bytes = std::fs::read(path).with_context(|| {
        format!(
            "reading {} (run benches/fetch-data.sh to fetch it)",
            path.display()
        )
    })?;
    let raw: BTreeMap<String, RawConversation> =
        serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))?;
    let mut conversations = Vec::with_capacity(raw.len());
    for (key, conv) in raw {
        let mut first_sender: Option<String> = None;
        let mut messages = Vec::new();
        for m in conv.messages.into_iter().flatten() {
            if m.text.trim().is_empty() {
                continue;
            }
            let first = first_sender.get_or_insert_with(|| m.sender.clone());
            let role = if *first == m.sender {
                "user"
            } else {
                "assistant"
            };
            let timestamp = m
                .timestamp
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc));
            messages.push(Message {
                role,
                text: m.text,
                timestamp,
            });
        }
        if messages.is_empty() {
            continue;
        }
        let prompt = conv
            .prompt
            .as_deref()
            .map(|p| p.replace(char::is_control, " "))
            .filter(|p| !p.trim().is_empty());
        let label = match prompt {
            Some(p) => clip_label(p.trim(), ""),
            None => format!("chitchat {}", key.get(..8).unwrap_or(&key)),
        };
        conversations.push(Conversation {
            label,
            folder: FOLDER.to_string(),
            messages,
        });
    }
    Ok(Corpus {
        conversations,
        source: "chitchat",
    })
}

/// `label` cut to memdb's 500-byte limit on a character boundary, keeping
/// `suffix` (which `label` ends with) intact.
fn clip_label(label: &str, suffix: &str) -> String {
    if label.len() <= MAX_LABEL_BYTES {
        return label.to_string();
    }
    let head = &label[..label.len() - suffix.len()];
    let mut end = MAX_LABEL_BYTES - suffix.len();
    while !head.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", head[..end].trim_end())
}

/// The chitchat corpus when `path` exists, else [`generate`]d text of
/// `fallback_messages` messages.
pub fn load_or_generate(path: &Path, fallback_messages: usize) -> anyhow::Result<Corpus> {
    if path.exists() {
        load_chitchat(path)
    } else {
        Ok(generate(fallback_messages, 42))
    }
}

/// Deterministic chat-like text: `n` messages in conversations of 10 to 60
/// messages, 3 to 30 words each, words drawn from a 20,000-word invented
/// vocabulary with Zipf (s = 1.07) frequencies, as in natural text.
pub fn generate(n: usize, seed: u64) -> Corpus {
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "ren", "sa", "tu", "vel", "dor", "an", "is", "po", "qua", "ter", "ly",
        "ne", "cho", "bri", "sta", "gu", "fen", "ox", "um", "zi", "ha", "pe", "rol", "mas", "din",
        "cor", "eth",
    ];
    const VOCAB: usize = 20_000;
    let mut rng = Rng::new(seed);
    let mut seen = HashMap::new();
    let mut vocab = Vec::with_capacity(VOCAB);
    while vocab.len() < VOCAB {
        let parts = 1 + rng.below(4);
        let w: String = (0..parts)
            .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
            .collect();
        if w.len() >= 3 && seen.insert(w.clone(), ()).is_none() {
            vocab.push(w);
        }
    }
    let mut cdf = Vec::with_capacity(VOCAB);
    let mut acc = 0.0;
    for rank in 1..=VOCAB {
        acc += 1.0 / (rank as f64).powf(1.07);
        cdf.push(acc);
    }
    let word = |rng: &mut Rng| -> &str {
        let x = rng.unit() * acc;
        let i = cdf.partition_point(|&c| c < x).min(VOCAB - 1);
        &vocab[i]
    };
    let base = Utc
        .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    let mut conversations = Vec::new();
    let mut made = 0;
    let mut t = 0i64;
    while made < n {
        let len = (10 + rng.below(51)).min(n - made);
        let label = format!(
            "topic {}: {} {}",
            conversations.len(),
            word(&mut rng),
            word(&mut rng)
        );
        let messages = (0..len)
            .map(|i| {
                let words = 3 + rng.below(28);
                let text = (0..words)
                    .map(|_| word(&mut rng))
                    .collect::<Vec<_>>()
                    .join(" ");
                t += 1 + rng.below(120) as i64;
                Message {
                    role: if i % 2 == 0 { "user" } else { "assistant" },
                    text,
                    timestamp: Some(base + chrono::Duration::seconds(t)),
                }
            })
            .collect();
        made += len;
        conversations.push(Conversation {
            label,
            folder: FOLDER.to_string(),
            messages,
        });
    }
    Corpus {
        conversations,
        source: "generated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_is_deterministic_and_sized() {
        let a = generate(1000, 1);
        assert_eq!(a.message_count(), 1000);
        assert_eq!(a, generate(1000, 1));
        assert_ne!(a, generate(1000, 2));
        let big = a.sized(2500);
        assert_eq!(big.message_count(), 2500);
        assert!(big.conversations.iter().any(|c| c.label.ends_with(" #3")));
        assert_eq!(a.sized(10).message_count(), 10);
    }

    #[test]
    fn labels_are_clipped_on_char_boundaries() {
        let long = "é".repeat(400);
        let clipped = clip_label(&format!("{long} #2"), " #2");
        assert!(clipped.len() <= MAX_LABEL_BYTES);
        assert!(clipped.ends_with(" #2"));
        assert_eq!(clip_label("short", ""), "short");
    }

    #[test]
    fn chitchat_shape() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.json");
        std::fs::write(
            &path,
            r#"{"b": {"messages": [[{"text": "hi there", "timestamp": "2018-05-02T19:38:15Z", "sender": "x"}],
                                  [{"text": "  ", "timestamp": "2018-05-02T19:38:16Z", "sender": "y"},
                                   {"text": "hello", "timestamp": "2018-05-02T19:38:17Z", "sender": "y"}]],
                   "prompt": "Say hi", "start": "2018-05-02T19:38:00Z"},
                "a": {"messages": [[{"text": "x", "sender": "q"}]]}}"#,
        )
        .expect("write");
        let c = load_chitchat(&path).expect("load");
        assert_eq!(c.conversations.len(), 2);
        assert_eq!(c.conversations[0].label, "chitchat a");
        let b = &c.conversations[1];
        assert_eq!(b.label, "Say hi");
        assert_eq!(b.folder, FOLDER);
        assert_eq!(b.messages.len(), 2);
        assert_eq!(b.messages[0].role, "user");
        assert_eq!(b.messages[1].role, "assistant");
        assert!(b.messages[1].timestamp.is_some());
    }
}
