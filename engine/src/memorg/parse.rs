//! An exchange message's parsed content as Memorg documents it
//! (`ParsedContent`: entities, intents, sentiment), SPEC.md §14.3.
//!
//! Memorg 0.1.2 declares the fields and never fills them: every message is
//! stored with `ParsedContent(entities=[], intents=[], sentiment=None)`,
//! and the only entity extraction it runs is a gpt-4o-mini call on search
//! queries. Here [`Heuristic`] fills all three, deterministically and
//! without a model, in time linear in the text:
//! - entities: runs of capitalized words (joined by `of`, `de`, `the`,
//!   `for`, `&`; skipping a sentence's first word when it is a function
//!   word), acronyms, `@handles` and `#hashtags`,
//!   typed by cues (titles → person, corporate suffixes and acronyms →
//!   organization, a preceding `in`/`at`/`from`/... → location, event
//!   nouns → event, a single word → concept), salience = mentions / the
//!   most-mentioned entity's mentions;
//! - intents: question, request, greeting, thanks, farewell, decision,
//!   else statement;
//! - sentiment: a small lexicon with negation, reported as VADER-style
//!   `positive`, `negative`, `neutral` proportions and a `compound` score.
//!
//! A model can stand in through [`ContentParser`]; [`entities_from_json`]
//! reads the answer shapes Memorg's query processor accepts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::util::keywords::is_function_word;

/// Most entities kept per message (most salient first).
pub const MAX_ENTITIES: usize = 64;
/// Most characters of a message the heuristic reads.
pub const MAX_PARSE_CHARS: usize = 256 * 1024;
/// VADER's normalization constant for the compound score.
const COMPOUND_ALPHA: f64 = 15.0;

/// Memorg's `EntityType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityType {
    /// A person.
    Person,
    /// A company, institution or team.
    Organization,
    /// A place.
    Location,
    /// A concept, product or technology.
    Concept,
    /// An event.
    Event,
    /// Anything else.
    Other,
}

impl EntityType {
    /// Reads a type name case-insensitively (`"PERSON"`, `"person"`, and the
    /// common model spellings `ORG`, `GPE`, `LOC`); unknown → `Other`.
    pub fn lenient(s: &str) -> EntityType {
        match s.trim().to_ascii_lowercase().as_str() {
            "person" | "per" | "people" => EntityType::Person,
            "organization" | "organisation" | "org" | "company" => EntityType::Organization,
            "location" | "loc" | "gpe" | "place" => EntityType::Location,
            "concept" | "technology" | "product" => EntityType::Concept,
            "event" => EntityType::Event,
            _ => EntityType::Other,
        }
    }
}

/// Memorg's `Entity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// The name as written at its first mention.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    /// 0..=1: mentions relative to the most-mentioned entity (1.0 for a
    /// model's entities, as Memorg sets it).
    pub salience: f64,
    /// Free-form details (`mentions` for heuristic entities).
    #[serde(default)]
    pub metadata: serde_json::Map<String, Value>,
}

impl Entity {
    /// An entity known only by its name (type `other`, salience 1), as a
    /// caller names the entities `optimize_context` must preserve.
    pub fn named(name: &str) -> Entity {
        Entity {
            name: name.trim().to_string(),
            entity_type: EntityType::Other,
            salience: 1.0,
            metadata: serde_json::Map::new(),
        }
    }
}

/// Memorg's `ParsedContent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ParsedContent {
    /// Entities, most salient first.
    pub entities: Vec<Entity>,
    /// Intent labels, in the order of [`Intent`].
    pub intents: Vec<String>,
    /// `positive`, `negative`, `neutral` (proportions summing to 1) and
    /// `compound` (-1..=1).
    pub sentiment: BTreeMap<String, f64>,
}

/// The intent labels the heuristic emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Asks something.
    Question,
    /// Asks for an action ("please", "can you", an imperative).
    Request,
    /// Hello.
    Greeting,
    /// Thanks.
    Thanks,
    /// Goodbye.
    Farewell,
    /// States a decision or commitment.
    Decision,
    /// None of the above.
    Statement,
}

impl Intent {
    /// The label.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Question => "question",
            Intent::Request => "request",
            Intent::Greeting => "greeting",
            Intent::Thanks => "thanks",
            Intent::Farewell => "farewell",
            Intent::Decision => "decision",
            Intent::Statement => "statement",
        }
    }
}

/// Something that parses a message. The engine's default is
/// [`Heuristic`]; a model-backed parser implements this too and may fall
/// back to the heuristic when its answer cannot be read.
pub trait ContentParser: Send + Sync {
    /// Parses one message.
    fn parse(&self, text: &str) -> Result<ParsedContent>;
    /// A name for notes and provenance (`heuristic`, a model name).
    fn name(&self) -> &str;
}

/// The deterministic, model-free parser.
#[derive(Debug, Clone, Copy, Default)]
pub struct Heuristic;

impl ContentParser for Heuristic {
    fn parse(&self, text: &str) -> Result<ParsedContent> {
        Ok(parse_content(text))
    }

    fn name(&self) -> &str {
        "heuristic"
    }
}

/// Parses `text` with the heuristic (infallible; reads at most
/// [`MAX_PARSE_CHARS`] characters).
pub fn parse_content(text: &str) -> ParsedContent {
    let text = match text.char_indices().nth(MAX_PARSE_CHARS) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    let tokens = tokenize(text);
    ParsedContent {
        entities: extract_entities(&tokens),
        intents: intents(text, &tokens)
            .into_iter()
            .map(|i| i.as_str().to_string())
            .collect(),
        sentiment: sentiment(&tokens),
    }
}

/// A query's terms as Memorg's `SimpleQueryProcessor` makes them: the
/// lowercased whitespace-separated tokens, deduplicated. (Memorg goes
/// through a Python `set`, so its order is arbitrary; here it is first
/// occurrence.)
pub fn query_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query.split_whitespace() {
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// Reads a model's entity answer in every shape Memorg's query processor
/// accepts: a JSON list of `{name, type}`, one `{name, type}` object, or
/// `{"entities": [...]}`. Elements without a string `name` are skipped,
/// types are read with [`EntityType::lenient`], salience is 1.0. An answer
/// that is not JSON, or JSON of another shape, is an error (Memorg logs
/// and returns no entities; the caller may fall back to the heuristic).
pub fn entities_from_json(answer: &str) -> Result<Vec<Entity>> {
    let trimmed = strip_code_fence(answer.trim());
    let v: Value = serde_json::from_str(trimmed)
        .map_err(|e| Error::invalid("entities", format!("the answer is not JSON: {e}")))?;
    let items: Vec<Value> = match v {
        Value::Array(a) => a,
        Value::Object(o) if o.contains_key("name") && o.contains_key("type") => {
            vec![Value::Object(o)]
        }
        Value::Object(mut o) => match o.remove("entities") {
            Some(Value::Array(a)) => a,
            _ => {
                return Err(Error::invalid(
                    "entities",
                    "expected a list of {name, type}, one such object, or {\"entities\": [...]}",
                ));
            }
        },
        _ => {
            return Err(Error::invalid(
                "entities",
                "expected a list of {name, type}, one such object, or {\"entities\": [...]}",
            ));
        }
    };
    let mut out: Vec<Entity> = Vec::new();
    for item in items {
        let Some(name) = item.get("name").and_then(Value::as_str).map(str::trim) else {
            continue;
        };
        if name.is_empty() || out.iter().any(|e| e.name == name) {
            continue;
        }
        let entity_type = item
            .get("type")
            .and_then(Value::as_str)
            .map_or(EntityType::Other, EntityType::lenient);
        out.push(Entity {
            name: name.to_string(),
            entity_type,
            salience: 1.0,
            metadata: serde_json::Map::new(),
        });
        if out.len() == MAX_ENTITIES {
            break;
        }
    }
    Ok(out)
}

fn strip_code_fence(s: &str) -> &str {
    let Some(rest) = s.strip_prefix("```") else {
        return s;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// A word of the text with what the heuristics need around it.
#[derive(Debug)]
struct Token<'a> {
    text: &'a str,
    lower: String,
    /// First word of a sentence.
    sentence_start: bool,
    /// Followed directly by punctuation that ends a phrase (`,.;:!?`).
    phrase_end: bool,
}

fn tokenize(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let trimmed = raw.trim_matches(|c: char| {
            !(c.is_alphanumeric() || matches!(c, '@' | '#' | '+' | '_' | '-' | '\''))
        });
        let trimmed = trimmed.trim_end_matches(['\'', '-']);
        // "Dr." and its kind end no sentence.
        let abbreviation = raw.ends_with('.') && TITLES.contains(&trimmed.to_lowercase().as_str());
        let ends = !abbreviation
            && raw
                .trim_end_matches(['"', '\'', ')', ']'])
                .ends_with(['.', '!', '?']);
        let phrase_end = ends || raw.ends_with([',', ';', ':']);
        if !trimmed.is_empty() {
            out.push(Token {
                text: trimmed,
                lower: trimmed.to_lowercase(),
                sentence_start,
                phrase_end,
            });
            sentence_start = false;
        }
        if ends {
            sentence_start = true;
        }
    }
    out
}

const TITLES: &[&str] = &[
    "mr",
    "mrs",
    "ms",
    "miss",
    "dr",
    "prof",
    "professor",
    "sir",
    "madam",
    "president",
    "ceo",
    "senator",
    "judge",
    "captain",
];
const ORG_SUFFIXES: &[&str] = &[
    "inc",
    "corp",
    "corporation",
    "ltd",
    "llc",
    "gmbh",
    "company",
    "co",
    "foundation",
    "university",
    "institute",
    "labs",
    "group",
    "team",
    "agency",
    "bank",
    "association",
];
const LOCATION_CUES: &[&str] = &[
    "in", "at", "from", "to", "near", "into", "visiting", "visit", "across",
];
const EVENT_WORDS: &[&str] = &[
    "conference",
    "summit",
    "meeting",
    "festival",
    "war",
    "election",
    "olympics",
    "launch",
    "release",
    "hackathon",
    "expo",
    "championship",
    "cup",
];
const CALENDAR_WORDS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "today",
    "tomorrow",
    "yesterday",
];
/// Capitalized words that start sentences without naming anything.
const NOT_NAMES: &[&str] = &[
    "please", "thanks", "thank", "hello", "hi", "hey", "yes", "no", "ok", "okay", "sure", "also",
    "however", "let", "lets", "let's", "can", "could", "would", "should", "will", "great", "good",
    "well", "so", "but", "and", "or", "if", "then", "when", "where", "why", "how", "what", "which",
    "who", "i", "i'm", "i've", "i'd", "i'll", "im", "tell", "show", "explain", "give", "write",
    "list", "find", "help", "make", "create", "add", "use", "sorry", "maybe", "perhaps", "here",
    "there", "now", "first", "next", "finally", "note", "see",
];

fn is_capitalized(t: &Token<'_>) -> bool {
    let mut chars = t.text.chars();
    chars.next().is_some_and(char::is_uppercase) && t.text.chars().any(char::is_alphabetic)
}

fn is_acronym(t: &Token<'_>) -> bool {
    let letters = t.text.chars().filter(|c| c.is_alphabetic()).count();
    (2..=6).contains(&letters)
        && t.text
            .chars()
            .all(|c| c.is_uppercase() || c.is_ascii_digit() || c == '&')
}

/// A small word that may sit inside a name, not at a phrase end.
fn is_joiner(t: &Token<'_>) -> bool {
    matches!(t.lower.as_str(), "of" | "de" | "the" | "&" | "for") && !t.phrase_end
}

fn can_name(t: &Token<'_>) -> bool {
    if !is_capitalized(t) || CALENDAR_WORDS.contains(&t.lower.as_str()) {
        return false;
    }
    if t.sentence_start {
        return !is_function_word(&t.lower) && !NOT_NAMES.contains(&t.lower.as_str());
    }
    // "I" mid-sentence is capitalized and names nobody.
    !matches!(t.lower.as_str(), "i" | "i'm" | "i've" | "i'd" | "i'll")
}

struct Found {
    name: String,
    key: String,
    entity_type: EntityType,
    mentions: usize,
    first: usize,
}

fn extract_entities(tokens: &[Token<'_>]) -> Vec<Entity> {
    let mut found: Vec<Found> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        // Handles and hashtags name things wherever they stand.
        if (t.text.starts_with('@') || t.text.starts_with('#')) && t.text.chars().count() > 1 {
            let ty = if t.text.starts_with('@') {
                EntityType::Person
            } else {
                EntityType::Concept
            };
            record(&mut found, t.text.to_string(), ty, i);
            i += 1;
            continue;
        }
        if !can_name(t) {
            i += 1;
            continue;
        }
        // A run of capitalized words (allowing "of"/"de"/"the"/"and"/"&"
        // inside), ended by punctuation.
        let start = i;
        let mut end = i + 1;
        if !t.phrase_end {
            let mut j = i + 1;
            while j < tokens.len() {
                let u = &tokens[j];
                if is_capitalized(u) && !CALENDAR_WORDS.contains(&u.lower.as_str()) {
                    end = j + 1;
                    if u.phrase_end {
                        break;
                    }
                    j += 1;
                } else if is_joiner(u) {
                    // "Bank of the West": joiners then a capitalized word.
                    let mut k = j;
                    while tokens.get(k).is_some_and(is_joiner) {
                        k += 1;
                    }
                    if tokens.get(k).is_some_and(is_capitalized) {
                        j = k;
                    } else {
                        break;
                    }
                } else {
                    break;
                }
            }
        }
        let words = &tokens[start..end];
        let name = words.iter().map(|w| w.text).collect::<Vec<_>>().join(" ");
        let prev = start.checked_sub(1).map(|p| tokens[p].lower.as_str());
        let ty = classify(words, prev);
        // A title itself is not part of the name.
        let (name, ty) = match words {
            [first, rest @ ..] if !rest.is_empty() && TITLES.contains(&first.lower.as_str()) => (
                rest.iter().map(|w| w.text).collect::<Vec<_>>().join(" "),
                EntityType::Person,
            ),
            _ => (name, ty),
        };
        record(&mut found, name, ty, start);
        i = end;
    }
    let max = found.iter().map(|f| f.mentions).max().unwrap_or(1).max(1);
    found.sort_by(|a, b| b.mentions.cmp(&a.mentions).then(a.first.cmp(&b.first)));
    found.truncate(MAX_ENTITIES);
    found
        .into_iter()
        .map(|f| {
            let mut metadata = serde_json::Map::new();
            metadata.insert("mentions".into(), Value::from(f.mentions));
            Entity {
                name: f.name,
                entity_type: f.entity_type,
                salience: f.mentions as f64 / max as f64,
                metadata,
            }
        })
        .collect()
}

fn record(found: &mut Vec<Found>, name: String, ty: EntityType, at: usize) {
    let key = name.to_lowercase();
    if let Some(f) = found.iter_mut().find(|f| f.key == key) {
        f.mentions += 1;
        // A later, more specific cue wins over `Other`/`Concept`.
        if matches!(f.entity_type, EntityType::Other | EntityType::Concept)
            && !matches!(ty, EntityType::Other | EntityType::Concept)
        {
            f.entity_type = ty;
        }
        return;
    }
    found.push(Found {
        name,
        key,
        entity_type: ty,
        mentions: 1,
        first: at,
    });
}

fn classify(words: &[Token<'_>], prev: Option<&str>) -> EntityType {
    let first = words.first().map(|w| w.lower.as_str()).unwrap_or_default();
    let last = words.last().map(|w| w.lower.as_str()).unwrap_or_default();
    if TITLES.contains(&first) || prev.is_some_and(|p| TITLES.contains(&p.trim_end_matches('.'))) {
        return EntityType::Person;
    }
    if ORG_SUFFIXES.contains(&last.trim_end_matches('.'))
        || (words.len() == 1 && is_acronym(&words[0]))
    {
        return EntityType::Organization;
    }
    if EVENT_WORDS.contains(&last) {
        return EntityType::Event;
    }
    if prev.is_some_and(|p| LOCATION_CUES.contains(&p)) {
        return EntityType::Location;
    }
    if words.len() == 1 {
        EntityType::Concept
    } else {
        EntityType::Other
    }
}

const QUESTION_STARTS: &[&str] = &[
    "what", "why", "how", "when", "where", "who", "whom", "whose", "which", "is", "are", "do",
    "does", "did", "can", "could", "would", "should", "will", "shall", "may", "might", "have",
    "has", "was", "were",
];
const IMPERATIVES: &[&str] = &[
    "show",
    "explain",
    "give",
    "write",
    "list",
    "find",
    "help",
    "make",
    "create",
    "add",
    "tell",
    "describe",
    "summarize",
    "summarise",
    "fix",
    "generate",
    "compare",
    "translate",
    "draft",
    "send",
    "remind",
    "check",
    "update",
    "delete",
    "remove",
    "build",
    "implement",
    "book",
];
const GREETINGS: &[&str] = &["hello", "hi", "hey", "greetings", "howdy", "hiya"];

fn intents(text: &str, tokens: &[Token<'_>]) -> Vec<Intent> {
    let lower = text.to_lowercase();
    let has = |p: &str| contains_phrase(&lower, p);
    let mut out = Vec::new();
    let first = tokens.first().map(|t| t.lower.as_str()).unwrap_or_default();
    if GREETINGS.contains(&first)
        || has("good morning")
        || has("good afternoon")
        || has("good evening")
    {
        out.push(Intent::Greeting);
    }
    let sentence_starts = tokens
        .iter()
        .filter(|t| t.sentence_start)
        .map(|t| t.lower.as_str());
    let mut question = text.contains('?');
    let mut request = has("please")
        || has("can you")
        || has("could you")
        || has("would you")
        || has("i need")
        || has("i want")
        || has("help me");
    for s in sentence_starts {
        question |= QUESTION_STARTS.contains(&s) && text.contains('?');
        request |= IMPERATIVES.contains(&s);
    }
    if question {
        out.push(Intent::Question);
    }
    if request {
        out.push(Intent::Request);
    }
    if has("thank") || has("thanks") || has("thx") || has("appreciate it") {
        out.push(Intent::Thanks);
    }
    if has("bye") || has("goodbye") || has("see you") || has("good night") {
        out.push(Intent::Farewell);
    }
    if has("decided")
        || has("we will")
        || has("i will")
        || has("let's go with")
        || has("lets go with")
        || has("we'll")
        || has("going with")
        || has("agreed")
        || has("decision")
    {
        out.push(Intent::Decision);
    }
    if out.is_empty() {
        out.push(Intent::Statement);
    }
    out
}

/// Whether `needle` occurs in `hay` at word boundaries.
fn contains_phrase(hay: &str, needle: &str) -> bool {
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        let s = from + i;
        let e = s + needle.len();
        let before = hay[..s]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        let after = hay[e..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return true;
        }
        from = s + needle.chars().next().map_or(1, char::len_utf8);
    }
    false
}

const POSITIVE: &[&str] = &[
    "good",
    "great",
    "excellent",
    "amazing",
    "awesome",
    "love",
    "like",
    "liked",
    "happy",
    "glad",
    "nice",
    "wonderful",
    "perfect",
    "thanks",
    "thank",
    "helpful",
    "works",
    "working",
    "fixed",
    "best",
    "better",
    "fantastic",
    "pleased",
    "enjoy",
    "enjoyed",
    "success",
    "successful",
    "cool",
    "brilliant",
    "excited",
    "beautiful",
    "correct",
    "easy",
    "fast",
    "clear",
    "useful",
    "solved",
];
const NEGATIVE: &[&str] = &[
    "bad",
    "terrible",
    "awful",
    "hate",
    "hated",
    "sad",
    "angry",
    "annoyed",
    "broken",
    "bug",
    "error",
    "fail",
    "failed",
    "fails",
    "failure",
    "wrong",
    "worse",
    "worst",
    "slow",
    "problem",
    "issue",
    "crash",
    "crashed",
    "crashes",
    "confusing",
    "confused",
    "difficult",
    "hard",
    "ugly",
    "disappointed",
    "frustrated",
    "frustrating",
    "poor",
    "useless",
    "stuck",
    "unfortunately",
    "sorry",
    "painful",
    "horrible",
];
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don't", "doesn't", "didn't", "isn't", "wasn't", "aren't", "can't",
    "cannot", "won't", "nothing", "hardly", "without", "dont", "doesnt", "didnt", "isnt",
];

fn sentiment(tokens: &[Token<'_>]) -> BTreeMap<String, f64> {
    let (mut pos, mut neg, mut total) = (0usize, 0usize, 0usize);
    for (i, t) in tokens.iter().enumerate() {
        let w = t
            .lower
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
        if w.is_empty() {
            continue;
        }
        total += 1;
        let polarity = if POSITIVE.contains(&w) {
            1i8
        } else if NEGATIVE.contains(&w) {
            -1
        } else {
            0
        };
        if polarity == 0 {
            continue;
        }
        // A negation among the three words before flips the polarity.
        let negated = tokens[i.saturating_sub(3)..i]
            .iter()
            .any(|p| NEGATIONS.contains(&p.lower.as_str()));
        match (polarity > 0) != negated {
            true => pos += 1,
            false => neg += 1,
        }
    }
    let mut out = BTreeMap::new();
    let (p, n) = if total == 0 {
        (0.0, 0.0)
    } else {
        (pos as f64 / total as f64, neg as f64 / total as f64)
    };
    out.insert("positive".to_string(), p);
    out.insert("negative".to_string(), n);
    out.insert("neutral".to_string(), 1.0 - p - n);
    let raw = pos as f64 - neg as f64;
    out.insert(
        "compound".to_string(),
        raw / (raw * raw + COMPOUND_ALPHA).sqrt(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &ParsedContent) -> Vec<(&str, EntityType)> {
        p.entities
            .iter()
            .map(|e| (e.name.as_str(), e.entity_type))
            .collect()
    }

    #[test]
    fn entities_are_found_and_typed_by_cues() {
        let p = parse_content(
            "Yesterday Dr. Alice Smith met the OpenAI team in San Francisco. \
             She said Acme Corp will present at the Rust Conference. Alice likes Python.",
        );
        let n = names(&p);
        assert!(n.contains(&("Alice Smith", EntityType::Person)), "{n:?}");
        assert!(
            n.contains(&("San Francisco", EntityType::Location)),
            "{n:?}"
        );
        assert!(
            n.contains(&("Acme Corp", EntityType::Organization)),
            "{n:?}"
        );
        assert!(n.contains(&("Rust Conference", EntityType::Event)), "{n:?}");
        assert!(n.contains(&("Python", EntityType::Concept)), "{n:?}");
        assert!(n.contains(&("OpenAI", EntityType::Concept)), "{n:?}");
        // Sentence-initial function words and calendar words are not names.
        assert!(
            !n.iter().any(|(x, _)| *x == "Yesterday" || *x == "She"),
            "{n:?}"
        );
    }

    #[test]
    fn salience_counts_mentions_relative_to_the_top_entity() {
        let p = parse_content(
            "We use Postgres. Postgres is fast. Postgres and Redis both run on Linux.",
        );
        assert_eq!(p.entities[0].name, "Postgres");
        assert_eq!(p.entities[0].salience, 1.0);
        assert_eq!(p.entities[0].metadata["mentions"], 3);
        let redis = p.entities.iter().find(|e| e.name == "Redis").unwrap();
        assert!((redis.salience - 1.0 / 3.0).abs() < 1e-12);
        // "and" does not join two names.
        assert!(!p.entities.iter().any(|e| e.name.contains(" and ")));
        assert!(
            p.entities
                .iter()
                .any(|e| e.name == "Linux" && e.entity_type == EntityType::Concept)
        );
        let p = parse_content("She moved to Bank of the West last year.");
        assert_eq!(names(&p), [("Bank of the West", EntityType::Location)]);
    }

    #[test]
    fn acronyms_handles_and_hashtags() {
        let p = parse_content("ask @bob whether NASA joins #rustlang this year");
        let n = names(&p);
        assert!(n.contains(&("@bob", EntityType::Person)), "{n:?}");
        assert!(n.contains(&("NASA", EntityType::Organization)), "{n:?}");
        assert!(n.contains(&("#rustlang", EntityType::Concept)), "{n:?}");
    }

    #[test]
    fn no_entities_in_plain_lowercase_text_or_empty_input() {
        assert!(
            parse_content("how do lifetimes work in rust?")
                .entities
                .is_empty()
        );
        let empty = parse_content("");
        assert!(empty.entities.is_empty());
        assert_eq!(empty.intents, ["statement"]);
        assert_eq!(empty.sentiment["neutral"], 1.0);
        assert_eq!(empty.sentiment["compound"], 0.0);
    }

    #[test]
    fn intents_are_labelled() {
        assert_eq!(
            parse_content("Hello, how can you help me?").intents,
            ["greeting", "question", "request"]
        );
        assert_eq!(
            parse_content("Explain the borrow checker").intents,
            ["request"]
        );
        assert_eq!(parse_content("What is a lifetime?").intents, ["question"]);
        assert_eq!(
            parse_content("Thanks, that fixed it. Bye!").intents,
            ["thanks", "farewell"]
        );
        assert_eq!(
            parse_content("We decided to ship on Friday.").intents,
            ["decision"]
        );
        assert_eq!(parse_content("The build is green.").intents, ["statement"]);
        // Word boundaries: "this" does not greet, "bypass" does not say bye.
        assert_eq!(parse_content("this bypass works").intents, ["statement"]);
    }

    #[test]
    fn sentiment_with_negation_and_compound() {
        let s = parse_content("This is great, I love it").sentiment;
        assert!((s["positive"] - 2.0 / 6.0).abs() < 1e-12, "{s:?}");
        assert_eq!(s["negative"], 0.0);
        assert!((s["compound"] - 2.0 / 19f64.sqrt()).abs() < 1e-12);
        let s = parse_content("it is not good and the build failed").sentiment;
        assert_eq!(s["positive"], 0.0);
        assert!((s["negative"] - 2.0 / 8.0).abs() < 1e-12, "{s:?}");
        assert!(s["compound"] < 0.0);
        let sum = s["positive"] + s["negative"] + s["neutral"];
        assert!((sum - 1.0).abs() < 1e-12);
    }

    #[test]
    fn query_terms_are_lowercased_distinct_whitespace_tokens() {
        assert_eq!(
            query_terms("Rust  rust LIFETIMES? lifetimes?"),
            ["rust", "lifetimes?"]
        );
        assert!(query_terms("   ").is_empty());
    }

    #[test]
    fn model_answers_in_every_memorg_shape() {
        let list = entities_from_json(
            r#"[{"name":"Paris","type":"LOCATION"},{"name":"Ada","type":"PERSON"}]"#,
        )
        .unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].entity_type, EntityType::Location);
        assert_eq!(list[1].entity_type, EntityType::Person);
        assert_eq!(list[1].salience, 1.0);
        let one = entities_from_json(r#"{"name":"ACME","type":"ORG"}"#).unwrap();
        assert_eq!(one[0].entity_type, EntityType::Organization);
        let wrapped = entities_from_json("```json\n{\"entities\":[{\"name\":\"X\",\"type\":\"weird\"},{\"type\":\"PERSON\"},{\"name\":\"X\",\"type\":\"PERSON\"}]}\n```").unwrap();
        assert_eq!(wrapped.len(), 1);
        assert_eq!(wrapped[0].entity_type, EntityType::Other);
        assert!(entities_from_json("[]").unwrap().is_empty());
        let e = entities_from_json("not json").unwrap_err().to_string();
        assert!(e.contains("not JSON"), "{e}");
        assert!(entities_from_json(r#"{"foo": 1}"#).is_err());
        assert!(entities_from_json("42").is_err());
    }

    #[test]
    fn heuristic_is_a_content_parser_and_survives_hostile_text() {
        let h = Heuristic;
        assert_eq!(h.name(), "heuristic");
        let weird = format!("{}{}", "A ".repeat(50_000), "é\u{0}🙂 ??? ... @ # ''' --");
        let p = h.parse(&weird).unwrap();
        assert!(p.entities.len() <= MAX_ENTITIES);
        let caps: String = (0..5000).map(|i| format!("Name{i} ")).collect();
        let p = h.parse(&caps).unwrap();
        assert_eq!(p.entities.len(), 1, "one long run of capitalized words");
        let many: String = (0..500).map(|i| format!("Name{i}. ")).collect();
        assert_eq!(h.parse(&many).unwrap().entities.len(), MAX_ENTITIES);
    }
}
