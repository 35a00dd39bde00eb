//! What a search asks and answers: [`SearchRequest`] (mode, language,
//! filters, paging and the hybrid [`FusionWeights`] with their defaults)
//! and [`SearchResults`] (SPEC.md §18.1).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::notes::SearchNote;
use crate::model::types::{Filter, SearchHit, VectorPlan};

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
    /// Questions: a turn that only asks (`speaker::asks_only`: every
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
    /// Questions lean on meaning: when a natural-language query asks (its
    /// last character other than white space is a question mark: `?`, `？`
    /// or `؟`), the semantic weight is multiplied by this (1..=10; 1 turns
    /// it off). A question is worded unlike the statement that answers
    /// it. Default [`DEFAULT_QUESTION_LIFT`]; SPEC.md §18.2.
    #[serde(default = "default_question_lift")]
    pub question_lift: f32,
    /// Session weight: a candidate's fused score is multiplied by `1 +
    /// session_mass · m / max m`, `m` the mean of its conversation's
    /// [`SESSION_MASS_TURNS`] best scores among the first
    /// [`SPREAD_WINDOW`] (0..=10; 0 turns it off). Default
    /// [`DEFAULT_SESSION_MASS`]; SPEC.md §18.3.
    #[serde(default = "default_session_mass")]
    pub session_mass: f32,
    /// Session tail: how many of the last of the first
    /// [`SESSION_TAIL_END`] places go to the best candidate of a
    /// conversation the places above do not hold, when it scores at least
    /// `session_tail_ratio` of the candidate it displaces (0..=10; 0 turns
    /// it off). Default [`DEFAULT_SESSION_TAIL`]; SPEC.md §18.3.
    #[serde(default = "default_session_tail")]
    pub session_tail: u32,
    /// See `session_tail` (0..=1). Default [`DEFAULT_SESSION_TAIL_RATIO`].
    #[serde(default = "default_session_tail_ratio")]
    pub session_tail_ratio: f32,
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

/// How deep the session spread reorders the fused list, and how deep the
/// session weight reads it.
pub const SPREAD_WINDOW: usize = 50;

/// How many of its best candidates make a conversation's session weight
/// (see [`FusionWeights::session_mass`]).
pub const SESSION_MASS_TURNS: usize = 3;

/// The places the session tail ends at (see
/// [`FusionWeights::session_tail`]): the first page a client asks for.
pub const SESSION_TAIL_END: usize = 10;

/// The default of [`FusionWeights::session_mass`] (SPEC.md §18.3 has the
/// measurements).
pub const DEFAULT_SESSION_MASS: f32 = 0.5;

fn default_session_mass() -> f32 {
    DEFAULT_SESSION_MASS
}

/// The default of [`FusionWeights::session_tail`] (SPEC.md §18.3 has the
/// measurements).
pub const DEFAULT_SESSION_TAIL: u32 = 4;

fn default_session_tail() -> u32 {
    DEFAULT_SESSION_TAIL
}

/// The default of [`FusionWeights::session_tail_ratio`].
pub const DEFAULT_SESSION_TAIL_RATIO: f32 = 0.8;

fn default_session_tail_ratio() -> f32 {
    DEFAULT_SESSION_TAIL_RATIO
}

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

/// The default of [`FusionWeights::question_lift`] (SPEC.md §18.2 has the
/// measurements): a question's semantic weight is 1.5 by default (1.2,
/// and 0.6, while all-MiniLM-L6-v2 was the default model).
pub const DEFAULT_QUESTION_LIFT: f32 = 3.0;

fn default_question_lift() -> f32 {
    DEFAULT_QUESTION_LIFT
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
            question_lift: DEFAULT_QUESTION_LIFT,
            session_mass: DEFAULT_SESSION_MASS,
            session_tail: DEFAULT_SESSION_TAIL,
            session_tail_ratio: DEFAULT_SESSION_TAIL_RATIO,
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

    /// Every rule a search request must pass (SPEC §18.1): a query that is
    /// not blank, `limit` and `offset` in range, each weight finite and in
    /// its range, `min_similarity` in -1..=1. The filter is checked where
    /// it is normalized, and the query's complexity by the text index's
    /// budget (§16.1). The first broken rule is the error, naming its field.
    pub fn validate(&self) -> Result<()> {
        if self.query.trim().is_empty() {
            return Err(Error::invalid("query", "query is empty"));
        }
        crate::model::filter::check_limit("limit", self.limit)?;
        if self.offset > super::MAX_OFFSET {
            return Err(Error::invalid(
                "offset",
                format!("{} is above {}", self.offset, super::MAX_OFFSET),
            ));
        }
        let w = &self.weights;
        let ranges: [(&str, f32, f32, f32); 14] = [
            ("weights.keyword", w.keyword, 0.0, 100.0),
            ("weights.semantic", w.semantic, 0.0, 100.0),
            ("weights.neighbours", w.neighbours, 0.0, 1.0),
            ("weights.coverage", w.coverage, 0.0, 1.0),
            ("weights.speaker", w.speaker, 0.0, 1.0),
            ("weights.answers", w.answers, 0.0, 1.0),
            ("weights.second_neighbours", w.second_neighbours, 0.0, 1.0),
            ("weights.questions", w.questions, 0.0, 1.0),
            ("weights.short_turns", w.short_turns, 0.0, 1.0),
            ("weights.previous_turn", w.previous_turn, 0.0, 1.0),
            ("weights.session_tail_ratio", w.session_tail_ratio, 0.0, 1.0),
            ("weights.question_lift", w.question_lift, 1.0, 10.0),
            ("weights.session_mass", w.session_mass, 0.0, 10.0),
            ("weights.rrf_k", w.rrf_k, 0.0, 10_000.0),
        ];
        for (field, v, lo, hi) in ranges {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return Err(Error::invalid(field, format!("{v} is outside {lo}..={hi}")));
            }
        }
        for (field, v, hi) in [
            (
                "weights.session_tail",
                w.session_tail,
                SESSION_TAIL_END as u32,
            ),
            ("weights.per_conversation", w.per_conversation, 1_000),
        ] {
            if v > hi {
                return Err(Error::invalid(field, format!("{v} is outside 0..={hi}")));
            }
        }
        if let Some(f) = self.min_similarity
            && !(f.is_finite() && (-1.0..=1.0).contains(&f))
        {
            return Err(Error::invalid(
                "min_similarity",
                format!("{f} is outside -1..=1"),
            ));
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(r: &SearchRequest) -> Option<String> {
        match r.validate() {
            Ok(()) => None,
            Err(Error::InvalidInput { field, .. }) => Some(field),
            Err(e) => panic!("not an input error: {e}"),
        }
    }

    /// The defaults pass; each weight refuses NaN and a value past its
    /// range, naming itself.
    #[test]
    fn each_rule_names_its_field() {
        let ok = SearchRequest::new("lisbon");
        assert_eq!(field_of(&ok), None);
        type Set = fn(&mut FusionWeights, f32);
        let cases: [(&str, Set); 6] = [
            ("weights.keyword", |w, v| w.keyword = v),
            ("weights.semantic", |w, v| w.semantic = v),
            ("weights.neighbours", |w, v| w.neighbours = v),
            ("weights.question_lift", |w, v| w.question_lift = v),
            ("weights.session_mass", |w, v| w.session_mass = v),
            ("weights.rrf_k", |w, v| w.rrf_k = v),
        ];
        for (field, set) in cases {
            for bad in [f32::NAN, 20_000.0, -1.0] {
                let mut r = ok.clone();
                set(&mut r.weights, bad);
                assert_eq!(field_of(&r).as_deref(), Some(field), "{field} = {bad}");
            }
        }
        let mut r = ok.clone();
        r.weights.session_tail = SESSION_TAIL_END as u32 + 1;
        assert_eq!(field_of(&r).as_deref(), Some("weights.session_tail"));
        let mut r = ok.clone();
        r.weights.per_conversation = 1_001;
        assert_eq!(field_of(&r).as_deref(), Some("weights.per_conversation"));
        assert_eq!(
            field_of(&ok.clone().min_similarity(1.5)).as_deref(),
            Some("min_similarity")
        );
        assert_eq!(
            field_of(&SearchRequest::new("  ")).as_deref(),
            Some("query")
        );
        let mut r = ok.clone();
        r.offset = super::super::MAX_OFFSET + 1;
        assert_eq!(field_of(&r).as_deref(), Some("offset"));
    }
}
