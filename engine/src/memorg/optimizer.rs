//! The context-window optimizer (Memorg's `window_optimizer.py` and
//! `ExtractiveSummarization`), without a model, SPEC.md §14.8.
//!
//! - [`HeadTail`] is `ProgressiveSummarization` as Memorg's architecture
//!   page documents it: long content collapses to its head and tail with
//!   an omission marker in between (Memorg's code instead asks gpt-4o-mini
//!   to summarize 4000-token chunks; [`chunk_by_tokens`] and the
//!   [`Summarizer`] trait let a model do that);
//! - [`Extractive`] is `ExtractiveSummarization`: whole sentences chosen
//!   by preserved-entity mentions, word frequency and position, kept in
//!   their original order;
//! - [`optimize_context`] is `ContextWindowOptimizer.optimize_context`
//!   (summarize, then make sure of the budget) but leaves content that
//!   already fits untouched, and its result always fits (Memorg's
//!   `TokenOptimizer` asks a model for "approximately" the budget and never
//!   checks);
//! - [`fit_items`] packs prioritized items under a budget: whole items by
//!   priority, the first one that does not fit compressed into what is
//!   left, the rest dropped, survivors in their original order;
//! - [`render_prompt`] renders Memorg's `default` and `summary` templates.
//!
//! Every count goes through [`TokenCounter`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::memorg::parse::Entity;
use crate::util::keywords::{content_words, sentences};
use crate::util::tokens::TokenCounter;

/// Memorg's summarization chunk size, in tokens.
pub const CHUNK_TOKENS: usize = 4000;
/// Memorg's `TokenOptimizer` default budget.
pub const DEFAULT_MAX_TOKENS: usize = 4096;
/// Below this many tokens of room, [`fit_items`] drops an item rather than
/// compressing it.
pub const MIN_COMPRESSED_TOKENS: usize = 16;
/// Share of a head/tail budget given to the head.
const HEAD_SHARE: f64 = 0.6;

/// A summary (Memorg's `SummarizedContent` / `CompressedEntity`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The summary text.
    pub summary: String,
    /// The entities it was asked to preserve.
    pub preserved_entities: Vec<Entity>,
    /// `words(summary) / words(original)` (1.0 for an empty original), as
    /// Memorg computes it.
    pub compression_ratio: f64,
    /// The strategy's name and figures.
    pub metadata: Map<String, Value>,
}

/// Something that shortens text to a token target: [`HeadTail`] and
/// [`Extractive`] here; a model-backed summarizer outside this module.
/// The result may overshoot (a model's does); [`optimize_context`] cuts it
/// to size afterwards.
pub trait Summarizer: Send + Sync {
    /// Shortens `content` to about `target_tokens`, keeping `entities`.
    fn summarize(
        &self,
        content: &str,
        entities: &[Entity],
        target_tokens: usize,
        counter: TokenCounter,
    ) -> Result<String>;
    /// A name for metadata (`head_tail`, `extractive`, a model name).
    fn name(&self) -> &str;
}

/// Head and tail kept, the middle replaced by `[... N tokens omitted ...]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeadTail;

impl Summarizer for HeadTail {
    fn summarize(
        &self,
        content: &str,
        _entities: &[Entity],
        target_tokens: usize,
        counter: TokenCounter,
    ) -> Result<String> {
        head_tail(content, target_tokens, counter)
    }

    fn name(&self) -> &str {
        "head_tail"
    }
}

/// Whole sentences by importance, in their original order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extractive;

impl Summarizer for Extractive {
    fn summarize(
        &self,
        content: &str,
        entities: &[Entity],
        target_tokens: usize,
        counter: TokenCounter,
    ) -> Result<String> {
        extractive(content, entities, target_tokens, counter)
    }

    fn name(&self) -> &str {
        "extractive"
    }
}

/// Summarizes with `summarizer` and reports Memorg's figures.
pub fn summarize(
    summarizer: &dyn Summarizer,
    content: &str,
    entities: &[Entity],
    target_tokens: usize,
    counter: TokenCounter,
) -> Result<Summary> {
    let summary = summarizer.summarize(content, entities, target_tokens, counter)?;
    let mut metadata = Map::new();
    metadata.insert("strategy".into(), Value::from(summarizer.name()));
    metadata.insert("target_tokens".into(), Value::from(target_tokens));
    Ok(Summary {
        compression_ratio: word_ratio(&summary, content),
        summary,
        preserved_entities: entities.to_vec(),
        metadata,
    })
}

/// Memorg's `OptimizedContext`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimizedContext {
    /// The content, at most the budget.
    pub content: String,
    /// Its token count.
    pub token_count: usize,
    /// The entities the caller asked to keep.
    pub preserved_entities: Vec<Entity>,
    /// `optimization_level` (new / old tokens; 1.0 when untouched),
    /// `original_tokens`, `strategy`, `truncated` (whether the hard cut was
    /// needed after summarizing).
    pub metadata: Map<String, Value>,
}

/// Fits `content` into `max_tokens` (≥ 1): untouched when it fits, else
/// summarized to the budget and, if the summarizer overshot, cut with
/// [`head_tail`]. The result never exceeds the budget.
pub fn optimize_context(
    content: &str,
    entities: &[Entity],
    max_tokens: usize,
    summarizer: &dyn Summarizer,
    counter: TokenCounter,
) -> Result<OptimizedContext> {
    if max_tokens == 0 {
        return Err(Error::invalid("max_tokens", "must be at least 1"));
    }
    check_entities(entities)?;
    let original = counter.count(content)?;
    let mut metadata = Map::new();
    metadata.insert("original_tokens".into(), Value::from(original));
    if original <= max_tokens {
        metadata.insert("optimization_level".into(), Value::from(1.0));
        metadata.insert("strategy".into(), Value::from("none"));
        return Ok(OptimizedContext {
            content: content.to_string(),
            token_count: original,
            preserved_entities: entities.to_vec(),
            metadata,
        });
    }
    let mut out = summarizer.summarize(content, entities, max_tokens, counter)?;
    let mut tokens = counter.count(&out)?;
    let truncated = tokens > max_tokens;
    if truncated {
        out = head_tail(&out, max_tokens, counter)?;
        tokens = counter.count(&out)?;
    }
    metadata.insert(
        "optimization_level".into(),
        Value::from(tokens as f64 / original as f64),
    );
    metadata.insert("strategy".into(), Value::from(summarizer.name()));
    metadata.insert("truncated".into(), Value::from(truncated));
    Ok(OptimizedContext {
        content: out,
        token_count: tokens,
        preserved_entities: entities.to_vec(),
        metadata,
    })
}

/// Memorg's two prompt templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptTemplate {
    /// "Context: ... Pay special attention to the following entities ... Response:".
    #[default]
    Default,
    /// "Summary of previous conversation ... Key points ... continue".
    Summary,
}

impl PromptTemplate {
    /// Parses `default` or `summary` (case-insensitive). Memorg falls back
    /// to `default` for any other name; here that is an error.
    pub fn parse(s: &str) -> Result<PromptTemplate> {
        match s.trim().to_ascii_lowercase().as_str() {
            "default" => Ok(PromptTemplate::Default),
            "summary" => Ok(PromptTemplate::Summary),
            _ => Err(Error::invalid(
                "template",
                format!("unknown template {s:?}; expected default or summary"),
            )),
        }
    }
}

/// Memorg's `create_prompt_template`: the content and a `- name` line per
/// preserved entity, in Memorg's exact template text.
pub fn render_prompt(ctx: &OptimizedContext, template: PromptTemplate) -> String {
    let entities = ctx
        .preserved_entities
        .iter()
        .map(|e| format!("- {}", e.name))
        .collect::<Vec<_>>()
        .join("\n");
    match template {
        PromptTemplate::Default => format!(
            "\nContext: {}\n\nPlease use the above context to inform your response. Pay special attention to the following entities:\n{}\n\nResponse:\n",
            ctx.content, entities
        ),
        PromptTemplate::Summary => format!(
            "\nSummary of previous conversation:\n{}\n\nKey points to consider:\n{}\n\nPlease continue the conversation:\n",
            ctx.content, entities
        ),
    }
}

/// One item to pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextItem {
    /// The caller's id.
    pub id: String,
    /// Its text (Memorg renders memory items as `"<type>: <content>"`).
    pub text: String,
    /// Higher is packed first.
    pub priority: f64,
}

/// What happened to an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Kept whole.
    Kept,
    /// Kept, shortened to the room left.
    Compressed,
    /// Left out.
    Dropped,
}

/// One item's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FittedItem {
    /// The caller's id.
    pub id: String,
    /// Kept, compressed or dropped.
    pub fate: Fate,
    /// The text as packed (empty when dropped).
    pub text: String,
    /// Its tokens as packed.
    pub tokens: usize,
    /// Its tokens before.
    pub original_tokens: usize,
}

/// [`fit_items`]'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FittedContext {
    /// Every item in input order with its fate.
    pub items: Vec<FittedItem>,
    /// The packed items' texts joined by the separator, input order.
    pub content: String,
    /// Tokens of `content` (≤ the budget).
    pub token_count: usize,
}

/// Packs `items` into `max_tokens`: by priority (highest first, ties in
/// input order) each item is kept whole if it fits with its separator;
/// the first that does not is compressed with `summarizer` (cut to size)
/// when at least [`MIN_COMPRESSED_TOKENS`] remain; the others are dropped.
/// Survivors are joined in input order with `separator`.
pub fn fit_items(
    items: &[ContextItem],
    max_tokens: usize,
    separator: &str,
    summarizer: &dyn Summarizer,
    counter: TokenCounter,
) -> Result<FittedContext> {
    if max_tokens == 0 {
        return Err(Error::invalid("max_tokens", "must be at least 1"));
    }
    if let Some(bad) = items.iter().find(|i| !i.priority.is_finite()) {
        return Err(Error::invalid(
            "priority",
            format!("item {} has a non-finite priority", bad.id),
        ));
    }
    let sep = counter.count(separator)?;
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[b].priority.total_cmp(&items[a].priority));
    let mut fitted: Vec<FittedItem> = Vec::with_capacity(items.len());
    for it in items {
        fitted.push(FittedItem {
            id: it.id.clone(),
            fate: Fate::Dropped,
            text: String::new(),
            tokens: 0,
            original_tokens: counter.count(&it.text)?,
        });
    }
    let mut used = 0usize;
    let mut compressed_one = false;
    for i in order {
        let join = if used == 0 { 0 } else { sep };
        let need = fitted[i].original_tokens;
        if used + join + need <= max_tokens {
            used += join + need;
            fitted[i].fate = Fate::Kept;
            fitted[i].text = items[i].text.clone();
            fitted[i].tokens = need;
            continue;
        }
        if compressed_one {
            continue;
        }
        compressed_one = true;
        let room = max_tokens.saturating_sub(used + join);
        if room < MIN_COMPRESSED_TOKENS {
            continue;
        }
        let mut text = summarizer.summarize(&items[i].text, &[], room, counter)?;
        if counter.count(&text)? > room {
            text = head_tail(&text, room, counter)?;
        }
        let t = counter.count(&text)?;
        used += join + t;
        fitted[i].fate = Fate::Compressed;
        fitted[i].text = text;
        fitted[i].tokens = t;
    }
    let content = fitted
        .iter()
        .filter(|f| f.fate != Fate::Dropped)
        .map(|f| f.text.as_str())
        .collect::<Vec<_>>()
        .join(separator);
    let mut token_count = counter.count(&content)?;
    // Exact tokenizers can merge across a join; never exceed the budget.
    let content = if token_count > max_tokens {
        let cut = head_tail(&content, max_tokens, counter)?;
        token_count = counter.count(&cut)?;
        cut
    } else {
        content
    };
    Ok(FittedContext {
        items: fitted,
        content,
        token_count,
    })
}

/// `content` in pieces of at most `max_tokens` each (Memorg's 4000-token
/// chunks for a model summarizer), cut at word boundaries where possible.
pub fn chunk_by_tokens(
    content: &str,
    max_tokens: usize,
    counter: TokenCounter,
) -> Result<Vec<String>> {
    if max_tokens == 0 {
        return Err(Error::invalid("max_tokens", "must be at least 1"));
    }
    let mut out = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let mut piece = prefix_within(rest, max_tokens, counter)?;
        if piece.is_empty() {
            // One character over the budget on its own: take it anyway.
            let n = rest.chars().next().map_or(rest.len(), char::len_utf8);
            piece = &rest[..n];
        }
        out.push(piece.to_string());
        rest = &rest[piece.len()..];
    }
    Ok(out)
}

/// The head and tail of `content` within `max_tokens`, joined by an
/// omission marker; `content` itself when it fits.
pub fn head_tail(content: &str, max_tokens: usize, counter: TokenCounter) -> Result<String> {
    let total = counter.count(content)?;
    if total <= max_tokens {
        return Ok(content.to_string());
    }
    let marker_for = |n: usize| format!("\n[... {n} tokens omitted ...]\n");
    let marker_tokens = counter.count(&marker_for(total))?;
    if max_tokens <= marker_tokens + 2 {
        // No room for a marker: the head alone.
        return Ok(prefix_within(content, max_tokens, counter)?.to_string());
    }
    let budget = max_tokens - marker_tokens;
    let mut head_budget = ((budget as f64) * HEAD_SHARE).floor() as usize;
    let mut tail_budget = budget - head_budget;
    loop {
        crate::cancel::check_cancelled()?;
        let head = prefix_within(content, head_budget, counter)?;
        let after_head = &content[head.len()..];
        let tail = suffix_within(after_head, tail_budget, counter)?;
        let middle = &after_head[..after_head.len() - tail.len()];
        let omitted = counter.count(middle)?;
        let out = format!(
            "{}{}{}",
            head.trim_end(),
            marker_for(omitted),
            tail.trim_start()
        );
        if counter.count(&out)? <= max_tokens || head_budget + tail_budget == 0 {
            return Ok(out);
        }
        // Tokens merged across a seam: give one back and retry.
        if tail_budget >= head_budget && tail_budget > 0 {
            tail_budget -= 1;
        } else {
            head_budget = head_budget.saturating_sub(1);
        }
    }
}

/// The longest prefix of `text` within `max_tokens`, pulled back to the
/// last whitespace when that keeps at least half of it.
fn prefix_within(text: &str, max_tokens: usize, counter: TokenCounter) -> Result<&str> {
    let cut = longest(text, max_tokens, counter, true)?;
    let p = &text[..cut];
    if cut == text.len() {
        return Ok(p);
    }
    match p.rfind(char::is_whitespace) {
        Some(ws) if ws >= p.len() / 2 && ws > 0 => Ok(&text[..ws]),
        _ => Ok(p),
    }
}

/// The longest suffix of `text` within `max_tokens`, moved forward to the
/// first whitespace when that keeps at least half of it.
fn suffix_within(text: &str, max_tokens: usize, counter: TokenCounter) -> Result<&str> {
    let start = longest(text, max_tokens, counter, false)?;
    let s = &text[start..];
    if start == 0 {
        return Ok(s);
    }
    match s.find(char::is_whitespace) {
        Some(ws) if ws <= s.len() / 2 => Ok(&s[ws..]),
        _ => Ok(s),
    }
}

/// Binary search over char boundaries: for a prefix, the largest end whose
/// prefix fits; for a suffix, the smallest start whose suffix fits.
fn longest(text: &str, max_tokens: usize, counter: TokenCounter, prefix: bool) -> Result<usize> {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    let fits = |k: usize| -> Result<bool> {
        let piece = if prefix {
            &text[..bounds[k]]
        } else {
            &text[bounds[bounds.len() - 1 - k]..]
        };
        Ok(counter.count_within(piece, max_tokens)? <= max_tokens)
    };
    // k = number of characters taken; find the largest k that fits.
    let (mut lo, mut hi) = (0usize, bounds.len() - 1);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid)? {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(if prefix {
        bounds[lo]
    } else {
        bounds[bounds.len() - 1 - lo]
    })
}

fn word_ratio(summary: &str, original: &str) -> f64 {
    let o = original.split_whitespace().count();
    if o == 0 {
        return 1.0;
    }
    summary.split_whitespace().count() as f64 / o as f64
}

/// At most this many entities can be preserved in one call: each is
/// looked for in every sentence, so the work is entities × content.
pub const MAX_PRESERVED_ENTITIES: usize = 256;
/// At most this many bytes per preserved entity name.
pub const MAX_ENTITY_NAME_BYTES: usize = 256;

fn check_entities(entities: &[Entity]) -> Result<()> {
    if entities.len() > MAX_PRESERVED_ENTITIES {
        return Err(Error::invalid(
            "entities",
            format!(
                "{} entities; at most {MAX_PRESERVED_ENTITIES} can be preserved",
                entities.len()
            ),
        ));
    }
    if let Some(e) = entities
        .iter()
        .find(|e| e.name.len() > MAX_ENTITY_NAME_BYTES)
    {
        return Err(Error::invalid(
            "entities",
            format!(
                "an entity name of {} bytes; at most {MAX_ENTITY_NAME_BYTES}",
                e.name.len()
            ),
        ));
    }
    Ok(())
}

/// Memorg's extractive summary: sentences scored, then taken greedily by
/// score while the running selection (joined in text order) fits.
///
/// The greedy pass asks, once per sentence, whether the selection with
/// that sentence added fits; recounting the joined selection every time
/// is quadratic in the content. [`Selection`] answers each question with
/// the same count by recounting only what the insertion changes.
fn extractive(
    content: &str,
    entities: &[Entity],
    target: usize,
    counter: TokenCounter,
) -> Result<String> {
    check_entities(entities)?;
    if counter.count_within(content, target)? <= target {
        return Ok(content.to_string());
    }
    let sents = sentences(content);
    if sents.len() <= 1 {
        return head_tail(content, target, counter);
    }
    let by_score = rank_sentences(content, &sents, entities)?;
    let mut sel = Selection::new(&sents, counter);
    for i in by_score {
        crate::cancel::check_cancelled()?;
        if let Some(trial) = sel.try_insert(i, target)? {
            sel.accept(i, trial);
        }
    }
    if sel.is_empty() {
        return head_tail(content, target, counter);
    }
    Ok(sel.text())
}

/// Sentence indices by descending score (ties in text order): 2 per
/// preserved-entity mention + mean content-word frequency + 1 for the
/// first sentence.
fn rank_sentences(content: &str, sents: &[String], entities: &[Entity]) -> Result<Vec<usize>> {
    let mut freq: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for w in content_words(content) {
        *freq.entry(w).or_default() += 1;
    }
    let names: Vec<String> = entities.iter().map(|e| e.name.to_lowercase()).collect();
    let mut scored: Vec<(usize, f64)> = Vec::with_capacity(sents.len());
    for (i, s) in sents.iter().enumerate() {
        if i % 1024 == 0 {
            crate::cancel::check_cancelled()?;
        }
        let lower = s.to_lowercase();
        let words = content_words(s);
        let tf = if words.is_empty() {
            0.0
        } else {
            words
                .iter()
                .map(|w| freq.get(w).copied().unwrap_or(0) as f64)
                .sum::<f64>()
                / words.len() as f64
        };
        let ents = names
            .iter()
            .filter(|n| !n.is_empty() && n.len() <= lower.len() && lower.contains(n.as_str()))
            .count();
        let first = if i == 0 { 1.0 } else { 0.0 };
        scored.push((i, 2.0 * ents as f64 + tf + first));
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(scored.into_iter().map(|(i, _)| i).collect())
}

/// A Fenwick tree of sums over `0..n`.
struct Fenwick(Vec<usize>);

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick(vec![0; n + 1])
    }

    fn add(&mut self, i: usize, v: usize) {
        let mut k = i + 1;
        while k < self.0.len() {
            self.0[k] += v;
            k += k & k.wrapping_neg();
        }
    }

    fn sub(&mut self, i: usize, v: usize) {
        let mut k = i + 1;
        while k < self.0.len() {
            self.0[k] -= v;
            k += k & k.wrapping_neg();
        }
    }

    /// The sum over `0..i`.
    fn prefix(&self, i: usize) -> usize {
        let mut k = i;
        let mut s = 0;
        while k > 0 {
            s += self.0[k];
            k -= k & k.wrapping_neg();
        }
        s
    }

    /// The smallest `i` whose prefix over `0..=i` exceeds `target` (`n`
    /// when none does).
    fn find(&self, target: usize) -> usize {
        let n = self.0.len() - 1;
        let mut pos = 0;
        let mut rem = target;
        let mut step = n.next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next <= n && self.0[next] <= rem {
                pos = next;
                rem -= self.0[next];
            }
            step >>= 1;
        }
        pos
    }
}

/// The extractive selection: chosen sentences joined by single spaces
/// (`C`), and what an exact count of `C` is made of, so that the count of
/// `C` with one more sentence inserted costs only the part the insertion
/// changes.
///
/// Layout: `C'` is every chosen sentence followed by a space (a *unit*);
/// `C` is `C'` without its last byte. A unit's bytes never move inside it,
/// so an exact count's pieces (`util::tokens::first_piece_len`) are kept
/// as (unit, offset, tokens) and stay valid when other units are inserted.
/// Inserting sentence `i` at byte `x` of `C'` leaves every piece whose
/// lookahead ends before `x` unchanged; the pieces from there on are
/// recounted until one starts where a piece of `C` started on the same
/// remaining text (from there on the count is the same), or the text ends.
/// The estimate counter needs only character totals.
struct Selection<'a> {
    sents: &'a [String],
    counter: TokenCounter,
    chosen: Vec<bool>,
    /// Bytes of each chosen unit (sentence + space).
    bytes: Fenwick,
    /// Tokens of the pieces starting in each unit (exact counters).
    counts: Fenwick,
    /// Per unit: (offset in the unit, tokens) of the pieces starting in it.
    pieces: Vec<Vec<(usize, usize)>>,
    /// Tokens of `C`.
    total_tokens: usize,
    /// Characters of `C` (estimate counter).
    chars: usize,
    any: bool,
}

/// A successful trial insertion, to apply with [`Selection::accept`].
struct Trial {
    tokens: usize,
    /// Where recounting started (a piece start of `C`, ≤ the insertion).
    from: usize,
    /// Where it rejoined `C`'s pieces, in `C` coordinates (`None`: ran to
    /// the end).
    rejoin: Option<usize>,
    /// The recounted pieces, in coordinates of the new text.
    new_pieces: Vec<(usize, usize)>,
}

impl<'a> Selection<'a> {
    fn new(sents: &'a [String], counter: TokenCounter) -> Self {
        let n = sents.len();
        Selection {
            sents,
            counter,
            chosen: vec![false; n],
            bytes: Fenwick::new(n),
            counts: Fenwick::new(n),
            pieces: vec![Vec::new(); n],
            total_tokens: 0,
            chars: 0,
            any: false,
        }
    }

    fn is_empty(&self) -> bool {
        !self.any
    }

    fn text(&self) -> String {
        self.chosen
            .iter()
            .zip(self.sents)
            .filter(|(c, _)| **c)
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Length of `C'`.
    fn total_bytes(&self) -> usize {
        self.bytes.prefix(self.sents.len())
    }

    /// The unit holding byte `p` of `C'` and the offset in it.
    fn locate(&self, p: usize) -> (usize, usize) {
        let j = self.bytes.find(p);
        (j, p - self.bytes.prefix(j))
    }

    /// Tokens of the pieces of `C` starting before byte `p`.
    fn tokens_before(&self, p: usize) -> usize {
        let (j, off) = self.locate(p);
        if j >= self.sents.len() {
            return self.total_tokens;
        }
        self.counts.prefix(j)
            + self.pieces[j]
                .iter()
                .take_while(|(o, _)| *o < off)
                .map(|(_, t)| t)
                .sum::<usize>()
    }

    /// Whether a piece of `C` starts at byte `p`.
    fn piece_starts_at(&self, p: usize) -> bool {
        let (j, off) = self.locate(p);
        j < self.sents.len() && self.pieces[j].binary_search_by_key(&off, |x| x.0).is_ok()
    }

    /// The first piece of `C` starting at or after byte `p` (there is one
    /// when `p` is below the last piece's start + `PIECE_LOOKAHEAD`).
    fn first_piece_from(&self, p: usize) -> Option<usize> {
        let (mut j, off) = self.locate(p);
        if j < self.sents.len()
            && let Some(&(o, _)) = self.pieces[j].iter().find(|(o, _)| *o >= off)
        {
            return Some(self.bytes.prefix(j) + o);
        }
        loop {
            j = self.counts.find(self.counts.prefix(j + 1));
            if j >= self.sents.len() {
                return None;
            }
            if let Some(&(o, _)) = self.pieces[j].first() {
                return Some(self.bytes.prefix(j) + o);
            }
        }
    }

    /// Appends `C'[from..]` up to at least `to` (whole characters).
    fn append_c(&self, out: &mut String, from: usize, to: usize) {
        let n = self.sents.len();
        let (mut j, mut off) = self.locate(from);
        let mut at = from;
        while at < to && j < n {
            let s = &self.sents[j];
            if off < s.len() {
                let want = (to - at).min(s.len() - off);
                let mut end = off + want;
                while !s.is_char_boundary(end) {
                    end += 1;
                }
                out.push_str(&s[off..end]);
                at += end - off;
                off = end;
            }
            if off >= s.len() && at < to {
                out.push(' ');
                at += 1;
                j = self.bytes.find(self.bytes.prefix(j + 1));
                off = 0;
            }
        }
    }

    /// The tokens of `C` with sentence `i` inserted, when they fit
    /// `target` (`None` when they do not; counting stops there).
    fn try_insert(&self, i: usize, target: usize) -> Result<Option<Trial>> {
        let s = &self.sents[i];
        let sep = usize::from(self.any);
        if self.counter == TokenCounter::Estimate {
            let chars = self.chars + sep + s.chars().count();
            let tokens = chars.div_ceil(4);
            return Ok((tokens <= target).then_some(Trial {
                tokens,
                from: 0,
                rejoin: None,
                new_pieces: Vec::new(),
            }));
        }
        use crate::util::tokens::{PIECE_LOOKAHEAD, first_piece_len};
        let total = self.total_bytes();
        let len_c = total.saturating_sub(1);
        let x = self.bytes.prefix(i);
        let delta = s.len() + 1;
        let len_t = total + delta - 1;
        // Pieces whose lookahead ends before both the insertion and the
        // end of `C` are the same in the new text.
        let lim = x.min(len_c);
        let from = if lim < PIECE_LOOKAHEAD {
            0
        } else {
            self.first_piece_from(lim + 1 - PIECE_LOOKAHEAD)
                .unwrap_or(len_c)
        };
        let mut tokens = self.tokens_before(from);
        if tokens > target {
            return Ok(None);
        }
        // The new text from `from`: C'[from..x], the sentence and its
        // space, then C'[x..] as needed.
        let mut buf = String::new();
        self.append_c(&mut buf, from, x);
        buf.push_str(s);
        buf.push(' ');
        let mut c_at = x; // next byte of C' to append
        let mut pos = from;
        let mut new_pieces = Vec::new();
        let mut rejoin = None;
        while pos < len_t {
            if pos >= x + delta && self.piece_starts_at(pos - delta) {
                let q = pos - delta;
                tokens += self.total_tokens - self.tokens_before(q);
                rejoin = Some(q);
                break;
            }
            let need = (pos + PIECE_LOOKAHEAD).min(len_t);
            if from + buf.len() < need && c_at < total {
                let before = buf.len();
                let want = need - (from + buf.len());
                self.append_c(&mut buf, c_at, c_at + want.max(4096));
                c_at += buf.len() - before;
            }
            let end = (len_t - from).min(buf.len());
            let rest = &buf[pos - from..end];
            let len = first_piece_len(rest);
            let t = self.counter.count(&rest[..len])?;
            tokens += t;
            if tokens > target {
                return Ok(None);
            }
            new_pieces.push((pos, t));
            pos += len;
            crate::cancel::check_cancelled()?;
        }
        if tokens > target {
            return Ok(None);
        }
        Ok(Some(Trial {
            tokens,
            from,
            rejoin,
            new_pieces,
        }))
    }

    /// Makes a fitting trial insertion of sentence `i` the selection.
    fn accept(&mut self, i: usize, trial: Trial) {
        let n = self.sents.len();
        let sep = usize::from(self.any);
        self.chars += sep + self.sents[i].chars().count();
        self.total_tokens = trial.tokens;
        self.any = true;
        self.chosen[i] = true;
        if self.counter == TokenCounter::Estimate {
            self.bytes.add(i, self.sents[i].len() + 1);
            return;
        }
        // Drop C's pieces in [from, rejoin).
        let stop = trial.rejoin.unwrap_or(usize::MAX);
        let (mut j, _) = self.locate(trial.from);
        while j < n {
            let base = self.bytes.prefix(j);
            if base >= stop {
                break;
            }
            let mut removed = 0;
            self.pieces[j].retain(|&(o, t)| {
                let p = base + o;
                let keep = p < trial.from || p >= stop;
                if !keep {
                    removed += t;
                }
                keep
            });
            self.counts.sub(j, removed);
            j = self.counts.find(self.counts.prefix(j + 1));
        }
        self.bytes.add(i, self.sents[i].len() + 1);
        for (p, t) in trial.new_pieces {
            let (j, off) = self.locate(p);
            let list = &mut self.pieces[j];
            let at = list.partition_point(|x| x.0 < off);
            list.insert(at, (off, t));
            self.counts.add(j, t);
        }
        debug_assert_eq!(self.counts.prefix(n), self.total_tokens);
    }
}

/// The greedy pass as it was before [`Selection`] (quadratic: every
/// trial recounts the whole selection), over the same sentence ranking: the oracle of the differential
/// tests, and the "before" of `benches/benches/memorg.rs`.
#[cfg(any(test, feature = "bench-internals"))]
fn extractive_reference(
    content: &str,
    entities: &[Entity],
    target: usize,
    counter: TokenCounter,
) -> Result<String> {
    if counter.count(content)? <= target {
        return Ok(content.to_string());
    }
    let sents = sentences(content);
    if sents.len() <= 1 {
        return head_tail(content, target, counter);
    }
    // The same ranking as the fast pass: only the greedy pass differs.
    let by_score = rank_sentences(content, &sents, entities)?;
    let mut chosen: Vec<usize> = Vec::new();
    for i in by_score {
        let mut trial = chosen.clone();
        trial.push(i);
        trial.sort_unstable();
        let text = trial
            .iter()
            .map(|&k| sents[k].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if counter.count(&text)? <= target {
            chosen = trial;
        }
    }
    if chosen.is_empty() {
        return head_tail(content, target, counter);
    }
    Ok(chosen
        .iter()
        .map(|&k| sents[k].as_str())
        .collect::<Vec<_>>()
        .join(" "))
}

/// [`Extractive`] with the quadratic greedy pass (benchmarks only).
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveReference;

#[cfg(feature = "bench-internals")]
impl Summarizer for ExtractiveReference {
    fn summarize(
        &self,
        content: &str,
        entities: &[Entity],
        target_tokens: usize,
        counter: TokenCounter,
    ) -> Result<String> {
        extractive_reference(content, entities, target_tokens, counter)
    }

    fn name(&self) -> &str {
        "extractive"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::memorg::parse::EntityType;

    const EST: TokenCounter = TokenCounter::Estimate;

    fn ent(name: &str) -> Entity {
        Entity {
            name: name.into(),
            entity_type: EntityType::Concept,
            salience: 1.0,
            metadata: Map::new(),
        }
    }

    fn long_text(words: usize) -> String {
        (0..words)
            .map(|i| format!("w{i:04}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn head_tail_keeps_both_ends_within_budget() {
        let text = long_text(400); // 400 · 6 − 1 chars ≈ 600 tokens.
        for counter in [EST, TokenCounter::Cl100kBase, TokenCounter::O200kBase] {
            for budget in [40, 100, 250] {
                let out = head_tail(&text, budget, counter).unwrap();
                assert!(
                    counter.count(&out).unwrap() <= budget,
                    "{counter:?} {budget}"
                );
                assert!(out.starts_with("w0000 w0001"), "{out}");
                assert!(out.ends_with("w0399"), "{out}");
                assert!(out.contains("tokens omitted"), "{out}");
            }
        }
        // Fits: untouched. Tiny budget: the head alone.
        assert_eq!(head_tail("short", 10, EST).unwrap(), "short");
        let tiny = head_tail(&text, 3, EST).unwrap();
        assert!(
            EST.count(&tiny).unwrap() <= 3 && text.starts_with(&tiny),
            "{tiny}"
        );
    }

    #[test]
    fn optimize_context_leaves_fitting_content_and_fits_the_rest() {
        let ents = [ent("Rust")];
        let short = optimize_context("a short text", &ents, 100, &HeadTail, EST).unwrap();
        assert_eq!(short.content, "a short text");
        assert_eq!(short.metadata["optimization_level"], 1.0);
        assert_eq!(short.preserved_entities, ents);
        let text = long_text(400);
        let o = optimize_context(&text, &ents, 120, &HeadTail, EST).unwrap();
        assert!(o.token_count <= 120);
        assert_eq!(o.token_count, EST.count(&o.content).unwrap());
        let level = o.metadata["optimization_level"].as_f64().unwrap();
        assert!((level - o.token_count as f64 / EST.count(&text).unwrap() as f64).abs() < 1e-12);
        assert_eq!(o.metadata["truncated"], false);
        assert!(optimize_context(&text, &ents, 0, &HeadTail, EST).is_err());
    }

    /// A summarizer that ignores the target, like a model can.
    struct Verbose;
    impl Summarizer for Verbose {
        fn summarize(&self, c: &str, _: &[Entity], _: usize, _: TokenCounter) -> Result<String> {
            Ok(format!("{c} {c}"))
        }
        fn name(&self) -> &str {
            "verbose"
        }
    }

    /// A summarizer that fails.
    struct Broken;
    impl Summarizer for Broken {
        fn summarize(&self, _: &str, _: &[Entity], _: usize, _: TokenCounter) -> Result<String> {
            Err(Error::invalid("model", "down"))
        }
        fn name(&self) -> &str {
            "broken"
        }
    }

    #[test]
    fn overshooting_summaries_are_cut_and_failures_surface() {
        let text = long_text(200);
        let o = optimize_context(&text, &[], 50, &Verbose, EST).unwrap();
        assert!(o.token_count <= 50);
        assert_eq!(o.metadata["truncated"], true);
        assert_eq!(o.metadata["strategy"], "verbose");
        assert!(optimize_context(&text, &[], 50, &Broken, EST).is_err());
        // A fitting text never reaches the summarizer.
        assert!(optimize_context("ok", &[], 50, &Broken, EST).is_ok());
    }

    #[test]
    fn extractive_prefers_entity_sentences_in_original_order() {
        let text = "Intro sentence about the project plan. \
                    Filler words here and there. \
                    Postgres stores every order durably. \
                    More filler without meaning at all. \
                    The cache sits in front of Postgres.";
        let out = Extractive
            .summarize(text, &[ent("Postgres")], 22, EST)
            .unwrap();
        assert!(EST.count(&out).unwrap() <= 22, "{out}");
        assert!(
            out.contains("Postgres stores every order durably."),
            "{out}"
        );
        assert!(!out.contains("filler"), "{out}");
        let s = summarize(&Extractive, text, &[ent("Postgres")], 22, EST).unwrap();
        let ratio = out.split_whitespace().count() as f64 / text.split_whitespace().count() as f64;
        assert!((s.compression_ratio - ratio).abs() < 1e-12);
        assert_eq!(s.metadata["strategy"], "extractive");
        // Ordering: whatever is chosen stays in text order.
        let a = out.find("Postgres stores");
        let b = out.find("The cache");
        if let (Some(a), Some(b)) = (a, b) {
            assert!(a < b);
        }
        // One giant sentence falls back to head/tail.
        let one = long_text(300);
        let out = Extractive.summarize(&one, &[], 40, EST).unwrap();
        assert!(EST.count(&out).unwrap() <= 40);
        assert_eq!(
            summarize(&HeadTail, "", &[], 5, EST)
                .unwrap()
                .compression_ratio,
            1.0
        );
    }

    #[test]
    fn fit_items_by_priority_compressing_one() {
        let items = vec![
            ContextItem {
                id: "a".into(),
                text: "x".repeat(40),
                priority: 0.1,
            }, // 10 tokens
            ContextItem {
                id: "b".into(),
                text: "y".repeat(40),
                priority: 0.9,
            }, // 10
            ContextItem {
                id: "c".into(),
                text: long_text(60),
                priority: 0.5,
            }, // 90
            ContextItem {
                id: "d".into(),
                text: "z".repeat(40),
                priority: 0.5,
            }, // 10
        ];
        let f = fit_items(&items, 50, "\n\n", &HeadTail, EST).unwrap();
        let fates: Vec<Fate> = f.items.iter().map(|i| i.fate).collect();
        // b (10) kept; c (0.5, first in input among ties) does not fit →
        // compressed into at most 50 − 10 − 1 = 39 (head/tail lands a few
        // under); d (10 + 1) no longer fits and only one item is
        // compressed → dropped; a dropped.
        assert_eq!(
            fates,
            [Fate::Dropped, Fate::Kept, Fate::Compressed, Fate::Dropped]
        );
        assert!(f.token_count <= 50);
        assert_eq!(f.token_count, EST.count(&f.content).unwrap());
        assert!(
            f.content.starts_with(&"y".repeat(40)),
            "survivors in input order"
        );
        assert_eq!(
            f.items[2].original_tokens,
            EST.count(&items[2].text).unwrap()
        );
        // Everything fits: all kept, input order.
        let f = fit_items(&items[..2], 100, " | ", &HeadTail, EST).unwrap();
        assert_eq!(
            f.content,
            format!("{} | {}", "x".repeat(40), "y".repeat(40))
        );
        // Too little room to compress: dropped.
        let f = fit_items(
            &items[1..3],
            12 + MIN_COMPRESSED_TOKENS - 2,
            "\n\n",
            &HeadTail,
            EST,
        )
        .unwrap();
        assert_eq!(f.items[1].fate, Fate::Dropped);
        let bad = vec![ContextItem {
            id: "n".into(),
            text: "x".into(),
            priority: f64::NAN,
        }];
        assert!(
            fit_items(&bad, 10, "", &HeadTail, EST)
                .unwrap_err()
                .to_string()
                .contains("item n ")
        );
        assert!(fit_items(&items, 0, "", &HeadTail, EST).is_err());
        assert!(
            fit_items(&[], 10, "", &HeadTail, EST)
                .unwrap()
                .content
                .is_empty()
        );
    }

    #[test]
    fn chunks_cover_the_text_within_the_limit() {
        let text = long_text(1000);
        let chunks = chunk_by_tokens(&text, 200, TokenCounter::Cl100kBase).unwrap();
        assert!(chunks.len() > 1);
        assert_eq!(chunks.concat(), text);
        for c in &chunks {
            assert!(TokenCounter::Cl100kBase.count(c).unwrap() <= 200);
        }
        assert!(chunk_by_tokens("", 10, EST).unwrap().is_empty());
        assert!(chunk_by_tokens("abc", 0, EST).is_err());
        // A single character that is over budget on its own still advances.
        assert_eq!(
            chunk_by_tokens("日本", 1, TokenCounter::Cl100kBase)
                .unwrap()
                .concat(),
            "日本"
        );
    }

    #[test]
    fn prompt_templates_are_memorgs() {
        let ctx = OptimizedContext {
            content: "We chose Postgres.".into(),
            token_count: 4,
            preserved_entities: vec![ent("Postgres"), ent("Redis")],
            metadata: Map::new(),
        };
        assert_eq!(
            render_prompt(&ctx, PromptTemplate::Default),
            "\nContext: We chose Postgres.\n\nPlease use the above context to inform your response. Pay special attention to the following entities:\n- Postgres\n- Redis\n\nResponse:\n"
        );
        assert_eq!(
            render_prompt(&ctx, PromptTemplate::Summary),
            "\nSummary of previous conversation:\nWe chose Postgres.\n\nKey points to consider:\n- Postgres\n- Redis\n\nPlease continue the conversation:\n"
        );
        assert_eq!(
            PromptTemplate::parse("SUMMARY").unwrap(),
            PromptTemplate::Summary
        );
        assert!(
            PromptTemplate::parse("fancy")
                .unwrap_err()
                .to_string()
                .contains("fancy")
        );
    }

    /// Text from (word, separator) picks: words of every length class
    /// (one over a tokenizer window), separators that end sentences,
    /// lines, or neither, with whitespace runs and a carriage return.
    fn picked_text(picks: &[(u8, u8)]) -> String {
        const WORDS: &[&str] = &[
            "postgres",
            "cache",
            "Rust",
            "the",
            "a",
            "index",
            "日本語",
            "café",
            "42",
            "x,",
            "naïve",
            "zebra",
            "query",
            "latency",
            "--",
            "it's",
            "Postgres",
            "ünïcödé",
        ];
        const SEPS: &[&str] = &[
            " ", " ", " ", " ", ". ", ".\n", "! ", "? ", "  ", "\t", ",\r", " \u{a0}", "\n\n",
        ];
        let mut out = String::new();
        for &(w, sep) in picks {
            match w {
                250..=252 => out.push_str(&"y".repeat(1100)),
                253..=255 => out.push_str(&" ".repeat(600)),
                _ => out.push_str(WORDS[w as usize % WORDS.len()]),
            }
            out.push_str(SEPS[sep as usize % SEPS.len()]);
        }
        out
    }

    /// The incremental greedy pass picks exactly what the quadratic one
    /// picked, for every counter, on texts long enough to span many
    /// tokenizer windows.
    #[test]
    fn extractive_matches_the_quadratic_pass_on_a_long_text() {
        let picks: Vec<(u8, u8)> = (0..3000u32)
            .map(|i| {
                let h = i.wrapping_mul(2_654_435_761).rotate_left(7);
                ((h % 250) as u8, (h >> 8) as u8)
            })
            .collect();
        let text = picked_text(&picks);
        let ents = [ent("postgres"), ent("café")];
        for counter in [EST, TokenCounter::Cl100kBase, TokenCounter::O200kBase] {
            let total = counter.count(&text).unwrap();
            for target in [1, 40, total / 3, total - 1] {
                let fast = extractive(&text, &ents, target, counter).unwrap();
                let slow = extractive_reference(&text, &ents, target, counter).unwrap();
                assert_eq!(fast, slow, "{counter:?} {target}");
            }
        }
    }

    /// A set cancellation flag stops a long summary with `Cancelled`.
    #[test]
    fn a_cancelled_call_stops() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        let text = (0..20_000)
            .map(|i| format!("Sentence {i} about postgres and caches."))
            .collect::<Vec<_>>()
            .join(" ");
        let flag = Arc::new(AtomicBool::new(true));
        for counter in [EST, TokenCounter::O200kBase] {
            for s in [&Extractive as &dyn Summarizer, &HeadTail] {
                let r = crate::cancel::with_cancel_flag(flag.clone(), || {
                    optimize_context(&text, &[ent("postgres")], 5_000, s, counter)
                });
                assert!(
                    matches!(r, Err(Error::Cancelled)),
                    "{counter:?} {}",
                    s.name()
                );
            }
        }
        // Unset, the same call answers.
        let r = crate::cancel::with_cancel_flag(Arc::new(AtomicBool::new(false)), || {
            optimize_context(&text, &[], 5_000, &Extractive, EST)
        });
        assert!(r.unwrap().token_count <= 5_000);
    }

    #[test]
    fn too_many_or_too_long_entities_are_refused() {
        let many: Vec<Entity> = (0..=MAX_PRESERVED_ENTITIES)
            .map(|i| ent(&format!("e{i}")))
            .collect();
        let e = optimize_context("text", &many, 10, &Extractive, EST).unwrap_err();
        assert!(e.to_string().contains("at most 256"), "{e}");
        let long = [ent(&"n".repeat(MAX_ENTITY_NAME_BYTES + 1))];
        assert!(optimize_context("text", &long, 10, &Extractive, EST).is_err());
        let ok: Vec<Entity> = many[..MAX_PRESERVED_ENTITIES].to_vec();
        assert!(optimize_context("text", &ok, 10, &Extractive, EST).is_ok());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Differential: the incremental greedy pass against the
        /// quadratic one on random texts, budgets, entities and counters.
        #[test]
        fn extractive_matches_the_quadratic_pass(
            picks in proptest::collection::vec((proptest::num::u8::ANY, proptest::num::u8::ANY), 0..700),
            frac in 0.0f64..1.0,
            counter_pick in 0u8..3,
            ent_picks in proptest::collection::vec(0usize..18, 0..3),
        ) {
            let text = picked_text(&picks);
            let counter = [EST, TokenCounter::Cl100kBase, TokenCounter::O200kBase][counter_pick as usize];
            let total = counter.count(&text).unwrap();
            let target = ((total as f64 * frac) as usize).max(1);
            const NAMES: &[&str] = &["postgres", "cache", "rust", "日本語", "café", "zebra"];
            let ents: Vec<Entity> = ent_picks.iter().map(|&k| ent(NAMES[k % NAMES.len()])).collect();
            let fast = extractive(&text, &ents, target, counter).unwrap();
            let slow = extractive_reference(&text, &ents, target, counter).unwrap();
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Whatever the text and budget, the optimizer's output fits, and
        /// text that already fits comes back unchanged.
        #[test]
        fn output_always_fits(
            words in proptest::collection::vec("[a-zA-Z0-9é日 .,!?\n]{0,12}", 0..120),
            budget in 1usize..80,
            exact in proptest::bool::ANY,
        ) {
            let text = words.join(" ");
            let counter = if exact { TokenCounter::Cl100kBase } else { EST };
            let total = counter.count(&text).unwrap();
            for s in [&HeadTail as &dyn Summarizer, &Extractive] {
                let o = optimize_context(&text, &[], budget, s, counter).unwrap();
                proptest::prop_assert!(o.token_count <= budget);
                proptest::prop_assert_eq!(o.token_count, counter.count(&o.content).unwrap());
                if total <= budget {
                    proptest::prop_assert_eq!(&o.content, &text);
                }
            }
        }
    }
}
