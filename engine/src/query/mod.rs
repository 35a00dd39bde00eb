//! One search entry point over messages, [`Memdb::search`], in three modes
//! (SPEC.md §"Search modes"): keyword (BM25 on the text index), semantic
//! (the query's embedding against the message vector space) and hybrid
//! (both rankings fused, by default by relative score with every
//! candidate's similarity; SPEC.md §18). Every surface
//! (CLI, REST, MCP) calls this; none ranks anything itself.

mod period;
mod speaker;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::model::filter::{MAX_LIMIT, check_limit, normalize_filter};
use crate::model::notes::SearchNote;
use crate::model::types::{Filter, ScoreExplain, SearchHit, TextQuery, VectorPlan};
use crate::text::Reading;
use crate::vector::index::VectorSearch;
use crate::vector::spaces::{VectorFilter, VectorHit};

/// Largest `offset` a search accepts.
pub const MAX_OFFSET: usize = 10_000;
/// Fewest candidates each ranking contributes to a hybrid fusion.
const MIN_FUSION_DEPTH: usize = 50;

/// The keyword side of a hybrid search whose query is read as syntax
/// ([`QueryLanguage::Syntax`]; natural language builds the same shape in
/// the text index, SPEC.md §16.2). A plain query (no quotes,
/// operators, field filters or wildcards) keeps every word for scoring but
/// requires a match on at least one content (non-stop) word:
/// `+(content words) all words`. So a message that matches only "in" or
/// "how" is no keyword candidate (in a fusion it would rank as high as a
/// real match), while stop words still help rank the real matches. A query
/// using the syntax is kept verbatim. `None` when it has no content word.
/// Stop words are the engine's one list of English function words
/// (NLTK's, in `keywords.rs`).
pub fn hybrid_keyword_query(query: &str) -> Option<String> {
    let syntax = query.contains(['"', ':', '*', '(', ')', '+', '-', '^', '~', '[', ']'])
        || query
            .split_whitespace()
            .any(|w| matches!(w, "AND" | "OR" | "NOT"));
    if syntax {
        return Some(query.to_string());
    }
    let kept: Vec<&str> = query
        .split_whitespace()
        .filter(|w| {
            let bare: String = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            !bare.is_empty() && !crate::util::keywords::is_function_word(&bare)
        })
        .collect();
    if kept.is_empty() {
        None
    } else {
        Some(format!(
            "+({}) {}",
            kept.join(" "),
            query.split_whitespace().collect::<Vec<_>>().join(" ")
        ))
    }
}

/// How a search ranks messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25 over the text index, with the query syntax of SPEC.md §16.
    Keyword,
    /// Cosine similarity of the query's embedding to message embeddings.
    Semantic,
    /// Keyword and semantic rankings fused (see [`FusionMethod`]).
    #[default]
    Hybrid,
}

impl SearchMode {
    /// The mode's name as used in the CLI and APIs.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Keyword => "keyword",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

impl std::str::FromStr for SearchMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "keyword" => Ok(SearchMode::Keyword),
            "semantic" => Ok(SearchMode::Semantic),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => Err(Error::invalid(
                "mode",
                format!("unknown search mode {other:?}: expected keyword, semantic or hybrid"),
            )),
        }
    }
}

/// How the keyword side of a search reads the query text (SPEC.md §16.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryLanguage {
    /// By mode (the default): keyword mode reads [`QueryLanguage::Syntax`],
    /// semantic and hybrid read [`QueryLanguage::Natural`].
    #[default]
    Auto,
    /// What a person or an agent says: words and (when the double quotes
    /// balance) quoted phrases, analyzed like the index and searched as
    /// plain terms; field names, colons, operators, parentheses, wildcards
    /// and stray quotes are text. Never a syntax error: only the length
    /// limit applies.
    Natural,
    /// memdb's query syntax (SPEC.md §16): operators, fields, prefixes,
    /// phrases; a syntax error is `InvalidInput`.
    Syntax,
}

impl QueryLanguage {
    /// Whether a search in `mode` reads its query as natural language.
    pub fn is_natural(self, mode: SearchMode) -> bool {
        match self {
            QueryLanguage::Auto => mode != SearchMode::Keyword,
            QueryLanguage::Natural => true,
            QueryLanguage::Syntax => false,
        }
    }
}

/// How hybrid search combines its two rankings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionMethod {
    /// Relative score fusion (the default): BM25 min-max normalised to
    /// [0, 1] over the keyword ranking (0 outside it), cosine similarity of
    /// every candidate (keyword-only ones from their stored vectors) min-max
    /// normalised over all candidates, then
    /// `keyword · kw_norm + semantic · sem_norm`.
    #[default]
    RelativeScore,
    /// Reciprocal rank fusion: `keyword / (rrf_k + keyword_rank) +
    /// semantic / (rrf_k + semantic_rank)`, ranks from 1.
    Rrf,
}

/// Weights of hybrid fusion. SPEC.md §18.2 has the measurements behind the
/// default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FusionWeights {
    /// Weight of the keyword ranking (default 1).
    pub keyword: f32,
    /// Weight of the semantic ranking (default 0.5: keyword counts twice
    /// as much as meaning; SPEC.md §18.2 has the measurements).
    pub semantic: f32,
    /// The RRF constant (default 60, as in Cormack et al. 2009; used by
    /// [`FusionMethod::Rrf`] only).
    pub rrf_k: f32,
    /// The fusion (default relative score).
    #[serde(default)]
    pub method: FusionMethod,
    /// Neighbour expansion: the share of a top candidate's fused score its
    /// previous and next turn enter with (0..=1, default 0.5; 0 turns it
    /// off). SPEC.md §18.3.
    #[serde(default = "default_neighbours")]
    pub neighbours: f32,
    /// Answers: the share of a top candidate's fused score the turn after
    /// it enters with when the candidate asks something (its text holds a
    /// `?`), in place of `neighbours` (0..=1, default [`DEFAULT_ANSWERS`];
    /// 0: such a turn enters as any neighbour). SPEC.md §18.3.
    #[serde(default = "default_answers")]
    pub answers: f32,
    /// Second neighbours: the share of a top candidate's fused score the
    /// turns two before and two after it enter with (in a two-person
    /// dialogue, the same speaker's previous and next turn; 0..=1, default
    /// [`DEFAULT_SECOND_NEIGHBOURS`]; 0 turns it off). SPEC.md §18.3.
    #[serde(default = "default_second_neighbours")]
    pub second_neighbours: f32,
    /// Session spread: at most this many hits of one conversation among
    /// the first [`SPREAD_WINDOW`] of the fused list; the others move after
    /// them, in order (0 = off, the default). SPEC.md §18.3.
    #[serde(default)]
    pub per_conversation: u32,
    /// Keyword coverage: how far the keyword ranking's weight follows the
    /// share of the question's content words its best match holds (the
    /// most any of its first [`COVERAGE_DEPTH`] hits holds, `c`): the
    /// weight is `keyword · (1 − coverage · (1 − c))` (0..=1; 0 turns it
    /// off). A question put in other words than the turn that answers it
    /// leans on meaning; one whose words a turn holds keeps its keyword
    /// weight. Default [`DEFAULT_COVERAGE`]; SPEC.md §18.2.
    #[serde(default = "default_coverage")]
    pub coverage: f32,
    /// Speakers: when the question names the speaker of some candidates
    /// (a message's metadata `speaker`, else the `Name:` its text opens
    /// with) and other candidates have another speaker, those lose this
    /// share of their fused score (0..=1; 0 turns it off). Default
    /// [`DEFAULT_SPEAKER`]; SPEC.md §18.3.
    #[serde(default = "default_speaker")]
    pub speaker: f32,
    /// Questions: a turn that only asks ([`speaker::asks_only`]: every
    /// sentence a question, but for a few words) loses this share of its
    /// fused score, after neighbour expansion has given its answer its
    /// share (0..=1; 0 turns it off). Default [`DEFAULT_QUESTIONS`];
    /// SPEC.md §18.3.
    #[serde(default = "default_questions")]
    pub questions: f32,
    /// Short turns: a candidate whose words (after its speaker's `Name:`)
    /// hold fewer than [`SHORT_TURN_WORDS`] content words loses up to this
    /// share of its fused score, in proportion to the words it lacks,
    /// before neighbour expansion; a turn right after one that asks (holds
    /// a `?`) keeps its score, being a reply (0..=1; 0 turns it off).
    /// Default [`DEFAULT_SHORT_TURNS`]; SPEC.md §18.3.
    #[serde(default = "default_short_turns")]
    pub short_turns: f32,
    /// The turn before: the keyword ranking of a hybrid search also
    /// matches the question's content words in the turn before each
    /// message (the text index's `content_before` field), with this weight
    /// beside its own words' (0..=1; 0 turns it off). A reply ("Yes, last
    /// Tuesday!") holds few of the words its question asked with. Default
    /// [`DEFAULT_PREVIOUS_TURN`]; SPEC.md §18.2.
    #[serde(default = "default_previous_turn")]
    pub previous_turn: f32,
}

/// The keyword weight [`FusionWeights::coverage`] leaves when the best
/// keyword match holds the share `covered` (0..=1) of the question's
/// content words.
pub(crate) fn covered_keyword_weight(w: FusionWeights, covered: f32) -> f32 {
    w.keyword * (1.0 - w.coverage * (1.0 - covered.clamp(0.0, 1.0)))
}

/// The default of [`FusionWeights::coverage`] (SPEC.md §18.2 has the
/// measurements).
pub const DEFAULT_COVERAGE: f32 = 0.5;

/// Keyword hits whose coverage of the question is read (see
/// [`FusionWeights::coverage`]).
pub const COVERAGE_DEPTH: usize = 5;

/// The default weight of the semantic ranking in hybrid fusion (the
/// keyword ranking's is 1).
pub const DEFAULT_SEMANTIC_WEIGHT: f32 = 0.5;

/// How deep the session spread reorders the fused list.
pub const SPREAD_WINDOW: usize = 50;

fn default_coverage() -> f32 {
    DEFAULT_COVERAGE
}

/// The default of [`FusionWeights::speaker`] (SPEC.md §18.3 has the
/// measurements).
pub const DEFAULT_SPEAKER: f32 = 0.3;

fn default_speaker() -> f32 {
    DEFAULT_SPEAKER
}

/// The default of [`FusionWeights::second_neighbours`] (SPEC.md §18.3
/// has the measurements).
pub const DEFAULT_SECOND_NEIGHBOURS: f32 = 0.4;

fn default_second_neighbours() -> f32 {
    DEFAULT_SECOND_NEIGHBOURS
}

/// The default of [`FusionWeights::questions`] (SPEC.md §18.3 has the
/// measurements).
pub const DEFAULT_QUESTIONS: f32 = 0.2;

fn default_questions() -> f32 {
    DEFAULT_QUESTIONS
}

/// The default of [`FusionWeights::short_turns`] (SPEC.md §18.3 has the
/// measurements).
pub const DEFAULT_SHORT_TURNS: f32 = 0.3;

/// Content words from which a turn is not short (see
/// [`FusionWeights::short_turns`]).
pub const SHORT_TURN_WORDS: usize = 10;

fn default_short_turns() -> f32 {
    DEFAULT_SHORT_TURNS
}

/// The default of [`FusionWeights::previous_turn`] (SPEC.md §18.2 has the
/// measurements).
pub const DEFAULT_PREVIOUS_TURN: f32 = 0.3;

fn default_previous_turn() -> f32 {
    DEFAULT_PREVIOUS_TURN
}

fn default_neighbours() -> f32 {
    0.5
}

/// The default of [`FusionWeights::answers`] (SPEC.md §18.3 has the
/// measurements).
pub const DEFAULT_ANSWERS: f32 = 0.8;

fn default_answers() -> f32 {
    DEFAULT_ANSWERS
}

impl Default for FusionWeights {
    fn default() -> Self {
        FusionWeights {
            keyword: 1.0,
            semantic: DEFAULT_SEMANTIC_WEIGHT,
            rrf_k: 60.0,
            method: FusionMethod::RelativeScore,
            neighbours: default_neighbours(),
            answers: DEFAULT_ANSWERS,
            second_neighbours: DEFAULT_SECOND_NEIGHBOURS,
            per_conversation: 0,
            coverage: DEFAULT_COVERAGE,
            speaker: DEFAULT_SPEAKER,
            questions: DEFAULT_QUESTIONS,
            short_turns: DEFAULT_SHORT_TURNS,
            previous_turn: DEFAULT_PREVIOUS_TURN,
        }
    }
}

/// A search request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRequest {
    /// The query: natural language, or keyword query syntax (see
    /// `language`).
    pub query: String,
    /// Ranking mode (default hybrid).
    #[serde(default)]
    pub mode: SearchMode,
    /// How the keyword side reads `query` (default by mode: syntax in
    /// keyword mode, natural language otherwise).
    #[serde(default)]
    pub language: QueryLanguage,
    /// Conversation scope filters.
    #[serde(default)]
    pub filter: Filter,
    /// Only messages of this conversation.
    #[serde(default)]
    pub conversation_id: Option<Uuid>,
    /// Only messages with this role.
    #[serde(default)]
    pub role: Option<String>,
    /// Most hits (1..=1000).
    pub limit: usize,
    /// Hits to skip (0..=10000).
    #[serde(default)]
    pub offset: usize,
    /// Attach each hit's score components.
    #[serde(default)]
    pub explain: bool,
    /// Hybrid fusion weights.
    #[serde(default)]
    pub weights: FusionWeights,
    /// Similarity floor in -1..=1 (semantic and hybrid): semantic
    /// candidates whose cosine similarity to the query is below it are
    /// dropped. In hybrid, a keyword match stays a candidate whatever its
    /// similarity. Default none: every neighbour found counts.
    #[serde(default)]
    pub min_similarity: Option<f32>,
}

impl SearchRequest {
    /// Top 10 hybrid hits for `query`, unfiltered.
    pub fn new(query: impl Into<String>) -> Self {
        SearchRequest {
            query: query.into(),
            mode: SearchMode::Hybrid,
            language: QueryLanguage::Auto,
            filter: Filter::default(),
            conversation_id: None,
            role: None,
            limit: 10,
            offset: 0,
            explain: false,
            weights: FusionWeights::default(),
            min_similarity: None,
        }
    }

    /// The same request with a similarity floor (see
    /// [`SearchRequest::min_similarity`]).
    pub fn min_similarity(mut self, floor: f32) -> Self {
        self.min_similarity = Some(floor);
        self
    }

    /// The same request in `mode`.
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// The same request with its query read as `language`.
    pub fn language(mut self, language: QueryLanguage) -> Self {
        self.language = language;
        self
    }

    /// The same request with at most `limit` hits.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

/// The hits of a search and how they were found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    /// Hits, best first.
    pub hits: Vec<SearchHit>,
    /// The mode that produced them (a hybrid search without a usable
    /// embedder runs as keyword; see `notes`).
    pub mode: SearchMode,
    /// What the caller should know: truncation, fallbacks, messages not
    /// embedded yet.
    pub notes: Vec<SearchNote>,
    /// With `explain`, how the semantic side searched each graph of the
    /// message space's index (the filtered-search planner's choice and the
    /// allowed-set size it was made from); empty otherwise and in keyword
    /// mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<VectorPlan>,
}

/// How the text index reads the query: `previous_turn`, the weight of
/// the turn before each message (hybrid search only; SPEC.md §18.2).
fn reading(natural: bool, previous_turn: f32) -> Reading {
    if natural {
        Reading::Natural { previous_turn }
    } else {
        Reading::Syntax
    }
}

/// A ranked list of (message id, score), best first.
type Ranking = Vec<(u128, f32)>;

/// The semantic side of a search: the ranking, the query's vector and the
/// message space it was searched in.
struct SemanticSide {
    ranking: Ranking,
    query: Vec<f32>,
    space: crate::vector::spaces::VectorSpace,
    plan: Vec<VectorPlan>,
}

/// Min-max bounds of the values present, `None` when there are none.
fn bounds(values: impl Iterator<Item = f32>) -> Option<(f32, f32)> {
    values.fold(None, |b, v| match b {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// `v` min-max normalised into [0, 1] by `bounds`; every value scores 1
/// when they are all equal.
fn normalise(v: f32, (min, max): (f32, f32)) -> f32 {
    if max > min {
        ((v - min) / (max - min)).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// Fuses two rankings (see [`FusionMethod`]); returns (id, fused score,
/// explanation), best first, ties broken by the better single rank and then
/// by id so the order is deterministic.
///
/// Relative score fusion: the keyword signal is BM25 min-max normalised
/// over the keyword ranking's own candidates; a candidate outside it scores
/// 0 (it does not match, or scores at most the ranking's lowest BM25). The
/// semantic signal is every candidate's cosine similarity, the keyword-only
/// ones' taken from `semantic_fill`, min-max normalised over all candidates
/// that have one; a candidate without a vector scores 0. RRF uses the ranks
/// only (the fills still show in the explanation).
pub(crate) fn fuse(
    keyword: &Ranking,
    semantic: &Ranking,
    semantic_fill: &HashMap<u128, f32>,
    w: FusionWeights,
) -> Vec<(u128, f32, ScoreExplain)> {
    let mut by_id: HashMap<u128, ScoreExplain> = HashMap::new();
    for (i, &(id, s)) in keyword.iter().enumerate() {
        let e = by_id.entry(id).or_default();
        e.keyword_rank = Some(i + 1);
        e.keyword_score = Some(s);
    }
    for (i, &(id, s)) in semantic.iter().enumerate() {
        let e = by_id.entry(id).or_default();
        e.semantic_rank = Some(i + 1);
        e.similarity = Some(s);
    }
    for (id, e) in by_id.iter_mut() {
        if e.similarity.is_none() {
            e.similarity = semantic_fill.get(id).copied();
        }
    }
    let kb = bounds(keyword.iter().map(|x| x.1));
    let sb = bounds(by_id.values().filter_map(|e| e.similarity));
    let rrf =
        |weight: f32, rank: Option<usize>| rank.map_or(0.0, |r| weight / (w.rrf_k + r as f32));
    let mut out: Vec<(u128, f32, ScoreExplain)> = by_id
        .into_iter()
        .map(|(id, mut e)| {
            let f = match w.method {
                FusionMethod::RelativeScore => {
                    let k = match (kb, e.keyword_rank, e.keyword_score) {
                        (Some(b), Some(_), Some(v)) => normalise(v, b),
                        _ => 0.0,
                    };
                    let s = match (sb, e.similarity) {
                        (Some(b), Some(v)) => normalise(v, b),
                        _ => 0.0,
                    };
                    w.keyword * k + w.semantic * s
                }
                FusionMethod::Rrf => {
                    rrf(w.keyword, e.keyword_rank) + rrf(w.semantic, e.semantic_rank)
                }
            };
            e.fused = Some(f);
            (id, f, e)
        })
        .collect();
    sort_fused(&mut out);
    out
}

/// The vector search for `k` semantic candidates (clamped to
/// [`MAX_LIMIT`]), its beam at least the index's default.
fn semantic_params(k: usize) -> VectorSearch {
    let k = k.min(MAX_LIMIT);
    VectorSearch {
        k,
        ef: k.max(VectorSearch::default().ef),
    }
}

/// Vector hits as a semantic ranking, those under the request's
/// `min_similarity` dropped.
fn similarity_ranking(hits: Vec<VectorHit>, req: &SearchRequest) -> Ranking {
    let floor = req.min_similarity.unwrap_or(f32::NEG_INFINITY);
    hits.into_iter()
        .filter(|h| h.similarity >= floor)
        .map(|h| (h.record.as_u128(), h.similarity))
        .collect()
}

/// Best fused score first, ties broken by the better single rank, then by
/// id, so the order is deterministic.
fn sort_fused(out: &mut [(u128, f32, ScoreExplain)]) {
    let best_rank = |e: &ScoreExplain| {
        e.keyword_rank
            .unwrap_or(usize::MAX)
            .min(e.semantic_rank.unwrap_or(usize::MAX))
    };
    out.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(best_rank(&a.2).cmp(&best_rank(&b.2)))
            .then(a.0.cmp(&b.0))
    });
}

/// What hybrid search adds to the fused score of a candidate dated inside
/// the period the question names (SPEC.md §18): relative-score fusion
/// scores lie in `0..=keyword + semantic weight` (2 by default), so a
/// dated candidate overtakes an undated one that is up to this much
/// better on the text.
pub const PERIOD_BOOST: f32 = 0.5;

/// Fused candidates whose neighbouring turns neighbour expansion adds.
const NEIGHBOUR_PARENTS: usize = 10;

/// Fused candidates read for their date when the question names a period.
const PERIOD_DEPTH: usize = 200;

/// A date every relative form resolves against, to ask whether the query
/// has one before the candidates' own timeline is known.
fn probe_anchor() -> chrono::NaiveDate {
    chrono::NaiveDate::from_ymd_opt(2000, 6, 15).unwrap_or_default()
}

impl Memdb {
    /// Searches messages by keyword, meaning, or both (see [`SearchMode`]).
    /// Hits are resolved to their message, label and folder; scores are
    /// higher-is-better in every mode.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResults> {
        if req.query.trim().is_empty() {
            return Err(Error::invalid("query", "query is empty"));
        }
        check_limit("limit", req.limit)?;
        if req.offset > MAX_OFFSET {
            return Err(Error::invalid(
                "offset",
                format!("{} is above {MAX_OFFSET}", req.offset),
            ));
        }
        let w = req.weights;
        for (field, v) in [
            ("weights.keyword", w.keyword),
            ("weights.semantic", w.semantic),
        ] {
            if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
                return Err(Error::invalid(field, format!("{v} is outside 0..=100")));
            }
        }
        if !(w.neighbours.is_finite() && (0.0..=1.0).contains(&w.neighbours)) {
            return Err(Error::invalid(
                "weights.neighbours",
                format!("{} is outside 0..=1", w.neighbours),
            ));
        }
        for (field, v) in [
            ("weights.coverage", w.coverage),
            ("weights.speaker", w.speaker),
            ("weights.answers", w.answers),
            ("weights.second_neighbours", w.second_neighbours),
            ("weights.questions", w.questions),
            ("weights.short_turns", w.short_turns),
            ("weights.previous_turn", w.previous_turn),
        ] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(Error::invalid(field, format!("{v} is outside 0..=1")));
            }
        }
        if w.per_conversation > 1_000 {
            return Err(Error::invalid(
                "weights.per_conversation",
                format!("{} is outside 0..=1000", w.per_conversation),
            ));
        }
        if !(w.rrf_k.is_finite() && (0.0..=10_000.0).contains(&w.rrf_k)) {
            return Err(Error::invalid(
                "weights.rrf_k",
                format!("{} is outside 0..=10000", w.rrf_k),
            ));
        }
        if let Some(f) = req.min_similarity
            && !(f.is_finite() && (-1.0..=1.0).contains(&f))
        {
            return Err(Error::invalid(
                "min_similarity",
                format!("{f} is outside -1..=1"),
            ));
        }
        let filter = normalize_filter(&req.filter)?;
        let natural = req.language.is_natural(req.mode);
        if req.mode != SearchMode::Semantic {
            // Over budget is refused outright, not skipped as a keyword
            // side that does not parse is (SPEC §16.1). Natural language
            // can only be too long.
            if natural {
                crate::text::budget::check_natural(&req.query)?;
            } else {
                crate::text::budget::check(&req.query)?;
            }
        }
        let mut notes = Vec::new();
        let window = req.offset + req.limit;
        match req.mode {
            SearchMode::Keyword => {
                if req.min_similarity.is_some() {
                    notes.push(SearchNote::MinSimilarityIgnored);
                }
                if natural && !crate::text::natural::has_words(&req.query) {
                    notes.push(SearchNote::NoWords);
                }
                let ids = self.text_hits_as(
                    &self.text_query(req, &filter, req.limit, req.offset),
                    reading(natural, 0.0),
                )?;
                let mut hits = self.resolve_hits(&ids)?;
                if req.explain {
                    for (i, h) in hits.iter_mut().enumerate() {
                        h.explain = Some(ScoreExplain {
                            keyword_rank: Some(req.offset + i + 1),
                            keyword_score: Some(h.score),
                            ..ScoreExplain::default()
                        });
                    }
                }
                Ok(SearchResults {
                    hits,
                    mode: SearchMode::Keyword,
                    notes,
                    plan: Vec::new(),
                })
            }
            SearchMode::Semantic => {
                let SemanticSide { ranking, plan, .. } =
                    self.semantic_side(req, &filter, window, &mut notes)?;
                let page: Ranking = ranking.into_iter().skip(req.offset).collect();
                let mut hits = self.resolve_hits(&page)?;
                if req.explain {
                    for (i, h) in hits.iter_mut().enumerate() {
                        h.explain = Some(ScoreExplain {
                            semantic_rank: Some(req.offset + i + 1),
                            similarity: Some(h.score),
                            ..ScoreExplain::default()
                        });
                    }
                }
                Ok(SearchResults {
                    hits,
                    mode: SearchMode::Semantic,
                    notes,
                    plan: if req.explain { plan } else { Vec::new() },
                })
            }
            SearchMode::Hybrid => self.hybrid(req, &filter, notes),
        }
    }

    fn text_query(
        &self,
        req: &SearchRequest,
        filter: &Filter,
        limit: usize,
        offset: usize,
    ) -> TextQuery {
        TextQuery {
            query: req.query.clone(),
            filter: filter.clone(),
            conversation_id: req.conversation_id,
            role: req.role.clone(),
            limit,
            offset,
        }
    }

    /// The semantic ranking, with the query vector and the space it was
    /// searched in (hybrid scores keyword-only candidates with them).
    fn semantic_side(
        &self,
        req: &SearchRequest,
        filter: &Filter,
        k: usize,
        notes: &mut Vec<SearchNote>,
    ) -> Result<SemanticSide> {
        let (embedder, space) = self.semantic_target()?;
        let (query, truncated) = self.query_vector(embedder.as_ref(), &space, &req.query)?;
        if truncated {
            notes.push(SearchNote::QueryTruncated {
                max_tokens: embedder.max_tokens().unwrap_or(0),
            });
        }
        let (pending, capped) = self.pending_for(space.id, 1000)?;
        if pending > 0 {
            notes.push(SearchNote::NotEmbeddedYet {
                pending,
                at_least: capped,
            });
        }
        let vf = VectorFilter {
            scope: filter.clone(),
            conversation_id: req.conversation_id,
            role: req.role.clone(),
            records: None,
        };
        let (hits, plan) =
            self.search_message_vectors(&space.name, &query, semantic_params(k), &vf)?;
        Ok(SemanticSide {
            ranking: similarity_ranking(hits, req),
            query,
            space,
            plan,
        })
    }

    /// The relative period ("last month") `query` names, resolved against
    /// the latest date among the candidates of both rankings: the fallback
    /// when the scope is too wide to read its own latest date
    /// ([`period::ScopeDates`]); `None` when it names none or no candidate
    /// is dated. A message's date is
    /// [`crate::util::dates::event_date`].
    fn relative_period(
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

    /// The date of each message of `ids` that still exists
    /// ([`crate::util::dates::event_date`]: its metadata's session date,
    /// else its timestamp's day).
    fn event_dates(&self, ids: &Ranking) -> Result<HashMap<u128, chrono::NaiveDate>> {
        Ok(self
            .resolve_hits(ids)?
            .iter()
            .map(|h| {
                (
                    h.message.id.as_u128(),
                    crate::util::dates::event_date(&h.message.metadata, h.message.timestamp),
                )
            })
            .collect())
    }

    /// Adds [`PERIOD_BOOST`] to the fused candidates (the first
    /// [`PERIOD_DEPTH`]) dated inside `period`, the period the query names
    /// (an absolute one, or a relative one [`Self::relative_period`]
    /// resolved). A message's date is [`crate::util::dates::event_date`].
    fn favour_period(
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

    /// Neighbour expansion (SPEC.md §18.3): the turns just before and after
    /// each of the first [`NEIGHBOUR_PARENTS`] fused candidates enter with
    /// `w.neighbours` of that candidate's score (or keep their own when
    /// higher), so the reply to a matching question ("Yes, last Tuesday!")
    /// can come back with it; the turn after a candidate that asks
    /// something (holds a `?`) enters with `w.answers`, and the turns two
    /// away (the same speaker's, in a dialogue) with
    /// `w.second_neighbours`. Run only without a role or time filter,
    /// which a neighbour might not pass (it always shares the hit's
    /// conversation, so every conversation-scope filter holds for it).
    fn expand_neighbours(
        &self,
        fused: &mut Vec<(u128, f32, ScoreExplain)>,
        w: FusionWeights,
    ) -> Result<()> {
        let parents: Ranking = fused
            .iter()
            .take(NEIGHBOUR_PARENTS)
            .map(|(id, s, _)| (*id, *s))
            .collect();
        let ids: Vec<u128> = parents.iter().map(|(id, _)| *id).collect();
        // The turns two away are read only when they get a share.
        let reach = if w.second_neighbours > 0.0 { 2 } else { 1 };
        let around = self.neighbour_turns(&ids, reach)?;
        let mut index: HashMap<u128, usize> =
            fused.iter().enumerate().map(|(i, x)| (x.0, i)).collect();
        let mut moved = false;
        let rows = self.row_reader();
        for (rank, (id, score)) in parents.into_iter().enumerate() {
            let Some((before, after)) = around.get(&id) else {
                continue;
            };
            let next_share = if w.answers > 0.0
                && rows
                    .message(id)?
                    .is_some_and(|m| m.content.text().contains('?'))
            {
                w.answers
            } else {
                w.neighbours
            };
            for (nb, share) in [
                (before.first(), w.neighbours),
                (after.first(), next_share),
                (before.get(1), w.second_neighbours),
                (after.get(1), w.second_neighbours),
            ] {
                let Some(nb) = nb.filter(|_| share > 0.0) else {
                    continue;
                };
                let s = share * score;
                match index.get(nb) {
                    Some(&i) => {
                        if fused[i].1 < s {
                            fused[i].1 = s;
                            fused[i].2.fused = Some(s);
                            fused[i].2.neighbour_of = Some(rank + 1);
                            moved = true;
                        }
                    }
                    None => {
                        index.insert(*nb, fused.len());
                        fused.push((
                            *nb,
                            s,
                            ScoreExplain {
                                fused: Some(s),
                                neighbour_of: Some(rank + 1),
                                ..ScoreExplain::default()
                            },
                        ));
                        moved = true;
                    }
                }
            }
        }
        if moved {
            sort_fused(fused);
        }
        Ok(())
    }

    /// Short turns (SPEC.md §18.3, [`FusionWeights::short_turns`]): a
    /// candidate with `n` < [`SHORT_TURN_WORDS`] content words in what it
    /// says has its fused score multiplied by `1 − share · (SHORT_TURN_WORDS
    /// − n) / SHORT_TURN_WORDS`, unless the turn before it in its
    /// conversation asks something (holds a `?`): a short reply ("Yes,
    /// last Tuesday!") carries its question's meaning. Short chat turns
    /// ("Hahaha this spring", "So what type of job?") otherwise crowd the
    /// top on a single shared word, by BM25's length normalisation and by
    /// the embedding model's pull towards short texts.
    fn discount_short_turns(
        &self,
        fused: &mut [(u128, f32, ScoreExplain)],
        share: f32,
    ) -> Result<()> {
        let rows = self.row_reader();
        let mut short = Vec::new();
        for (i, (id, _, _)) in fused.iter().enumerate() {
            if let Some(m) = rows.message(*id)? {
                let n = speaker::content_words_said(&m.content.text());
                if n < SHORT_TURN_WORDS {
                    let lacking = (SHORT_TURN_WORDS - n) as f32 / SHORT_TURN_WORDS as f32;
                    short.push((i, 1.0 - share * lacking));
                }
            }
        }
        if short.is_empty() {
            return Ok(());
        }
        let ids: Vec<u128> = short.iter().map(|&(i, _)| fused[i].0).collect();
        let around = self.neighbour_turns(&ids, 1)?;
        for (i, factor) in short {
            let before = around
                .get(&fused[i].0)
                .and_then(|(before, _)| before.first().copied());
            let reply = match before {
                Some(b) => rows
                    .message(b)?
                    .is_some_and(|m| m.content.text().contains('?')),
                None => false,
            };
            if !reply {
                let (_, f, e) = &mut fused[i];
                *f *= factor;
                e.fused = Some(*f);
                e.short_factor = Some(factor);
            }
        }
        sort_fused(fused);
        Ok(())
    }

    /// Speakers and questions (SPEC.md §18.3), from one read of each fused
    /// candidate. Speakers ([`FusionWeights::speaker`], with `speakers`:
    /// the question and the share): when the question names the speaker
    /// of some candidates and others have another speaker, those others
    /// lose the share of their fused score; a candidate without a known
    /// speaker keeps its score. Questions ([`FusionWeights::questions`],
    /// `questions` > 0): a candidate that only asks loses that share.
    fn weigh_turns(
        &self,
        fused: &mut [(u128, f32, ScoreExplain)],
        speakers: Option<(&str, f32)>,
        questions: f32,
    ) -> Result<()> {
        let words = speakers.map(|(query, _)| speaker::question_words(query));
        let rows = self.row_reader();
        let mut named = Vec::with_capacity(fused.len());
        let mut asks = Vec::with_capacity(fused.len());
        for (id, _, _) in fused.iter() {
            let (n, a) = match rows.message(*id)? {
                Some(m) => {
                    let text = m.content.text();
                    (
                        words.as_ref().and_then(|words| {
                            speaker::speaker_of(&m.metadata, &text)
                                .map(|s| speaker::names(words, &s))
                        }),
                        questions > 0.0 && speaker::asks_only(&text),
                    )
                }
                None => (None, false),
            };
            named.push(n);
            asks.push(a);
        }
        let speaker_share = speakers
            .filter(|_| named.contains(&Some(true)) && named.contains(&Some(false)))
            .map(|(_, share)| share);
        if speaker_share.is_none() && !asks.contains(&true) {
            return Ok(());
        }
        for ((_, f, e), (named, asks)) in fused.iter_mut().zip(named.into_iter().zip(asks)) {
            if let Some(share) = speaker_share {
                let factor = if named == Some(false) {
                    1.0 - share
                } else {
                    1.0
                };
                *f *= factor;
                e.fused = Some(*f);
                e.speaker_factor = Some(factor);
            }
            if asks {
                *f *= 1.0 - questions;
                e.fused = Some(*f);
            }
        }
        sort_fused(fused);
        Ok(())
    }

    /// Session spread ([`FusionWeights::per_conversation`]): within the
    /// first [`SPREAD_WINDOW`] candidates, a conversation's hits after its
    /// first `cap` move behind the others (kept in order), so the top of
    /// the list reaches more sessions. Scores are unchanged.
    fn spread_conversations(
        &self,
        fused: &mut Vec<(u128, f32, ScoreExplain)>,
        cap: usize,
    ) -> Result<()> {
        let window = fused.len().min(SPREAD_WINDOW);
        let rows = self.row_reader();
        let mut seen: HashMap<u128, usize> = HashMap::new();
        let mut kept = Vec::with_capacity(fused.len());
        let mut later = Vec::new();
        for x in fused.drain(..window) {
            let conv = rows.message(x.0)?.map(|m| m.conversation_id.as_u128());
            let n = conv.map_or(0, |c| {
                let n = seen.entry(c).or_default();
                *n += 1;
                *n
            });
            if n <= cap {
                kept.push(x);
            } else {
                later.push(x);
            }
        }
        kept.append(&mut later);
        kept.append(fused);
        *fused = kept;
        Ok(())
    }

    /// The most of `query`'s content terms any of the first
    /// [`COVERAGE_DEPTH`] keyword hits holds, in 0..=1 (1 when the query
    /// has no content term: nothing to discount).
    fn keyword_coverage(&self, query: &str, keyword: &Ranking) -> Result<f32> {
        let text = self.text();
        let terms = text.content_terms(query);
        if terms.is_empty() {
            // Nothing to cover (only reporting verbs, say): no message read.
            return Ok(1.0);
        }
        // The messages alone, through the row cache: no conversation read.
        let rows = self.row_reader();
        let mut best: Option<f32> = None;
        for (id, _) in keyword.iter().take(COVERAGE_DEPTH) {
            if let Some(m) = rows.message(*id)? {
                let c = text.coverage(&terms, &m.content.text());
                best = Some(best.map_or(c, |b| b.max(c)));
            }
        }
        Ok(best.unwrap_or(1.0))
    }

    fn hybrid(
        &self,
        req: &SearchRequest,
        filter: &Filter,
        mut notes: Vec<SearchNote>,
    ) -> Result<SearchResults> {
        // Fusion reads at most MAX_LIMIT candidates per ranking, so hybrid
        // pages end 1000 hits deep.
        let depth = (req.offset + req.limit).clamp(MIN_FUSION_DEPTH, MAX_LIMIT);
        // A period the question names ("in May 2023") is a date condition,
        // not words to match: both sides search the rest of the question
        // and the candidates dated inside it are favoured after fusion.
        let natural_query = req.language.is_natural(req.mode);
        let absolute = natural_query
            .then(|| crate::util::dates::query_period(&req.query, None))
            .flatten();
        let relative = natural_query
            && absolute.is_none()
            && crate::util::dates::query_period(&req.query, Some(probe_anchor())).is_some();
        let stripped;
        let req = match absolute {
            Some(p) => {
                let rest = format!("{} {}", &req.query[..p.span.0], &req.query[p.span.1..]);
                if crate::text::natural::has_content(&rest) {
                    stripped = SearchRequest {
                        query: rest,
                        ..req.clone()
                    };
                    &stripped
                } else {
                    req
                }
            }
            None => req,
        };
        let semantic = match self.semantic_side(req, filter, depth, &mut notes) {
            Ok(r) => Some(r),
            Err(e @ (Error::ModelMismatch { .. } | Error::Embedding(_))) => {
                notes.push(SearchNote::SemanticUnavailable {
                    reason: e.to_string(),
                });
                None
            }
            Err(Error::InvalidInput { field, .. }) if field == "mode" => {
                notes.push(SearchNote::NoEmbedder);
                None
            }
            Err(e) => return Err(e),
        };
        let natural = req.language.is_natural(req.mode);
        let keyword_query = if natural {
            // Natural language (SPEC.md §16.2): the text index requires a
            // content word itself; without one, a keyword match would be
            // one through stop words only.
            if !crate::text::natural::has_words(&req.query) {
                notes.push(if semantic.is_some() {
                    SearchNote::KeywordNoWords
                } else {
                    SearchNote::NoWords
                });
                String::new()
            } else if semantic.is_some() && !crate::text::natural::has_content(&req.query) {
                notes.push(SearchNote::KeywordStopWordsOnly);
                String::new()
            } else {
                req.query.clone()
            }
        } else {
            match hybrid_keyword_query(&req.query) {
                Some(q) => q,
                None if semantic.is_some() => {
                    notes.push(SearchNote::KeywordStopWordsOnly);
                    String::new()
                }
                None => req.query.clone(),
            }
        };
        let keyword_text_query = TextQuery {
            query: keyword_query,
            ..self.text_query(req, filter, depth, 0)
        };
        // The turn before counts only in a fused ranking: run as keyword
        // search (no usable embedder), hybrid's hits hold the words asked
        // for, as keyword mode's do (SPEC.md §18.2).
        let previous_turn = if semantic.is_some() {
            req.weights.previous_turn
        } else {
            0.0
        };
        let keyword = match (!keyword_text_query.query.is_empty())
            .then(|| self.text_hits_as(&keyword_text_query, reading(natural, previous_turn)))
            .transpose()
        {
            Ok(r) => r,
            // A query read as syntax may not parse (an unbalanced quote):
            // the semantic ranking still answers. Natural language never
            // fails here.
            Err(Error::InvalidInput { field, reason })
                if field == "query" && semantic.is_some() =>
            {
                notes.push(SearchNote::KeywordSkipped { reason });
                None
            }
            Err(e) => return Err(e),
        };
        let Some(semantic) = semantic else {
            // Keyword only: the page straight from BM25.
            let ids: Ranking = keyword
                .unwrap_or_default()
                .into_iter()
                .skip(req.offset)
                .take(req.limit)
                .collect();
            let mut hits = self.resolve_hits(&ids)?;
            if req.explain {
                for (i, h) in hits.iter_mut().enumerate() {
                    h.explain = Some(ScoreExplain {
                        keyword_rank: Some(req.offset + i + 1),
                        keyword_score: Some(h.score),
                        ..ScoreExplain::default()
                    });
                }
            }
            return Ok(SearchResults {
                hits,
                mode: SearchMode::Keyword,
                notes,
                plan: Vec::new(),
            });
        };
        // Score every candidate on the semantic signal: the exact cosine of
        // each keyword-only candidate, from its stored vector.
        let SemanticSide {
            ranking: semantic,
            query,
            space,
            plan,
        } = semantic;
        let mut keyword = keyword.unwrap_or_default();
        let mut semantic = semantic;
        // The searched conversations' own timeline, read when the question
        // names a period (SPEC.md §18.3).
        let timeline = if absolute.is_some() || relative {
            self.scope_dates(filter, req.conversation_id)?
        } else {
            None
        };
        // The period the question names: a relative one ("last Tuesday")
        // resolved against the scope's latest date, or, in a scope too wide
        // to list, the latest among both rankings' candidates.
        let period = match absolute {
            Some(p) => Some(p),
            None if relative => match timeline.as_ref().and_then(period::ScopeDates::latest) {
                Some(today) => crate::util::dates::query_period(&req.query, Some(today)),
                None => self.relative_period(&req.query, &keyword, &semantic)?,
            },
            None => None,
        };
        // A named period's own conversations, searched on their own: their
        // best turns join both rankings (SPEC.md §18.3).
        if let Some(p) = period
            && req.role.is_none()
            && filter.since.is_none()
            && filter.until.is_none()
            && let Some(within) = timeline.as_ref().and_then(|t| t.meeting(&p))
            && !within.is_empty()
        {
            if !keyword_text_query.query.is_empty() {
                // A query the main keyword search could not read was noted
                // there; the period adds nothing to that side then.
                match self.text_hits_within(
                    &keyword_text_query,
                    reading(natural, previous_turn),
                    &within,
                ) {
                    Ok(hits) => period::merge_ranking(&mut keyword, hits),
                    Err(Error::InvalidInput { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            let ids: Vec<u128> = within.iter().map(|c| c.as_u128()).collect();
            let (hits, _) =
                self.search_message_vectors_within(&space, &query, semantic_params(depth), &ids)?;
            period::merge_ranking(&mut semantic, similarity_ranking(hits, req));
        }
        let in_semantic: HashSet<u128> = semantic.iter().map(|x| x.0).collect();
        let keyword_only: Vec<u128> = keyword
            .iter()
            .map(|x| x.0)
            .filter(|id| !in_semantic.contains(id))
            .collect();
        let semantic_fill = self.similarities(&space, &query, &keyword_only)?;
        let mut weights = req.weights;
        if weights.coverage > 0.0 && !keyword.is_empty() {
            let covered = self.keyword_coverage(&req.query, &keyword)?;
            weights.keyword = covered_keyword_weight(weights, covered);
        }
        let mut fused = fuse(&keyword, &semantic, &semantic_fill, weights);
        if weights.coverage > 0.0 {
            for (_, _, e) in &mut fused {
                e.keyword_weight = Some(weights.keyword);
            }
        }
        if let Some(p) = period {
            self.favour_period(&mut fused, p)?;
        }
        if req.weights.short_turns > 0.0 && natural_query {
            self.discount_short_turns(&mut fused, req.weights.short_turns)?;
        }
        if (req.weights.neighbours > 0.0
            || req.weights.answers > 0.0
            || req.weights.second_neighbours > 0.0)
            && req.role.is_none()
            && filter.since.is_none()
            && filter.until.is_none()
        {
            self.expand_neighbours(&mut fused, req.weights)?;
        }
        let speakers = (req.weights.speaker > 0.0 && natural_query)
            .then_some((req.query.as_str(), req.weights.speaker));
        if speakers.is_some() || req.weights.questions > 0.0 {
            self.weigh_turns(&mut fused, speakers, req.weights.questions)?;
        }
        if req.weights.per_conversation > 0 {
            self.spread_conversations(&mut fused, req.weights.per_conversation as usize)?;
        }
        let page: Vec<(u128, f32, ScoreExplain)> =
            fused.into_iter().skip(req.offset).take(req.limit).collect();
        let ids: Ranking = page.iter().map(|(id, s, _)| (*id, *s)).collect();
        let explains: HashMap<u128, ScoreExplain> =
            page.into_iter().map(|(id, _, e)| (id, e)).collect();
        let mut hits = self.resolve_hits(&ids)?;
        if req.explain {
            for h in &mut hits {
                h.explain = explains.get(&h.message.id.as_u128()).copied();
            }
        }
        Ok(SearchResults {
            hits,
            mode: SearchMode::Hybrid,
            notes,
            plan: if req.explain { plan } else { Vec::new() },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal weights (the fusion arithmetic these tests check; the
    /// default gives meaning half the keyword ranking's weight).
    fn equal() -> FusionWeights {
        FusionWeights {
            semantic: 1.0,
            ..FusionWeights::default()
        }
    }

    #[test]
    fn coverage_discounts_the_keyword_weight_by_what_its_best_match_misses() {
        let off = FusionWeights {
            coverage: 0.0,
            ..FusionWeights::default()
        };
        assert_eq!(covered_keyword_weight(off, 0.0), off.keyword);
        assert_eq!(FusionWeights::default().coverage, DEFAULT_COVERAGE);
        let half = FusionWeights {
            coverage: 0.5,
            ..FusionWeights::default()
        };
        // Every content word matched: the weight stands.
        assert_eq!(covered_keyword_weight(half, 1.0), 1.0);
        // Half of them: a quarter off; none: half off.
        assert!((covered_keyword_weight(half, 0.5) - 0.75).abs() < 1e-6);
        assert!((covered_keyword_weight(half, 0.0) - 0.5).abs() < 1e-6);
        let full = FusionWeights {
            coverage: 1.0,
            keyword: 2.0,
            ..FusionWeights::default()
        };
        assert!((covered_keyword_weight(full, 0.25) - 0.5).abs() < 1e-6);
    }

    fn rrf() -> FusionWeights {
        FusionWeights {
            method: FusionMethod::Rrf,
            ..equal()
        }
    }

    fn none() -> HashMap<u128, f32> {
        HashMap::new()
    }

    fn scores(out: &[(u128, f32, ScoreExplain)]) -> Vec<(u128, f32)> {
        out.iter().map(|x| (x.0, x.1)).collect()
    }

    fn assert_scores(got: &[(u128, f32, ScoreExplain)], want: &[(u128, f32)]) {
        let got = scores(got);
        assert_eq!(got.len(), want.len(), "{got:?}");
        for ((id, f), (wid, wf)) in got.iter().zip(want) {
            assert_eq!(id, wid, "{got:?}");
            assert!((f - wf).abs() < 1e-5, "{got:?}");
        }
    }

    #[test]
    fn relative_score_normalises_similarity_over_all_candidates() {
        let kw = vec![(1, 9.0), (2, 5.0), (4, 1.0)];
        let sem = vec![(2, 0.9), (3, 0.8), (1, 0.5)];
        // Without fills (4 has no vector): keyword over its list [1, 9]:
        // 1 -> 1, 2 -> 0.5, 4 -> 0, 3 (not in it) -> 0; semantic over
        // [0.5, 0.9]: 2 -> 1, 3 -> 0.75, 1 -> 0, 4 -> 0.
        let out = fuse(&kw, &sem, &none(), equal());
        assert_scores(&out, &[(2, 1.5), (1, 1.0), (3, 0.75), (4, 0.0)]);
        // 4's real cosine, 0.3, widens the semantic range to [0.3, 0.9]:
        // 2 -> 1, 3 -> 5/6, 1 -> 1/3, 4 -> 0.
        let fill = HashMap::from([(4, 0.3)]);
        let out = fuse(&kw, &sem, &fill, equal());
        assert_scores(&out, &[(2, 1.5), (1, 4.0 / 3.0), (3, 5.0 / 6.0), (4, 0.0)]);
        // The explanation shows the filled-in similarity, with no rank.
        let four = out.iter().find(|x| x.0 == 4).map(|x| x.2);
        let four = four.unwrap_or_default();
        assert_eq!(
            (four.keyword_rank, four.keyword_score),
            (Some(3), Some(1.0))
        );
        assert_eq!((four.semantic_rank, four.similarity), (None, Some(0.3)));
        let three = out.iter().find(|x| x.0 == 3).map(|x| x.2);
        let three = three.unwrap_or_default();
        assert_eq!((three.keyword_rank, three.keyword_score), (None, None));
        // Weights scale each side.
        let w = FusionWeights {
            keyword: 0.5,
            semantic: 2.0,
            ..equal()
        };
        let out = fuse(&kw, &sem, &fill, w);
        assert_eq!(out[0].0, 2);
        assert!((out[0].1 - (0.25 + 2.0)).abs() < 1e-6);
    }

    #[test]
    fn a_keyword_hit_the_semantic_list_missed_keeps_its_similarity() {
        // What filling in fixes: keyword #1 (message 1) is just below the
        // semantic list's cut-off (0.55). Scored as the least similar
        // candidate it loses to 2, a weaker keyword match near the semantic
        // list's bottom; with its real cosine (0.54, next to 2's 0.6 and
        // far above 3's 0.1) it wins.
        let kw = vec![(1, 10.0), (2, 9.0), (3, 1.0)];
        let sem = vec![(4, 0.8), (2, 0.6), (5, 0.55)];
        let unfilled = fuse(&kw, &sem, &none(), equal());
        assert_eq!(unfilled[0].0, 2, "{:?}", scores(&unfilled));
        let fill = HashMap::from([(1, 0.54), (3, 0.1)]);
        let out = fuse(&kw, &sem, &fill, equal());
        assert_eq!(out[0].0, 1, "{:?}", scores(&out));
        // Semantic over [0.1, 0.8]: 1 scores 1 + 0.44 / 0.7.
        assert!((out[0].1 - (1.0 + 0.44 / 0.7)).abs() < 1e-5);
    }

    #[test]
    fn degenerate_signals() {
        // A list of one normalises to 1.
        let out = fuse(&vec![(7, 0.3)], &vec![], &none(), equal());
        assert_eq!(out[0].1, 1.0);
        // No keyword ranking (skipped): the keyword side adds nothing.
        let out = fuse(&vec![], &vec![(1, 0.9), (2, 0.5)], &none(), equal());
        assert_scores(&out, &[(1, 1.0), (2, 0.0)]);
        // Equal scores: all 1.
        let out = fuse(
            &vec![(1, 2.0), (2, 2.0)],
            &vec![(2, 0.5), (1, 0.5)],
            &none(),
            equal(),
        );
        assert_scores(&out, &[(1, 2.0), (2, 2.0)]);
        // No candidate has a vector: the semantic side adds nothing.
        let out = fuse(&vec![(1, 4.0), (2, 2.0)], &vec![], &none(), equal());
        assert_scores(&out, &[(1, 1.0), (2, 0.0)]);
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let kw = vec![(1, 9.0), (2, 5.0)];
        let sem = vec![(2, 0.9), (3, 0.8)];
        // Fills show in the explanation but RRF reads ranks only.
        let fill = HashMap::from([(1, 0.99)]);
        let out = fuse(&kw, &sem, &fill, rrf());
        let ids: Vec<u128> = out.iter().map(|x| x.0).collect();
        // 2 is in both lists: 1/62 + 1/61 beats 1/61 (id 1) and 1/62 (id 3).
        assert_eq!(ids, vec![2, 1, 3]);
        let two = out[0].2;
        assert_eq!((two.keyword_rank, two.semantic_rank), (Some(2), Some(1)));
        assert!((out[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-6);
        assert!((out[1].1 - 1.0 / 61.0).abs() < 1e-6);
        assert_eq!(out[1].2.similarity, Some(0.99));
    }

    #[test]
    fn weights_shift_the_order() {
        let kw = vec![(1, 9.0)];
        let sem = vec![(2, 0.9)];
        let w = FusionWeights {
            keyword: 0.5,
            semantic: 2.0,
            ..rrf()
        };
        let out = fuse(&kw, &sem, &none(), w);
        assert_eq!(out[0].0, 2);
        // Zero weight removes a ranking's influence but keeps its hits.
        let w0 = FusionWeights {
            keyword: 0.0,
            ..rrf()
        };
        let out = fuse(&kw, &sem, &none(), w0);
        assert_eq!(out[0].0, 2);
        assert_eq!(out[1].1, 0.0);
    }

    #[test]
    fn hybrid_keyword_side_requires_a_content_word() {
        assert_eq!(
            hybrid_keyword_query("How long should a  dessert stay in a hot stove?").as_deref(),
            Some("+(long dessert stay hot stove?) How long should a dessert stay in a hot stove?")
        );
        assert_eq!(hybrid_keyword_query("what is it"), None);
        // Query syntax is the user's: kept verbatim.
        for q in [
            "\"in the\" oven",
            "title:the",
            "the AND oven",
            "-the oven",
            "ov*",
        ] {
            assert_eq!(hybrid_keyword_query(q).as_deref(), Some(q));
        }
    }

    #[test]
    fn ties_break_by_best_rank_then_id() {
        // Same fused score (rank 1 in one list each): lower id first.
        let out = fuse(&vec![(7, 1.0)], &vec![(3, 0.5)], &none(), rrf());
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![3, 7]);
    }
}
