//! Semantic and hybrid search, the embedding pipeline (queue, inline and
//! background embedding, rebuild with an atomic switch, model identity) and
//! the query cache. The paraphrase tests run the real local model; the
//! pipeline tests use the lexical `Hashing` embedder where only the plumbing
//! is under test.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use memdb::*;

use crate::{conv, cosine as cos, tmp};

fn local() -> Arc<dyn Embedder> {
    static MODEL: OnceLock<Arc<LocalOnnx>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = default_models_dir().expect("models dir");
            Arc::new(LocalOnnx::open(&dir).unwrap_or_else(|e| {
                panic!("{e}\n(the semantic tests need scripts/install-model.sh to have run)")
            }))
        })
        .clone()
}

fn hashing(dim: u32) -> Arc<dyn Embedder> {
    Arc::new(Hashing::new(dim).expect("hashing embedder"))
}

fn open(dir: &std::path::Path, e: Arc<dyn Embedder>) -> Memdb {
    Memdb::open_with(dir, Config::with_embedder(e)).expect("open with embedder")
}

fn words(s: &str) -> HashSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .map(str::to_lowercase)
        .collect()
}

/// Distinct topics; each query is a paraphrase sharing no word longer than
/// two letters with its topic's messages (checked below).
const TOPICS: &[(&str, &[&str], &str)] = &[
    (
        "cooking",
        &[
            "Preheat the oven and whisk eggs with flour and sugar for the cake batter.",
            "Bake the sponge for thirty minutes until golden.",
        ],
        "how long should a dessert stay in a hot stove",
    ),
    (
        "car repair",
        &[
            "The engine makes a grinding noise when I brake; the pads may be worn.",
            "Replace the brake pads and check the rotors for scoring.",
        ],
        "my vehicle squeals while stopping",
    ),
    (
        "travel",
        &[
            "Book a flight to Tokyo and reserve a hotel near Shinjuku station.",
            "Pack a passport, a rail pass and comfortable shoes for the trip.",
        ],
        "lodging during my vacation in Japan",
    ),
    (
        "gardening",
        &[
            "Water the tomato seedlings every morning and add compost to the soil.",
            "Prune the rose bushes in early spring before new growth.",
        ],
        "looking after vegetable plants in my backyard",
    ),
    (
        "finance",
        &[
            "Move part of your salary into an index fund each month for retirement.",
            "Diversify investments across bonds and stocks to reduce risk.",
        ],
        "putting cash aside so I can quit my job when old",
    ),
];

#[test]
fn paraphrased_queries_find_their_topic_first() {
    let d = tmp();
    let db = open(d.path(), local());
    let mut ids = Vec::new();
    for (label, texts, query) in TOPICS {
        let c = conv(&db, label, "/topics", texts);
        ids.push(c.conversation.id);
        let shared: Vec<String> = words(query)
            .intersection(&texts.iter().flat_map(|t| words(t)).collect())
            .cloned()
            .collect();
        assert!(shared.is_empty(), "query {query:?} shares {shared:?}");
    }
    // Embedded on write: nothing is pending.
    let status = db.embedding_status().unwrap();
    let active = status.active.expect("active message space");
    assert_eq!(active.pending, 0);
    assert_eq!(active.model.provider, "local-onnx");
    for ((label, _, query), id) in TOPICS.iter().zip(&ids) {
        for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
            let r = db
                .sekha()
                .search(&SearchRequest::new(*query).mode(mode).limit(5))
                .unwrap();
            assert_eq!(r.mode, mode, "notes: {:?}", r.notes);
            let top = r.hits.first().expect("a hit");
            assert_eq!(
                top.message.conversation_id, *id,
                "{mode:?} query {query:?}: top hit is {:?} ({}), expected {label}",
                top.message.content, top.label
            );
            assert!(top.score > 0.0);
        }
        // Keyword search on the query's content words (stemmed by the
        // index) cannot find it.
        let content: Vec<String> = words(query).into_iter().collect();
        let kw = db
            .sekha()
            .search(&SearchRequest::new(content.join(" ")).mode(SearchMode::Keyword))
            .unwrap();
        assert!(kw.hits.iter().all(|h| h.message.conversation_id != *id));
    }
}

/// `explain` reports, per graph of the message space's index, the path the
/// filtered-search planner took and the allowed-set size it chose from.
#[test]
fn explain_reports_the_vector_planner_choice_per_graph() {
    let d = tmp();
    let db = open(d.path(), hashing(64));
    let mut ids = Vec::new();
    for i in 0..30 {
        let a = format!("topic {i} alpha");
        let b = format!("reply {i} beta");
        ids.push(conv(&db, &format!("c{i}"), "/", &[&a, &b]).conversation.id);
    }
    let spaces = db.vector_spaces().unwrap();
    assert_eq!(spaces.len(), 1, "{spaces:?}");
    db.compact_vectors(&spaces[0].name).unwrap();
    conv(&db, "late", "/", &["late alpha", "late beta"]);

    let semantic = SearchRequest::new("alpha").mode(SearchMode::Semantic);
    assert!(
        db.sekha().search(&semantic).unwrap().plan.is_empty(),
        "no explain, no plan"
    );
    let mut req = semantic.clone();
    req.explain = true;
    let part = |r: &SearchResults, part: IndexPart| -> VectorPlan {
        *r.plan
            .iter()
            .find(|p| p.part == part)
            .unwrap_or_else(|| panic!("no {part:?} plan in {:?}", r.plan))
    };

    // Unfiltered: a plain graph search of the 60 compacted vectors; the
    // delta holds the 2 written since (its live-node check makes it a
    // predicate, and 2 nodes are searched exactly).
    let all = db.sekha().search(&req).unwrap();
    let g = part(&all, IndexPart::Generation);
    assert_eq!(
        (g.path, g.nodes, g.allowed),
        (VectorPath::Unfiltered, 60, 60)
    );
    assert_eq!(g.exact_threshold, 1_000);
    let delta = part(&all, IndexPart::Delta);
    assert_eq!(
        (delta.path, delta.nodes, delta.allowed),
        (VectorPath::Exact, 2, 2)
    );

    // One conversation: its 2 messages of the 60, searched exactly.
    req.conversation_id = Some(ids[3]);
    let one = db.sekha().search(&req).unwrap();
    let g = part(&one, IndexPart::Generation);
    assert_eq!(
        (g.path, g.allowed, g.estimated),
        (VectorPath::Exact, 2, false)
    );
    assert!(!one.hits.is_empty());
    assert!(one.hits.iter().all(|h| h.message.conversation_id == ids[3]));

    // Hybrid carries the plan of its semantic side; keyword has none.
    let mut hybrid = SearchRequest::new("alpha");
    hybrid.explain = true;
    assert!(!db.sekha().search(&hybrid).unwrap().plan.is_empty());
    let mut keyword = SearchRequest::new("alpha").mode(SearchMode::Keyword);
    keyword.explain = true;
    assert!(db.sekha().search(&keyword).unwrap().plan.is_empty());
}

#[test]
fn hybrid_explains_and_fuses_both_rankings() {
    let d = tmp();
    let db = open(d.path(), local());
    conv(&db, "pw", "/", &["How do I reset my password?"]);
    conv(&db, "login", "/", &["I forgot my login credentials"]);
    conv(
        &db,
        "weather",
        "/",
        &["The weather is sunny in Paris today"],
    );
    let mut req = SearchRequest::new("password").limit(3);
    req.explain = true;
    // The fusion's own arithmetic: no short-turn or question discount
    // (§18.3) on these one-line messages.
    req.weights.short_turns = 0.0;
    req.weights.questions = 0.0;
    // Nor the session weight, which multiplies after them (tested in
    // the_session_pass_weighs_conversations_and_opens_the_tail_to_new_ones).
    req.weights.session_mass = 0.0;
    let r = db.sekha().search(&req).unwrap();
    assert_eq!(r.mode, SearchMode::Hybrid);
    let top = &r.hits[0];
    assert_eq!(top.label, "pw");
    let e = top.explain.expect("explained");
    assert_eq!(e.keyword_rank, Some(1));
    assert_eq!(e.semantic_rank, Some(1));
    // Top of both rankings: 1 · 1 + 0.5 · 1 under relative score fusion
    // with the default weights.
    let fused = e.fused.expect("fused score");
    let want = 1.0 + memdb::DEFAULT_SEMANTIC_WEIGHT;
    assert!((fused - want).abs() < 1e-6, "fused {fused}");
    assert!((top.score - fused).abs() < 1e-9);
    // The login message has no keyword hit but is semantically close: it is
    // still in the fused list, after the keyword+semantic hit.
    let login = r
        .hits
        .iter()
        .find(|h| h.label == "login")
        .expect("login hit");
    let le = login.explain.expect("explained");
    assert_eq!(le.keyword_rank, None);
    assert!(le.similarity.expect("similarity") > 0.3);
    // Semantic scores are similarities in [-1, 1], best first.
    let s = db
        .sekha()
        .search(&SearchRequest::new("forgotten password").mode(SearchMode::Semantic))
        .unwrap();
    assert!(s.hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(s.hits.iter().all(|h| (-1.0..=1.0001).contains(&h.score)));
}

#[test]
fn filters_apply_to_semantic_and_hybrid_search() {
    let d = tmp();
    let db = open(d.path(), hashing(256));
    conv(&db, "a", "/work", &["rust borrow checker lifetimes"]);
    let home = conv(
        &db,
        "b",
        "/home",
        &["rust borrow checker lifetimes at home"],
    );
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        let mut req = SearchRequest::new("borrow checker").mode(mode);
        req.filter.folder = Some("/home".into());
        let r = db.sekha().search(&req).unwrap();
        assert_eq!(r.hits.len(), 1, "{mode:?}");
        assert_eq!(r.hits[0].message.conversation_id, home.conversation.id);
        let mut req = SearchRequest::new("borrow checker").mode(mode);
        req.conversation_id = Some(home.conversation.id);
        req.role = Some("assistant".into());
        assert!(
            db.sekha().search(&req).unwrap().hits.is_empty(),
            "{mode:?} role filter"
        );
    }
}

#[test]
fn bad_search_requests_are_clear_errors() {
    let d = tmp();
    let db = open(d.path(), hashing(64));
    conv(&db, "a", "/", &["hello world"]);
    let err = |req: SearchRequest| db.sekha().search(&req).unwrap_err().to_string();
    assert!(err(SearchRequest::new("   ")).contains("query is empty"));
    assert!(err(SearchRequest::new("x").limit(0)).contains("limit"));
    assert!(err(SearchRequest::new("x").limit(1001)).contains("limit"));
    let mut r = SearchRequest::new("x");
    r.offset = MAX_OFFSET + 1;
    assert!(err(r).contains("offset"));
    let mut r = SearchRequest::new("x");
    r.weights.semantic = f32::NAN;
    assert!(err(r).contains("weights.semantic"));
    assert!("fuzzy".parse::<SearchMode>().is_err());
    // Hybrid reads natural language: an unbalanced quote is a character,
    // the keyword side runs.
    let mut r = SearchRequest::new("hello \"world");
    r.explain = true;
    let r = db.sekha().search(&r).unwrap();
    assert_eq!(r.mode, SearchMode::Hybrid);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(r.hits.len(), 1);
    assert!(r.hits[0].explain.and_then(|e| e.keyword_rank).is_some());
    // Read as syntax, it is a syntax error: hybrid still answers from the
    // semantic ranking and says so; keyword mode refuses it.
    let r = db
        .sekha()
        .search(&SearchRequest::new("hello \"world").language(QueryLanguage::Syntax))
        .unwrap();
    assert_eq!(r.mode, SearchMode::Hybrid);
    assert!(
        r.notes
            .iter()
            .any(|n| matches!(n, SearchNote::KeywordSkipped { .. }))
    );
    assert!(
        db.sekha()
            .search(&SearchRequest::new("hello \"world").mode(SearchMode::Keyword))
            .is_err()
    );
}

#[test]
fn min_similarity_drops_semantic_candidates_under_the_floor() {
    let d = tmp();
    let db = open(d.path(), hashing(256));
    conv(&db, "a", "/", &["rust borrow checker lifetimes"]);
    conv(&db, "b", "/", &["rust borrow checker"]);
    let stew = conv(
        &db,
        "c",
        "/",
        &["rust coloured stew with tomato basil garlic onion pepper and cream"],
    );
    conv(&db, "d", "/", &["sunny weather in paris today"]);
    let q = "rust borrow checker lifetimes";
    let all = db
        .sekha()
        .search(&SearchRequest::new(q).mode(SearchMode::Semantic).limit(50))
        .unwrap();
    assert_eq!(all.hits.len(), 4, "without a floor every neighbour counts");
    // A floor between the second and third similarity keeps exactly the
    // first two.
    let floor = (all.hits[1].score + all.hits[2].score) / 2.0;
    assert!(all.hits[1].score > all.hits[2].score);
    let req = SearchRequest::new(q)
        .mode(SearchMode::Semantic)
        .limit(50)
        .min_similarity(floor);
    let kept = db.sekha().search(&req).unwrap();
    let ids = |r: &SearchResults| r.hits.iter().map(|h| h.message.id).collect::<Vec<_>>();
    assert_eq!(ids(&kept), ids(&all)[..2].to_vec());
    assert!(kept.hits.iter().all(|h| h.score >= floor));

    // Hybrid: the weather message (no keyword match, under the floor) is
    // gone; the stew (a keyword match on "rust", under the floor) stays,
    // with its real similarity and no semantic rank.
    let mut req = SearchRequest::new(q).limit(50).min_similarity(floor);
    req.explain = true;
    let hybrid = db.sekha().search(&req).unwrap();
    assert_eq!(hybrid.mode, SearchMode::Hybrid);
    assert!(
        hybrid.hits.iter().all(|h| h.label != "d"),
        "{:?}",
        ids(&hybrid)
    );
    let stew_hit = hybrid
        .hits
        .iter()
        .find(|h| h.message.conversation_id == stew.conversation.id)
        .expect("the keyword match stays");
    let e = stew_hit.explain.expect("explained");
    assert!(e.keyword_rank.is_some());
    assert_eq!(e.semantic_rank, None);
    let sim = e.similarity.expect("filled-in similarity");
    assert!(sim < floor, "{sim} vs floor {floor}");
    let without = db.sekha().search(&SearchRequest::new(q).limit(50)).unwrap();
    assert!(without.hits.iter().any(|h| h.label == "d"));

    // Out of range: a clear error; keyword mode ignores it with a note.
    for bad in [1.5, -1.01, f32::NAN] {
        let err = db
            .sekha()
            .search(&SearchRequest::new(q).min_similarity(bad))
            .unwrap_err();
        assert!(err.to_string().contains("min_similarity"), "{err}");
    }
    let kw = db
        .sekha()
        .search(
            &SearchRequest::new(q)
                .mode(SearchMode::Keyword)
                .min_similarity(0.9),
        )
        .unwrap();
    assert_eq!(kw.hits.len(), 3);
    assert!(kw.notes.contains(&SearchNote::MinSimilarityIgnored));
}

#[test]
fn hybrid_scores_keyword_only_candidates_by_their_real_similarity() {
    let d = tmp();
    let db = open(d.path(), hashing(256));
    // Sixty messages close to the query through its stop words (the lexical
    // embedder counts them; the keyword side needs a content word): they
    // fill the semantic top 50. One keyword match ("zucchini") stays
    // outside it.
    for i in 0..60 {
        conv(
            &db,
            &format!("n{i}"),
            "/",
            &[&format!("what is the note{i}")],
        );
    }
    let far = conv(
        &db,
        "far",
        "/",
        &["zucchini bread with cheese, grandma's favourite recipe"],
    );
    let q = "what is the zucchini";
    let mut req = SearchRequest::new(q);
    req.explain = true;
    // Keyword weight only: the keyword match ranks first whatever its
    // similarity, which the explanation must still report.
    req.weights.semantic = 0.0;
    let r = db.sekha().search(&req).unwrap();
    let hit = &r.hits[0];
    assert_eq!(hit.message.conversation_id, far.conversation.id);
    let e = hit.explain.expect("explained");
    assert_eq!(e.keyword_rank, Some(1));
    assert_eq!(e.semantic_rank, None, "{e:?}");
    let sim = e.similarity.expect("its similarity is filled in");
    // The same number semantic search gives that message.
    let v = db
        .message_vector(hit.message.id)
        .unwrap()
        .expect("embedded");
    assert_eq!(v.len(), 256);
    let mut exact = SearchRequest::new(q).mode(SearchMode::Semantic);
    exact.conversation_id = Some(far.conversation.id);
    let s = db.sekha().search(&exact).unwrap();
    assert_eq!(s.hits[0].message.id, hit.message.id);
    assert!(
        (s.hits[0].score - sim).abs() < 1e-5,
        "{} vs {sim}",
        s.hits[0].score
    );
    // And it is below every semantic candidate (it was left out of them).
    let top = db
        .sekha()
        .search(&SearchRequest::new(q).mode(SearchMode::Semantic).limit(50))
        .unwrap();
    assert!(top.hits.iter().all(|h| h.score > sim));
    assert!(top.hits.iter().all(|h| h.message.id != hit.message.id));
}

#[test]
fn without_an_embedder_hybrid_is_keyword_and_semantic_is_an_error() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    conv(&db, "a", "/", &["hello world"]);
    let r = db.sekha().search(&SearchRequest::new("hello")).unwrap();
    assert_eq!(r.mode, SearchMode::Keyword);
    assert_eq!(r.hits.len(), 1);
    assert!(r.notes.contains(&SearchNote::NoEmbedder));
    let e = db
        .sekha()
        .search(&SearchRequest::new("hello").mode(SearchMode::Semantic))
        .unwrap_err();
    assert!(e.to_string().contains("needs an embedding model"), "{e}");
}

#[test]
fn a_store_without_vectors_is_backfilled_when_an_embedder_attaches() {
    let d = tmp();
    {
        let db = Memdb::open(d.path()).unwrap();
        for i in 0..5 {
            conv(
                &db,
                &format!("c{i}"),
                "/",
                &["first message", "second message"],
            );
        }
        assert!(db.embedding_status().unwrap().active.is_none());
    }
    let mut config = Config::with_embedder(hashing(128));
    config.embed_on_write = false;
    config.embed_batch = 2;
    config.vector_compact_backlog = 4;
    let db = Memdb::open_with(d.path(), config).unwrap();
    let status = db.embedding_status().unwrap();
    let active = status.active.expect("space created on attach");
    assert_eq!(active.pending, 10);
    // Pending messages are still found by keyword, and the search says that
    // semantic ranking misses them.
    let r = db.sekha().search(&SearchRequest::new("second")).unwrap();
    // The five keyword hits first; neighbour expansion brings each one's
    // previous turn after them.
    let texts: Vec<String> = r.hits.iter().map(|h| h.message.content.text()).collect();
    assert!(
        texts[..5].iter().all(|t| t == "second message"),
        "{texts:?}"
    );
    assert!(texts[5..].iter().all(|t| t == "first message"), "{texts:?}");
    assert!(
        r.notes
            .iter()
            .any(|n| matches!(n, SearchNote::NotEmbeddedYet { .. })),
        "{:?}",
        r.notes
    );
    let mut seen = Vec::new();
    let report = db.embed_pending(None, &mut |p| seen.push(p)).unwrap();
    assert_eq!(report.embedded, 10);
    assert_eq!(report.remaining, 0);
    // Geometric compaction: at 4 (base 0) and at 8 (base 4) vectors.
    assert_eq!(report.compactions, 2);
    assert_eq!(seen.last().map(|p| p.done), Some(10));
    let stats = db.vector_stats(&active.space).unwrap();
    assert_eq!(stats.count, 10);
    assert_eq!((stats.generation_nodes, stats.delta), (8, 2));
    let r = db
        .sekha()
        .search(&SearchRequest::new("second message").mode(SearchMode::Semantic))
        .unwrap();
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(r.hits.len(), 10);
}

#[test]
fn a_foreground_drain_that_empties_the_queue_leaves_no_large_delta() {
    let d = tmp();
    let mut config = Config::with_embedder(hashing(32));
    config.embed_on_write = false;
    let db = Memdb::open_with(d.path(), config).unwrap();
    let texts: Vec<String> = (0..150).map(|i| format!("note number {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for c in 0..8 {
        conv(&db, &format!("c{c}"), "/", &texts);
    }
    let space = db.embedding_status().unwrap().active.unwrap().space;
    // A bounded pass (the background worker's) leaves its delta: 600 is
    // under the default backlog of 20,000.
    let report = db.embed_pending(Some(600), &mut |_| {}).unwrap();
    assert_eq!((report.embedded, report.compactions), (600, 0));
    assert_eq!(db.vector_stats(&space).unwrap().delta, 600);
    // The unbounded drain that empties the queue folds its 1,200 into a
    // generation, so a reopen replays nothing.
    let report = db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!((report.embedded, report.remaining), (600, 0));
    assert_eq!(report.compactions, 1);
    let stats = db.vector_stats(&space).unwrap();
    assert_eq!((stats.generation_nodes, stats.delta), (1200, 0));
    // Nothing left to fold: another drain compacts nothing.
    assert_eq!(db.embed_pending(None, &mut |_| {}).unwrap().compactions, 0);
}

#[test]
fn deletes_remove_queued_and_embedded_messages() {
    let d = tmp();
    let mut config = Config::with_embedder(hashing(64));
    config.embed_on_write = false;
    let db = Memdb::open_with(d.path(), config).unwrap();
    let a = conv(&db, "a", "/", &["alpha one", "alpha two"]);
    let b = conv(&db, "b", "/", &["beta one"]);
    db.embed_pending(Some(1), &mut |_| {}).unwrap();
    assert_eq!(db.embedding_status().unwrap().active.unwrap().pending, 2);
    db.sekha().delete_conversation(a.conversation.id).unwrap();
    let space = db.embedding_status().unwrap().active.unwrap();
    assert!(
        space.pending <= 1,
        "queue entries of deleted messages remain"
    );
    let report = db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(report.remaining, 0);
    let r = db
        .sekha()
        .search(&SearchRequest::new("alpha one").mode(SearchMode::Semantic))
        .unwrap();
    assert!(
        r.hits
            .iter()
            .all(|h| h.message.conversation_id == b.conversation.id)
    );
    assert_eq!(db.vector_stats(&space.space).unwrap().count, 1);
}

#[test]
fn another_model_is_refused_until_rebuild_embeddings_switches() {
    let d = tmp();
    {
        let db = open(d.path(), hashing(64));
        conv(&db, "a", "/", &["apples and pears", "bananas"]);
        assert_eq!(db.embedding_status().unwrap().active.unwrap().pending, 0);
    }
    let db = open(d.path(), hashing(32));
    let e = db
        .sekha()
        .search(&SearchRequest::new("apples").mode(SearchMode::Semantic))
        .unwrap_err();
    assert!(matches!(e, Error::ModelMismatch { .. }), "{e}");
    assert!(e.to_string().contains("rebuild-embeddings"));
    // Hybrid still answers by keyword and says why.
    let r = db.sekha().search(&SearchRequest::new("apples")).unwrap();
    assert_eq!(r.mode, SearchMode::Keyword);
    assert_eq!(r.hits.len(), 1);
    // New messages are queued for the old model's space; nothing is mixed.
    conv(&db, "b", "/", &["cherries"]);
    assert!(db.embed_pending(None, &mut |_| {}).is_err());
    let old = db.embedding_status().unwrap().active.unwrap();
    assert_eq!(old.model.dimension, 64);
    let report = db.rebuild_embeddings(&mut |_| {}).unwrap();
    assert!(report.switched);
    assert_eq!(report.embedded, 3);
    let status = db.embedding_status().unwrap();
    let active = status.active.unwrap();
    assert_eq!(active.model.dimension, 32);
    assert!(status.rebuilding.is_none());
    // The old space is gone, with its vectors.
    let names: Vec<String> = db
        .vector_spaces()
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, vec![active.space.clone()]);
    let r = db
        .sekha()
        .search(&SearchRequest::new("cherries").mode(SearchMode::Semantic))
        .unwrap();
    assert_eq!(r.hits[0].label, "b");
    // A rebuild with the same model re-embeds into a fresh space.
    let again = db.rebuild_embeddings(&mut |_| {}).unwrap();
    assert!(again.switched);
    assert_ne!(
        db.embedding_status().unwrap().active.unwrap().space,
        active.space
    );
}

#[test]
fn query_embeddings_are_cached_in_the_store() {
    let d = tmp();
    let mut config = Config::with_embedder(hashing(64));
    config.query_cache_entries = 2;
    let db = Memdb::open_with(d.path(), config.clone()).unwrap();
    conv(&db, "a", "/", &["hello world"]);
    let q = |t: &str| {
        db.sekha()
            .search(&SearchRequest::new(t).mode(SearchMode::Semantic))
            .unwrap()
    };
    assert_eq!(db.query_cache_len().unwrap(), 0);
    let first = q("hello");
    assert_eq!(db.query_cache_len().unwrap(), 1);
    let second = q("hello");
    assert_eq!(db.query_cache_len().unwrap(), 1);
    assert_eq!(first.hits[0].score, second.hits[0].score);
    q("world");
    q("hello world");
    // Capped at two entries, oldest evicted first.
    assert_eq!(db.query_cache_len().unwrap(), 2);
    drop(db);
    let db = Memdb::open_with(d.path(), config).unwrap();
    assert_eq!(db.query_cache_len().unwrap(), 2, "the cache is persistent");
}

#[test]
fn the_background_worker_embeds_bulk_imports() {
    let d = tmp();
    let mut config = Config::with_embedder(hashing(64));
    config.embed_inline_max = 10;
    let db = Arc::new(Memdb::open_with(d.path(), config).unwrap());
    let worker = EmbedWorker::spawn(db.clone()).unwrap();
    let convs: Vec<NewConversation> = (0..30)
        .map(|i| {
            NewConversation::new(
                format!("c{i}"),
                (0..10)
                    .map(|j| NewMessage::new("user", format!("message {j} of {i}")))
                    .collect(),
            )
        })
        .collect();
    db.sekha().create_conversations(convs).unwrap();
    let start = Instant::now();
    loop {
        let pending = db.embedding_status().unwrap().active.unwrap().pending;
        if pending == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "worker left {pending} queued"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(worker);
    let space = db.embedding_status().unwrap().active.unwrap().space;
    assert_eq!(db.vector_stats(&space).unwrap().count, 300);
}

/// Writers embedding inline and the background worker (at its lower CPU
/// priority) together: after a concurrent load the in-memory index holds
/// exactly the store's vectors, and messages find themselves.
#[test]
fn concurrent_writers_and_the_worker_leave_the_index_equal_to_the_store() {
    const WRITERS: usize = 8;
    const EACH: usize = 40;
    let d = tmp();
    let mut config = Config::with_embedder(hashing(512));
    config.embed_inline_max = 16;
    // Bare turns, so each message's vector is its own text's: a question
    // and its answer embedded with each other would tie.
    config.message_passage = Passage::Turn;
    let db = Arc::new(Memdb::open_with(d.path(), config).unwrap());
    let worker = EmbedWorker::spawn(db.clone()).unwrap();
    std::thread::scope(|s| {
        for t in 0..WRITERS {
            let db = &db;
            s.spawn(move || {
                for i in 0..EACH {
                    db.sekha()
                        .create_conversation(NewConversation::new(
                            format!("writer {t} conversation {i}"),
                            vec![
                                NewMessage::new("user", format!("writer{t} asks question{i}")),
                                NewMessage::new("assistant", format!("answer{i} for writer{t}")),
                            ],
                        ))
                        .unwrap();
                }
            });
        }
    });
    let start = Instant::now();
    while db.embedding_status().unwrap().active.unwrap().pending > 0 {
        assert!(start.elapsed() < Duration::from_secs(60), "worker stalled");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(worker);
    let space = db.embedding_status().unwrap().active.unwrap().space;
    let st = db.vector_stats(&space).unwrap();
    let total = (WRITERS * EACH * 2) as u64;
    assert_eq!(st.count, total, "{st:?}");
    assert_eq!(
        st.generation_nodes - st.tombstones + st.delta,
        total,
        "the in-memory index lost or doubled vectors: {st:?}"
    );
    for (t, i) in [(0, 0), (3, 17), (7, 39)] {
        let mut req = SearchRequest::new(format!("answer{i} for writer{t}"));
        req.mode = SearchMode::Semantic;
        let hits = db.sekha().search(&req).unwrap().hits;
        assert_eq!(
            hits.first().map(|h| h.message.content.text()),
            Some(format!("answer{i} for writer{t}"))
        );
    }
}

#[test]
fn sigkill_during_a_bulk_embed_resumes_and_embeds_each_message_once() {
    const N: usize = 600;
    let d = tmp();
    let mut rng = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.as_nanos() as u64)
        .unwrap_or(7)
        | 1;
    let mut kills_mid_embed = 0;
    for round in 0..5 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_memdb-embed-crash-child"))
            .arg(d.path())
            .arg(N.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // Wait until it is embedding, then kill it a little later.
        let stored = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("child output");
        assert_eq!(stored, "STORED", "round {round}");
        // The first batch may take longer than the kill's delay on a slow
        // machine (debug build): wait for it, so the kill lands mid-embed.
        let seen = vec![
            rx.recv_timeout(Duration::from_secs(60))
                .expect("child output"),
        ];
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(100 + rng % 400));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        reader.join().expect("reader");
        let lines: Vec<String> = seen.into_iter().chain(rx.try_iter()).collect();
        if lines.iter().any(|l| l.starts_with("EMBEDDED"))
            && !lines.iter().any(|l| l.starts_with("DONE"))
        {
            kills_mid_embed += 1;
        }
    }
    eprintln!("{kills_mid_embed} of 5 kills landed mid-embed");
    assert!(kills_mid_embed >= 1, "no kill landed during embedding");
    let db = open(d.path(), local());
    let report = db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(report.remaining, 0);
    let status = db.embedding_status().unwrap();
    let active = status.active.unwrap();
    assert_eq!(active.pending, 0);
    let stats = db.sekha().stats(&Filter::default()).unwrap();
    assert_eq!(stats.total_messages, N as u64);
    // Every message has exactly one vector: the live count equals the
    // message count, and each message finds itself first.
    assert_eq!(db.vector_stats(&active.space).unwrap().count, N as u64);
    let page = db
        .sekha()
        .list_conversations(
            &Filter::default(),
            Page {
                offset: 0,
                limit: 3,
            },
        )
        .unwrap();
    for c in page.conversations {
        let full = db.sekha().get_conversation_with_messages(c.id).unwrap();
        for m in full.messages {
            let v = db.get_vector(&active.space, m.id).unwrap().expect("vector");
            let hits = db
                .search_vectors(
                    &active.space,
                    &v,
                    VectorSearch { k: 1, ef: 64 },
                    &VectorFilter::default(),
                )
                .unwrap();
            assert_eq!(hits[0].record, m.id);
        }
    }
}

/// Wraps an embedder and counts its [`Embedder::release_idle`] calls.
struct CountsReleases {
    inner: Arc<dyn Embedder>,
    releases: std::sync::atomic::AtomicUsize,
}

impl Embedder for CountsReleases {
    fn identity(&self) -> ModelIdentity {
        self.inner.identity()
    }
    fn embed_report(&self, texts: &[&str]) -> Result<Embeddings> {
        self.inner.embed_report(texts)
    }
    fn release_idle(&self) {
        self.releases
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A bulk drain lets the model's idle state go before each vector build
/// (where the build's memory and the model's would meet), and not when no
/// build is due.
#[test]
fn a_drain_releases_the_model_before_each_vector_build() {
    let d = tmp();
    let model = Arc::new(CountsReleases {
        inner: hashing(128),
        releases: std::sync::atomic::AtomicUsize::new(0),
    });
    let mut config = Config::with_embedder(model.clone());
    config.embed_on_write = false;
    config.embed_batch = 2;
    config.vector_compact_backlog = 4;
    let db = Memdb::open_with(d.path(), config).unwrap();
    for i in 0..5 {
        conv(
            &db,
            &format!("c{i}"),
            "/",
            &["first message", "second message"],
        );
    }
    let report = db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(report.embedded, 10);
    assert_eq!(report.compactions, 2);
    assert_eq!(
        model.releases.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one release per build"
    );
    // Nothing queued, nothing built, nothing released.
    let report = db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(report.compactions, 0);
    assert_eq!(model.releases.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// Wraps an embedder and fails every call after the first `ok_calls`, like a
/// model server going away mid-rebuild.
struct FailsAfter {
    inner: Arc<dyn Embedder>,
    ok_calls: std::sync::atomic::AtomicUsize,
}

impl Embedder for FailsAfter {
    fn identity(&self) -> ModelIdentity {
        self.inner.identity()
    }
    fn embed_report(&self, texts: &[&str]) -> Result<Embeddings> {
        let left = self.ok_calls.load(std::sync::atomic::Ordering::SeqCst);
        if left == 0 {
            return Err(Error::Embedding("provider went away".into()));
        }
        self.ok_calls
            .store(left - 1, std::sync::atomic::Ordering::SeqCst);
        self.inner.embed_report(texts)
    }
}

#[test]
fn an_interrupted_rebuild_resumes_into_the_same_space() {
    let d = tmp();
    {
        let db = open(d.path(), hashing(64));
        for i in 0..10 {
            conv(
                &db,
                &format!("c{i}"),
                "/",
                &[&format!("message number {i}")],
            );
        }
    }
    let flaky = Arc::new(FailsAfter {
        inner: hashing(48),
        ok_calls: std::sync::atomic::AtomicUsize::new(2),
    });
    let mut config = Config::with_embedder(flaky);
    config.embed_batch = 3;
    {
        let db = Memdb::open_with(d.path(), config).unwrap();
        let e = db.rebuild_embeddings(&mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("provider went away"), "{e}");
        let status = db.embedding_status().unwrap();
        // The old space still serves; the new one holds what was done.
        assert_eq!(status.active.as_ref().unwrap().model.dimension, 64);
        let next = status.rebuilding.expect("rebuild in progress");
        assert_eq!(next.pending, 4, "two batches of three were embedded");
        assert!(status.last_error.unwrap().contains("provider went away"));
    }
    let db = open(d.path(), hashing(48));
    let before = db.embedding_status().unwrap().rebuilding.unwrap().space;
    let report = db.rebuild_embeddings(&mut |_| {}).unwrap();
    assert!(report.switched);
    assert_eq!(report.embedded, 4, "only the rest was embedded");
    let active = db.embedding_status().unwrap().active.unwrap();
    assert_eq!(active.space, before, "resumed into the same space");
    assert_eq!(db.vector_stats(&active.space).unwrap().count, 10);
    assert_eq!(db.vector_spaces().unwrap().len(), 1);
}

/// Hashing, except that the first call blocks until released, and every
/// call records how many texts each thread embedded.
struct GatedEmbedder {
    inner: Hashing,
    gate: std::sync::Mutex<Option<(std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>)>>,
    per_thread: std::sync::Mutex<std::collections::HashMap<std::thread::ThreadId, usize>>,
}

impl GatedEmbedder {
    /// A gated `Hashing(64)`, the receiver that hears when its first call
    /// starts, and the sender that lets that call go on.
    fn new() -> (
        Arc<Self>,
        std::sync::mpsc::Receiver<()>,
        std::sync::mpsc::Sender<()>,
    ) {
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel();
        let embedder = Arc::new(GatedEmbedder {
            inner: Hashing::new(64).unwrap(),
            gate: std::sync::Mutex::new(Some((started_tx, go_rx))),
            per_thread: Default::default(),
        });
        (embedder, started_rx, go_tx)
    }
}

impl Embedder for GatedEmbedder {
    fn identity(&self) -> ModelIdentity {
        self.inner.identity()
    }

    fn embed_report(&self, texts: &[&str]) -> memdb::Result<Embeddings> {
        let gate = self.gate.lock().unwrap().take();
        if let Some((started, go)) = gate {
            started.send(()).unwrap();
            go.recv().unwrap();
        }
        *self
            .per_thread
            .lock()
            .unwrap()
            .entry(std::thread::current().id())
            .or_default() += texts.len();
        self.inner.embed_report(texts)
    }
}

/// A write's inline embedding covers what was queued when it looked, not
/// the messages other writers queue while it runs (an unbounded drain made
/// one request embed everybody's messages under a stream of writes).
#[test]
fn inline_embedding_is_bounded_to_what_the_write_saw() {
    let d = tmp();
    let (embedder, started_rx, go_tx) = GatedEmbedder::new();
    let db = open(d.path(), embedder.clone());
    let first = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            conv(&db, "first", "/", &["the first write"]);
            std::thread::current().id()
        });
        // While the first write's drain is blocked inside the model, others
        // write: they find the drain busy and leave their messages queued.
        started_rx.recv().unwrap();
        for i in 0..5 {
            conv(&db, "later", "/", &[&format!("a later write {i}")]);
        }
        go_tx.send(()).unwrap();
        writer.join().unwrap()
    });
    let embedded = embedder.per_thread.lock().unwrap()[&first];
    assert_eq!(embedded, 1, "the first write embedded {embedded} messages");
    assert_eq!(db.embedding_status().unwrap().active.unwrap().pending, 5);
    db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(db.embedding_status().unwrap().active.unwrap().pending, 0);
}

/// A search that read the active space just before a rebuild switched it
/// keeps that space until it ends: the switch promotes the new space at
/// once, and deletes the old one only after the searches holding it are
/// done. The search neither fails nor loses its semantic side. (The Sekha
/// SDK's end-to-end test met this as a 404 from `memory_search` right after
/// `rebuild_embeddings`.)
#[test]
fn a_search_racing_a_rebuild_switch_keeps_its_space_until_it_ends() {
    let d = tmp();
    {
        let db = open(d.path(), hashing(64));
        conv(&db, "bread", "/", &["the sourdough starter needs feeding"]);
        conv(&db, "cars", "/", &["the brake pads squeal on the hill"]);
    }
    let (embedder, started_rx, go_tx) = GatedEmbedder::new();
    let db = open(d.path(), embedder);
    let before = db.embedding_status().unwrap().active.unwrap().space;
    let results = std::thread::scope(|s| {
        // Owned here: should an assertion below fail, unwinding drops it
        // and the held search ends, instead of the scope waiting forever.
        let go_tx = go_tx;
        let search = s.spawn(|| {
            let mut req = SearchRequest::new("sourdough starter feeding");
            req.mode = SearchMode::Hybrid;
            req.limit = 5;
            db.sekha().search(&req)
        });
        // The search holds the old space and waits inside the model for
        // its query vector while the rebuild switches.
        started_rx.recv().unwrap();
        let rebuild = s.spawn(|| db.rebuild_embeddings(&mut |_| {}));
        let deadline = Instant::now() + Duration::from_secs(60);
        while db.embedding_status().unwrap().active.unwrap().space == before {
            assert!(Instant::now() < deadline, "the rebuild never switched");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Switched, but the old space outlives the search that holds it.
        assert!(db.vector_space(&before).is_ok());
        assert!(!rebuild.is_finished());
        go_tx.send(()).unwrap();
        let results = search.join().unwrap();
        let report = rebuild.join().unwrap().unwrap();
        assert!(report.switched);
        results
    });
    let after = db.embedding_status().unwrap().active.unwrap().space;
    assert_ne!(before, after, "the rebuild switched spaces");
    assert!(db.vector_space(&before).is_err(), "the old space is gone");
    let results = results.expect("the search survives the switch");
    assert!(
        !results
            .notes
            .iter()
            .any(|n| matches!(n, SearchNote::SemanticUnavailable { .. })),
        "{:?}",
        results.notes
    );
    let first = results.hits.first().expect("a hit");
    assert!(first.message.content.text().contains("sourdough"));
    assert!(first.explain.is_none());
}

/// A question that names a period favours the messages of that period:
/// dated by their metadata's session date (no message timestamps sent, as
/// a client importing an old history does), in hybrid search, with the
/// period's words taken out of the text that is matched.
#[test]
fn a_question_naming_a_period_favours_messages_dated_inside_it() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    let session = |label: &str, date: &str, text: &str| {
        let mut m = NewMessage::new("user", format!("Ana: {text}"));
        m.metadata = Some(serde_json::json!({"turn_id": label, "session_date": date}));
        db.sekha()
            .create_conversation(NewConversation {
                folder: Some("/ana".into()),
                ..NewConversation::new(label, vec![m])
            })
            .unwrap();
    };
    // Two messages the words alone cannot tell apart; the May one is the
    // answer.
    session("S1", "10:00 am on 3 July, 2018", "the hiking trip was long");
    session("S2", "4:30 pm on 20 May, 2018", "the hiking trip was wet");
    session("S3", "9:15 am on 2 June, 2019", "bread again");
    session("S4", "6:00 pm on 28 May, 2019", "the hiking trip was sunny");
    let ask = |q: &str| {
        let mut req = SearchRequest::new(q);
        req.explain = true;
        db.sekha().search(&req).unwrap()
    };
    // The first hit holds `word` and was boosted as dated in the period.
    let boosted_first = |q: &str, word: &str| {
        let r = ask(q);
        let top = &r.hits[0];
        assert!(top.message.content.text().contains(word), "{q}: {r:?}");
        assert_eq!(top.explain.unwrap().period_boost, Some(PERIOD_BOOST), "{q}");
        r
    };
    let plain = ask("What did Ana say about the hiking trip?");
    let dated = boosted_first("What did Ana say about the hiking trip in May 2018?", "wet");
    assert_eq!(dated.hits[1].explain.unwrap().period_boost, Some(0.0));
    // A relative period reads the conversations' own timeline (the latest
    // date of the conversations searched is 2 June 2019): "last year" is
    // 2018.
    let relative = ask("what about the hiking trip last year");
    assert!(
        relative
            .hits
            .iter()
            .take(2)
            .all(|h| !h.message.content.text().contains("bread")),
        "{relative:?}"
    );
    // A weekday reads the same timeline: the Tuesday before Sunday 2 June
    // 2019 is 28 May.
    boosted_first(
        "What did Ana say about the hiking trip last Tuesday?",
        "sunny",
    );
    // A season: summer 2018 holds only the July trip; asked against the
    // timeline's 2 June 2019, "last summer" is the same one.
    boosted_first(
        "What did Ana say about the hiking trip in the summer of 2018?",
        "long",
    );
    boosted_first(
        "What did Ana say about the hiking trip last summer?",
        "long",
    );
    // Part of a month: mid-May 2018 (11 to 20 May) holds the wet one.
    boosted_first(
        "What did Ana say about the hiking trip in mid-May 2018?",
        "wet",
    );
    // "a year ago" is 2018 there.
    let ago = ask("the hiking trip a year ago");
    let t = ago.hits[0].message.content.text();
    assert!(t.contains("wet") || t.contains("long"), "{ago:?}");
    // No period named: no boost field at all.
    assert_eq!(plain.hits[0].explain.unwrap().period_boost, None);
}

/// A session dated in its conversation's metadata only, under a key of the
/// client's own naming (`date_time`), dates its messages for a period; a
/// message's own metadata date comes first.
#[test]
fn a_conversation_s_metadata_dates_its_messages() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    let session = |label: &str, conv_date: &str, msg_date: Option<&str>, text: &str| {
        let mut m = NewMessage::new("user", format!("Ana: {text}"));
        m.metadata = msg_date.map(|d| serde_json::json!({"date_time": d}));
        db.sekha()
            .create_conversation(NewConversation {
                folder: Some("/ana".into()),
                metadata: Some(serde_json::json!({"session": label, "date_time": conv_date})),
                ..NewConversation::new(label, vec![m])
            })
            .unwrap();
    };
    session("S1", "3 July, 2018", None, "the hiking trip was long");
    session("S2", "20 May, 2018", None, "the hiking trip was wet");
    // Its conversation says May 2018, its message says June 2019.
    session(
        "S3",
        "22 May, 2018",
        Some("2 June 2019"),
        "the hiking trip was sunny",
    );
    let ask = |q: &str| {
        let mut req = SearchRequest::new(q);
        req.explain = true;
        db.sekha().search(&req).unwrap()
    };
    let boosted: Vec<String> = ask("What did Ana say about the hiking trip in May 2018?")
        .hits
        .iter()
        .filter(|h| h.explain.unwrap().period_boost == Some(PERIOD_BOOST))
        .map(|h| h.message.content.text().to_string())
        .collect();
    assert_eq!(boosted, ["Ana: the hiking trip was wet"]);
    let june = ask("What did Ana say about the hiking trip in June 2019?");
    assert!(
        june.hits[0].message.content.text().contains("sunny"),
        "{june:?}"
    );
    assert_eq!(
        june.hits[0].explain.unwrap().period_boost,
        Some(PERIOD_BOOST)
    );
}

/// An imported chat export's messages are dated by the export's times,
/// not by the `imported_at` its metadata also holds (SPEC.md §18.3): a
/// question naming the month the chat happened in (May 2024) favours it.
#[test]
fn an_imported_chat_is_dated_by_its_export_times() {
    let dir = tmp();
    let files = tmp();
    let db = open(dir.path(), hashing(128));
    let path = files.path().join("conversations.json");
    std::fs::write(&path, crate::chat_import::CHATGPT).unwrap();
    db.sekha().import_chat_file(&path, None).unwrap();
    db.embed_pending(None, &mut |_| {}).unwrap();
    let ask = |q: &str| {
        let mut req = SearchRequest::new(q);
        req.explain = true;
        let r = db.sekha().search(&req).unwrap();
        let hit = r
            .hits
            .iter()
            .find(|h| h.message.content.text().contains("rye starter"))
            .unwrap_or_else(|| panic!("{r:?}"));
        hit.explain.unwrap().period_boost
    };
    assert_eq!(
        ask("How often should I feed a rye starter, I asked in May 2024"),
        Some(PERIOD_BOOST)
    );
    assert_eq!(
        ask("How often should I feed a rye starter, I asked in June 2024"),
        Some(0.0)
    );
}

/// In a scope too wide to list (over 2,000 conversations, no folder or
/// label filter), a relative period is read against the latest date among
/// the question's own candidates, not the store's: "in May" asked with
/// hiking turns of May and July 2018 among the candidates is May 2018,
/// though the store's latest conversation is of June 2019.
#[test]
fn a_relative_period_in_a_scope_too_wide_to_list_reads_the_candidates_dates() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    let dated = |folder: &str, label: &str, date: &str, text: &str| {
        let mut m = NewMessage::new("user", format!("Ana: {text}"));
        m.metadata = Some(serde_json::json!({"session_date": date}));
        NewConversation {
            folder: Some(folder.into()),
            ..NewConversation::new(label, vec![m])
        }
    };
    // Filler enough to pass the listing limit, sharing the question's
    // function words so that they, not the bread, fill the semantic side.
    let mut batch: Vec<NewConversation> = (0..2_000)
        .map(|i| {
            let text = format!("what about the weather {i}");
            dated("/filler", &format!("f{i}"), "1 January 2018", &text)
        })
        .collect();
    batch.push(dated(
        "/ana",
        "S1",
        "3 July, 2018",
        "the hiking trip was long",
    ));
    batch.push(dated(
        "/ana",
        "S2",
        "20 May, 2018",
        "the hiking trip was wet",
    ));
    batch.push(dated("/other", "S3", "2 June, 2019", "bread again"));
    db.sekha().create_conversations(batch).unwrap();
    db.embed_pending(None, &mut |_| {}).unwrap();
    let mut req = SearchRequest::new("What about the hiking trip in May?");
    req.explain = true;
    let r = db.sekha().search(&req).unwrap();
    let top = &r.hits[0];
    assert!(top.message.content.text().contains("wet"), "{r:?}");
    assert_eq!(top.explain.unwrap().period_boost, Some(PERIOD_BOOST));
    // Within a folder of two conversations, the scope's own timeline
    // (today 3 July 2018) gives the same.
    req.filter.folder = Some("/ana".into());
    let r = db.sekha().search(&req).unwrap();
    assert!(r.hits[0].message.content.text().contains("wet"), "{r:?}");
    assert_eq!(r.hits[0].explain.unwrap().period_boost, Some(PERIOD_BOOST));
}

/// A question naming a day reaches that day's turns even when the whole
/// store's best matches for its words fill both candidate lists: the
/// conversations dated in the period are searched on their own and their
/// best turns join the rankings (SPEC.md §18.3, "Named periods").
#[test]
fn a_question_naming_a_day_reaches_turns_outside_the_best_matches() {
    let dir = tmp();
    // Wide hashed vectors: few collisions, so similarity is shared words.
    let db = open(dir.path(), hashing(2048));
    let session = |label: &str, date: &str, texts: &[String]| {
        let messages = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut m = NewMessage::new("user", t.clone());
                m.metadata = Some(
                    serde_json::json!({"turn_id": format!("{label}:{i}"), "session_date": date}),
                );
                m
            })
            .collect();
        db.sekha()
            .create_conversation(NewConversation {
                folder: Some("/ana".into()),
                ..NewConversation::new(label, messages)
            })
            .unwrap();
    };
    // 80 short turns on another day match the question's words better
    // than the answer does, on both sides: each list's first 50 are theirs.
    let cooking: Vec<String> = (0..80).map(|i| format!("Ana: I cook {i}")).collect();
    session("S1", "7:00 pm on 9 May, 2018", &cooking);
    session(
        "S2",
        "6:20 am on 8 May, 2018",
        &[
            "Ana: I cook a stew".into(),
            "Ben: sounds good".into(),
            "Ben: morning sunshine and birds and trees and rain".into(),
        ],
    );
    // Fifty hits (what each candidate list holds for one such page), fused
    // on the semantic side alone so the arithmetic is plain: the stew's
    // similarity scaled between its day's weakest turn and the fillers',
    // plus the period's boost, beats a filler's 1.
    let ask = |q: &str| {
        let mut req = SearchRequest::new(q);
        req.explain = true;
        req.limit = 50;
        req.weights.keyword = 0.0;
        req.weights.coverage = 0.0;
        req.weights.semantic = 1.0;
        // The question's semantic weight stays 1 (no question lift).
        req.weights.question_lift = 1.0;
        // No session weight: it would raise the 80 fillers' session over
        // the period's one turn (SPEC §18.3 says why it is not exempted).
        req.weights.session_mass = 0.0;
        db.sekha().search(&req).unwrap()
    };
    let stew = |r: &memdb::SearchResults| {
        r.hits
            .iter()
            .position(|h| h.message.content.text().contains("stew"))
    };
    let dated = ask("What did Ana cook on 8 May 2018?");
    assert_eq!(stew(&dated), Some(0), "{dated:?}");
    let e = dated.hits[0].explain.unwrap();
    assert_eq!(e.period_boost, Some(PERIOD_BOOST));
    assert!(e.keyword_rank.unwrap() > 50, "{e:?}");
    assert!(e.semantic_rank.unwrap() > 50, "{e:?}");
    // A relative day, resolved against the scope's latest date (the
    // fillers' 9 May): yesterday is 8 May, searched too.
    let relative = ask("What did Ana cook yesterday?");
    assert_eq!(stew(&relative), Some(0), "{relative:?}");
    let e = relative.hits[0].explain.unwrap();
    assert_eq!(e.period_boost, Some(PERIOD_BOOST));
    assert!(e.semantic_rank.unwrap() > 50, "{e:?}");
    // The same words without the day: the stew is not a candidate at all.
    let plain = ask("What did Ana cook?");
    assert_eq!(stew(&plain), None, "{plain:?}");
    // A later conversation sharing no word with the question is no
    // candidate, yet it moves the history's today to 20 May: yesterday is
    // 19 May, when nothing was said, and the stew is 12 days ago. (Read
    // from the candidates' dates, today would still be 9 May.)
    session(
        "S3",
        "8:00 pm on 20 May, 2018",
        &["Ben: snow tomorrow".into(), "Ben: wear boots".into()],
    );
    let moved = ask("What did Ana cook yesterday?");
    assert!(
        moved
            .hits
            .iter()
            .all(|h| !h.message.content.text().starts_with("Ben: snow"))
    );
    assert!(
        moved
            .hits
            .iter()
            .all(|h| h.explain.unwrap().period_boost == Some(0.0)),
        "{moved:?}"
    );
    assert_eq!(stew(&moved), None, "{moved:?}");
    let ago = ask("What did Ana cook 12 days ago?");
    assert_eq!(stew(&ago), Some(0), "{ago:?}");
    assert_eq!(
        ago.hits[0].explain.unwrap().period_boost,
        Some(PERIOD_BOOST)
    );
}

/// A call of several batches runs them on several sessions at once; the
/// vectors still come back in input order, each the one its text gets
/// alone.
#[test]
fn a_multi_batch_call_keeps_input_order() {
    let e = local();
    let texts: Vec<String> = (0..80)
        .map(|i| {
            format!(
                "note {i}: the {} is {} today",
                ["cat", "river", "train", "garden"][i % 4],
                i * 7
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let all = e.embed_report(&refs).unwrap();
    assert_eq!(all.vectors.len(), texts.len());
    for i in [0, 31, 32, 33, 64, 79] {
        let one = e.embed_report(&[refs[i]]).unwrap();
        let dot: f32 = one.vectors[0]
            .iter()
            .zip(&all.vectors[i])
            .map(|(a, b)| a * b)
            .sum();
        assert!(dot > 0.999, "text {i}: cosine {dot}");
    }
}

/// The passage rule belongs to the space: a store filled with bare turns
/// keeps them when opened with another rule, and a rebuild switches; under
/// `with-previous` a reply's vector carries the turn it answers.
#[test]
fn the_passage_rule_is_part_of_the_message_space() {
    let dir = tmp();
    let with = |passage: Passage| {
        let mut c = Config::with_embedder(hashing(256));
        c.message_passage = passage;
        Memdb::open_with(dir.path(), c).unwrap()
    };
    {
        let db = with(Passage::Turn);
        conv(
            &db,
            "zoo",
            "/",
            &[
                "did you visit the giraffes at the zoo",
                "yes, last tuesday!",
            ],
        );
        let st = db.embedding_status().unwrap();
        assert_eq!(st.active.unwrap().passage, Passage::Turn);
    }
    let semantic_top = |db: &Memdb| {
        let r = db
            .sekha()
            .search(&SearchRequest::new("giraffes zoo").mode(SearchMode::Semantic))
            .unwrap();
        r.hits
            .iter()
            .map(|h| (h.message.content.text(), h.score))
            .collect::<Vec<_>>()
    };
    let db = with(Passage::WithPrevious);
    // Opened with another rule: the old space is used as it is.
    assert_eq!(
        db.embedding_status().unwrap().active.unwrap().passage,
        Passage::Turn
    );
    let bare = semantic_top(&db);
    let reply_bare = bare.iter().find(|(t, _)| t.starts_with("yes")).unwrap().1;
    let report = db.rebuild_embeddings(&mut |_| {}).unwrap();
    assert!(report.switched, "{report:?}");
    let st = db.embedding_status().unwrap();
    assert_eq!(st.active.unwrap().passage, Passage::WithPrevious);
    let ctx = semantic_top(&db);
    let reply_ctx = ctx.iter().find(|(t, _)| t.starts_with("yes")).unwrap().1;
    assert!(
        reply_ctx > reply_bare + 0.2,
        "the reply's vector now holds the question: {reply_bare} -> {reply_ctx}"
    );
    // The question's own vector has no turn before it: unchanged.
    let q_bare = bare.iter().find(|(t, _)| t.starts_with("did")).unwrap().1;
    let q_ctx = ctx.iter().find(|(t, _)| t.starts_with("did")).unwrap().1;
    assert!((q_bare - q_ctx).abs() < 1e-4, "{q_bare} vs {q_ctx}");
    // Stored messages are unchanged.
    assert!(ctx.iter().any(|(t, _)| t == "yes, last tuesday!"));
}

/// With-neighbours passages: appending a turn queues the turn before it
/// again, and its vector then holds the new turn (the passage it would
/// have had if the two had been written together).
#[test]
fn an_appended_turn_re_embeds_the_turn_before_it_under_with_neighbours() {
    let dir = tmp();
    let e = hashing(256);
    let mut c = Config::with_embedder(e.clone());
    c.message_passage = Passage::WithNeighbours;
    let db = Memdb::open_with(dir.path(), c).unwrap();
    let question = "did you visit the giraffes at the zoo";
    let reply = "yes, last tuesday!";
    let created = conv(&db, "zoo", "/", &[question]);
    db.embed_pending(None, &mut |_| {}).unwrap();
    let space = db.embedding_status().unwrap().active.unwrap().space;
    let first = created.messages[0].id;
    let embed = |t: &str| e.embed(&[t]).unwrap().remove(0);
    let alone = embed(&Passage::WithNeighbours.build(question, None, None));
    let before = db.get_vector(&space, first).unwrap().unwrap();
    assert!(cos(&before, &alone) > 0.9999);
    db.sekha()
        .append_messages(
            created.conversation.id,
            vec![NewMessage::new("user", reply)],
        )
        .unwrap();
    db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(db.embedding_status().unwrap().active.unwrap().pending, 0);
    let after = db.get_vector(&space, first).unwrap().unwrap();
    let with_reply = embed(&Passage::WithNeighbours.build(question, None, Some(reply)));
    assert!(
        cos(&alone, &with_reply) < 0.99,
        "the reply changes the passage"
    );
    assert!(cos(&after, &with_reply) > 0.9999);
}

/// With-previous passages: a message inserted before an existing turn (an
/// earlier timestamp) queues that turn again, whose passage now opens with
/// the new message; its vector ends as if the two had been written in
/// order.
#[test]
fn a_turn_inserted_before_another_re_embeds_the_turn_after_it() {
    let dir = tmp();
    let e = hashing(256);
    let mut c = Config::with_embedder(e.clone());
    c.message_passage = Passage::WithPrevious;
    let db = Memdb::open_with(dir.path(), c).unwrap();
    let question = "did you visit the giraffes at the zoo";
    let reply = "yes, last tuesday!";
    let created = conv(&db, "zoo", "/", &[reply]);
    db.embed_pending(None, &mut |_| {}).unwrap();
    let space = db.embedding_status().unwrap().active.unwrap().space;
    let later = &created.messages[0];
    let embed = |t: &str| e.embed(&[t]).unwrap().remove(0);
    let alone = embed(&Passage::WithPrevious.build(reply, None, None));
    assert!(cos(&db.get_vector(&space, later.id).unwrap().unwrap(), &alone) > 0.9999);
    let mut earlier = NewMessage::new("user", question);
    earlier.timestamp = Some(later.timestamp - chrono::Duration::seconds(60));
    db.sekha()
        .append_messages(created.conversation.id, vec![earlier])
        .unwrap();
    db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(db.embedding_status().unwrap().active.unwrap().pending, 0);
    let with_question = embed(&Passage::WithPrevious.build(reply, Some(question), None));
    assert!(
        cos(&alone, &with_question) < 0.99,
        "the question changes the passage"
    );
    let after = db.get_vector(&space, later.id).unwrap().unwrap();
    assert!(cos(&after, &with_question) > 0.9999);
}

/// Hybrid neighbour expansion: the reply to a matching turn comes back
/// right after it, and `explain` says whose neighbour it is; weight 0
/// turns it off.
#[test]
fn hybrid_search_brings_the_reply_to_a_matching_turn() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    conv(
        &db,
        "zoo",
        "/",
        &[
            "did you visit the giraffes at the zoo",
            "yes, last tuesday!",
            "unrelated chatter about bread",
        ],
    );
    let mut req = SearchRequest::new("giraffes at the zoo");
    req.explain = true;
    let r = db.sekha().search(&req).unwrap();
    let reply = r
        .hits
        .iter()
        .find(|h| h.message.content.text().starts_with("yes"))
        .expect("the reply is found");
    assert_eq!(reply.explain.unwrap().neighbour_of, Some(1), "{r:?}");
    assert!(r.hits[0].message.content.text().contains("giraffes"));
    req.weights.neighbours = 0.0;
    req.weights.second_neighbours = 0.0;
    let off = db.sekha().search(&req).unwrap();
    assert!(
        off.hits
            .iter()
            .all(|h| h.explain.unwrap().neighbour_of.is_none())
    );
    req.weights.neighbours = 1.5;
    assert!(matches!(
        db.sekha().search(&req),
        Err(Error::InvalidInput { .. })
    ));
}

/// The score explanation of the hit whose text starts with `opening`
/// (`None` when no hit does).
/// A search for `query` with a weight `set` out of its range is refused.
fn assert_weight_refused(db: &Memdb, query: &str, set: impl FnOnce(&mut memdb::FusionWeights)) {
    let mut req = SearchRequest::new(query);
    set(&mut req.weights);
    assert!(matches!(
        db.sekha().search(&req),
        Err(Error::InvalidInput { .. })
    ));
}

/// A "giraffes zoo" search explained, with neighbour expansion off (so a
/// reply is a hit only on its own merits) and the turn before weighted
/// `previous_turn`.
fn ask_about_the_zoo(db: &Memdb, previous_turn: f32) -> SearchResults {
    let mut req = SearchRequest::new("giraffes zoo");
    req.explain = true;
    req.weights.previous_turn = previous_turn;
    without_expansion(&mut req.weights);
    db.sekha().search(&req).unwrap()
}

/// Turns off neighbour expansion (all three shares), so a test sees the
/// stage it checks act on the ranked candidates alone.
fn without_expansion(w: &mut memdb::FusionWeights) {
    w.neighbours = 0.0;
    w.answers = 0.0;
    w.second_neighbours = 0.0;
}

fn explained(r: &SearchResults, opening: &str) -> Option<ScoreExplain> {
    r.hits
        .iter()
        .find(|h| h.message.content.text().starts_with(opening))
        .and_then(|h| h.explain)
}

/// Answers (`weights.answers`): the turn after a top hit that asks
/// something enters with that share of the hit's score (0.8 by default),
/// the turn after a statement with `neighbours`' (0.5); 0 makes an answer
/// an ordinary neighbour; a value outside 0..=1 is refused.
#[test]
fn the_answer_to_a_matching_question_enters_with_its_own_share() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    conv(
        &db,
        "asked",
        "/",
        &[
            "which museum shows the giraffe skeleton?",
            "downtown, near the old station",
        ],
    );
    conv(
        &db,
        "told",
        "/",
        &[
            "the giraffe skeleton museum was closed",
            "pity, maybe next week then",
        ],
    );
    let shares = |answers: f32| -> (f32, f32) {
        let mut req = SearchRequest::new("giraffe skeleton museum");
        req.explain = true;
        req.weights.answers = answers;
        // The shares as expansion gives them: the question that only asks
        // keeps its score (the questions stage is tested on its own).
        req.weights.questions = 0.0;
        let r = db.sekha().search(&req).unwrap();
        let share = |parent: &str, reply: &str| -> f32 {
            let fused = |t: &str| {
                explained(&r, t)
                    .and_then(|e| e.fused)
                    .unwrap_or_else(|| panic!("{t:?} is a hit: {r:?}"))
            };
            fused(reply) / fused(parent)
        };
        (
            share(
                "which museum shows the giraffe skeleton?",
                "downtown, near the old station",
            ),
            share(
                "the giraffe skeleton museum was closed",
                "pity, maybe next week then",
            ),
        )
    };
    let (answer, reply) = shares(memdb::DEFAULT_ANSWERS);
    assert!((answer - 0.8).abs() < 1e-4, "{answer}");
    assert!((reply - 0.5).abs() < 1e-4, "{reply}");
    let (answer, _) = shares(0.0);
    assert!((answer - 0.5).abs() < 1e-4, "{answer}");
    assert_weight_refused(&db, "giraffe", |w| w.answers = 2.0);
}

/// Second neighbours (`weights.second_neighbours`): the turns two before
/// and after a top hit (the same speaker's, in a dialogue) enter with that
/// share of its score, 0.4 by default; 0 turns them off; a value outside
/// 0..=1 is refused.
#[test]
fn the_turns_two_away_from_a_hit_enter_with_their_share() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    conv(
        &db,
        "story",
        "/",
        &[
            "Zara: the first chapter was about the harbour",
            "Otto: go on",
            "Zara: the lighthouse keeper kept a tortoise",
            "Otto: really",
            "Zara: and it outlived three keepers",
            "Otto: amazing",
            "Zara: the end came with a storm",
        ],
    );
    let search = |share: f32| {
        let mut req = SearchRequest::new("lighthouse keeper tortoise");
        req.explain = true;
        req.weights.second_neighbours = share;
        req.weights.speaker = 0.0;
        db.sekha().search(&req).unwrap()
    };
    let r = search(memdb::DEFAULT_SECOND_NEIGHBOURS);
    let parent = explained(&r, "Zara: the lighthouse").and_then(|e| e.fused);
    let parent = parent.unwrap_or_else(|| panic!("the hit: {r:?}"));
    for far in ["Zara: the first chapter", "Zara: and it outlived"] {
        let e = explained(&r, far).unwrap_or_else(|| panic!("{far:?} is a hit: {r:?}"));
        assert_eq!(e.neighbour_of, Some(1), "{far:?}");
        let share = e.fused.unwrap() / parent;
        assert!((share - 0.4).abs() < 1e-4, "{far:?}: {share}");
    }
    // Three turns away is not the hit's neighbour.
    assert!(explained(&r, "Otto: amazing").is_none_or(|e| e.neighbour_of != Some(1)));
    let off = search(0.0);
    for far in ["Zara: the first chapter", "Zara: and it outlived"] {
        assert!(
            explained(&off, far).is_none_or(|e| e.neighbour_of != Some(1)),
            "{far:?}: {off:?}"
        );
    }
    assert_weight_refused(&db, "tortoise", |w| w.second_neighbours = -0.1);
}

/// Questions (`weights.questions`, default 0.2): a hit that only asks
/// loses that share of its fused score, after its answer took its share;
/// a hit that also states something keeps its score.
#[test]
fn a_turn_that_only_asks_loses_its_share() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    conv(
        &db,
        "asked",
        "/",
        &[
            "Otto: what is your favourite giraffe at the zoo?",
            "Zara: the tall one with the crooked horn",
        ],
    );
    conv(
        &db,
        "told",
        "/",
        &["Zara: my favourite giraffe at the zoo is tall. Do you have one?"],
    );
    let search = |questions: f32| {
        let mut req = SearchRequest::new("favourite giraffe at the zoo");
        req.explain = true;
        req.weights.questions = questions;
        // The session weight, a later stage, would rescale the scores
        // this test compares.
        req.weights.session_mass = 0.0;
        db.sekha().search(&req).unwrap()
    };
    let fused = |r: &SearchResults, t: &str| {
        explained(r, t)
            .and_then(|e| e.fused)
            .unwrap_or_else(|| panic!("{t:?} is a hit: {r:?}"))
    };
    let before = search(0.0);
    let after = search(0.5);
    let default = search(memdb::DEFAULT_QUESTIONS);
    let asked = "Otto: what is your favourite";
    let told = "Zara: my favourite giraffe";
    let answer = "Zara: the tall one";
    let ratio = fused(&after, asked) / fused(&before, asked);
    assert!((ratio - 0.5).abs() < 1e-4, "{ratio}");
    let ratio = fused(&default, asked) / fused(&before, asked);
    assert!((ratio - 0.8).abs() < 1e-4, "{ratio}");
    assert!((fused(&after, told) - fused(&before, told)).abs() < 1e-6);
    // The answer took its share of the question's undiscounted score.
    assert!((fused(&after, answer) - fused(&before, answer)).abs() < 1e-6);
    assert_weight_refused(&db, "giraffe", |w| w.questions = 1.5);
}

/// Short turns (`weights.short_turns`, default 0.3): a hit with fewer than
/// 10 content words in what it says loses that share in proportion to the
/// words it lacks; a reply (the turn before it holds a `?`) and a long
/// turn keep their score; 0 turns it off; a value outside 0..=1 is refused.
#[test]
fn a_short_turn_loses_a_share_unless_it_replies() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    conv(
        &db,
        "job",
        "/",
        &[
            "Zara: hello there",
            "Otto: pluralsight",
            "Zara: where is the job?",
            "Otto: pluralsight",
            "Otto: the pluralsight internship means designing mobile apps for product \
             teams downtown every weekday morning",
        ],
    );
    let search = |share: f32| {
        let mut req = SearchRequest::new("pluralsight");
        req.explain = true;
        req.weights.short_turns = share;
        without_expansion(&mut req.weights);
        db.sekha().search(&req).unwrap()
    };
    let on = search(memdb::DEFAULT_SHORT_TURNS);
    let off = search(0.0);
    let factors = |r: &SearchResults| -> Vec<Option<f32>> {
        let mut hits: Vec<_> = r.hits.iter().collect();
        hits.sort_by_key(|h| (h.message.timestamp, h.message.id));
        hits.iter()
            .filter(|h| h.message.content.text().contains("pluralsight"))
            .map(|h| h.explain.unwrap().short_factor)
            .collect()
    };
    // The first "pluralsight" follows a greeting: one content word of 10,
    // so it keeps 1 − 0.3 · 9/10. The second replies to a question; the
    // last says 13 content words.
    let f = factors(&on);
    assert_eq!(f.len(), 3, "{on:?}");
    assert!(f[0].is_some_and(|x| (x - 0.73).abs() < 1e-6), "{f:?}");
    assert_eq!((f[1], f[2]), (None, None), "{f:?}");
    let fused = |r: &SearchResults, pick: usize| {
        let mut hits: Vec<_> = r
            .hits
            .iter()
            .filter(|h| h.message.content.text() == "Otto: pluralsight")
            .collect();
        hits.sort_by_key(|h| (h.message.timestamp, h.message.id));
        hits[pick].explain.unwrap().fused.unwrap()
    };
    assert!((fused(&on, 0) / fused(&off, 0) - 0.73).abs() < 1e-4);
    assert!((fused(&on, 1) - fused(&off, 1)).abs() < 1e-6);
    assert!(factors(&off).iter().all(Option::is_none));
    assert_weight_refused(&db, "pluralsight", |w| w.short_turns = 1.5);
}

/// The turn before (`weights.previous_turn`): in hybrid search a reply
/// matches the question's words in the turn it answers, so it is a keyword
/// candidate of its own, scored at that share; keyword mode and weight 0
/// match a message's own words only; a value outside 0..=1 is refused.
#[test]
fn a_reply_matches_the_words_of_the_turn_before_it() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    conv(
        &db,
        "zoo",
        "/",
        &[
            "Ana: did you visit the giraffes at the zoo",
            "Ben: yes, last tuesday!",
            "Ana: unrelated chatter about bread",
        ],
    );
    let on = ask_about_the_zoo(&db, memdb::DEFAULT_PREVIOUS_TURN);
    let reply = explained(&on, "Ben:").expect("the reply is a hit");
    let question = explained(&on, "Ana: did").expect("the question is a hit");
    let (r, q) = (
        reply.keyword_score.expect("the reply matches by keyword"),
        question.keyword_score.expect("the question matches"),
    );
    assert!(r > 0.0 && r < q, "{on:?}");
    assert!(explained(&on, "Ana: unrelated").is_none_or(|e| e.keyword_score.is_none()));
    let off = ask_about_the_zoo(&db, 0.0);
    assert!(
        explained(&off, "Ben:").is_none_or(|e| e.keyword_score.is_none()),
        "{off:?}"
    );
    // What the turn before said counts, not who said it.
    let mut by_name = SearchRequest::new("Ana");
    by_name.explain = true;
    let by_name = db.sekha().search(&by_name).unwrap();
    assert!(
        explained(&by_name, "Ben:").is_none_or(|e| e.keyword_score.is_none()),
        "{by_name:?}"
    );
    let mut kw = SearchRequest::new("giraffes zoo");
    kw.mode = SearchMode::Keyword;
    let kw = db.sekha().search(&kw).unwrap();
    assert_eq!(kw.hits.len(), 1, "{kw:?}");
    assert_weight_refused(&db, "giraffes zoo", |w| w.previous_turn = 1.5);
}

/// The turn before is read when a message is indexed: a turn inserted
/// before an existing one (an earlier timestamp) re-indexes that one, a
/// conversation's update re-indexes its turns in order, and a rebuilt
/// index holds the same.
#[test]
fn the_turn_before_follows_inserts_updates_and_rebuilds() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    let created = conv(&db, "zoo", "/", &["Ben: yes, last tuesday!"]);
    let reply_matches = |db: &Memdb| {
        let r = ask_about_the_zoo(db, memdb::DEFAULT_PREVIOUS_TURN);
        explained(&r, "Ben:").is_some_and(|e| e.keyword_score.is_some())
    };
    assert!(!reply_matches(&db));
    let later = &created.messages[0];
    let mut earlier = NewMessage::new("user", "Ana: did you visit the giraffes at the zoo");
    earlier.timestamp = Some(later.timestamp - chrono::Duration::seconds(60));
    db.sekha()
        .append_messages(created.conversation.id, vec![earlier])
        .unwrap();
    assert!(
        reply_matches(&db),
        "the insert re-indexes the turn after it"
    );
    let update = ConversationUpdate {
        label: Some("zoo trip".into()),
        ..ConversationUpdate::default()
    };
    db.sekha()
        .update_conversation(created.conversation.id, update)
        .unwrap();
    assert!(
        reply_matches(&db),
        "an update keeps each turn's turn before"
    );
    db.reindex().unwrap();
    assert!(reply_matches(&db), "a rebuild reads the turn before");
    drop(db);
    let db = open(dir.path(), hashing(128));
    assert!(reply_matches(&db));
}

/// A store of one conversation: a broken wrist, then a bread recipe.
fn wrist_and_bread(dir: &std::path::Path) -> Memdb {
    let db = open(dir, hashing(128));
    conv(
        &db,
        "wrist",
        "/",
        &["the wrist was broken in a fall", "a bread recipe with rye"],
    );
    db
}

/// Keyword coverage (`weights.coverage`): the keyword ranking's weight
/// falls with the share of the question's content words its best match
/// misses, so a partial match counts less; a question whose words a turn
/// holds keeps its weight; a value outside 0..=1 is refused.
#[test]
fn keyword_coverage_discounts_a_partial_keyword_match() {
    let dir = tmp();
    let db = wrist_and_bread(dir.path());
    let fused = |query: &str, coverage: f32| -> f32 {
        let mut req = SearchRequest::new(query);
        req.explain = true;
        req.weights.neighbours = 0.0;
        req.weights.short_turns = 0.0;
        req.weights.session_mass = 0.0;
        req.weights.coverage = coverage;
        let r = db.sekha().search(&req).unwrap();
        explained(&r, "the wrist")
            .and_then(|e| e.fused)
            .expect("the keyword match is found")
    };
    // One of three content words matched ("when did she mention" is
    // framing): with coverage 1 the keyword weight is a third, so the
    // match loses two thirds of its normalised keyword score (1).
    let partial = "when did she mention fracturing her wrist skating";
    let drop = fused(partial, 0.0) - fused(partial, 1.0);
    assert!((drop - 2.0 / 3.0).abs() < 1e-4, "{drop}");
    // `explain` shows the weight the discount left; the default is 0.5.
    let r = db.sekha().search(&SearchRequest {
        explain: true,
        ..SearchRequest::new(partial)
    });
    let weight = r.unwrap().hits[0].explain.unwrap().keyword_weight;
    assert!(
        weight.is_some_and(|w| (w - 2.0 / 3.0).abs() < 1e-4),
        "{weight:?}"
    );
    // Every content word matched: no discount.
    let whole = "wrist broken fall";
    assert!((fused(whole, 0.0) - fused(whole, 1.0)).abs() < 1e-6);
    assert_weight_refused(&db, whole, |w| w.coverage = 1.5);
}

/// The question lift (`weights.question_lift`): a natural-language query
/// that asks (ends in `?`) fuses with the semantic weight times the lift
/// (0.5 × 1.2 by default), which `explain` shows; the same words without
/// the `?`, or a lift of 1, keep the weight; the lift outside 1..=10 is
/// refused.
#[test]
fn a_question_leans_on_meaning() {
    let dir = tmp();
    let db = wrist_and_bread(dir.path());
    let weight = |query: &str, lift: Option<f32>| {
        let mut req = SearchRequest::new(query);
        req.explain = true;
        if let Some(l) = lift {
            req.weights.question_lift = l;
        }
        let r = db.sekha().search(&req).unwrap();
        assert_eq!(r.mode, SearchMode::Hybrid);
        r.hits[0].explain.unwrap().semantic_weight
    };
    let lifted = weight("how was the wrist broken?  ", None);
    assert!(
        lifted.is_some_and(|w| (w - DEFAULT_SEMANTIC_WEIGHT * DEFAULT_QUESTION_LIFT).abs() < 1e-6),
        "{lifted:?}"
    );
    assert_eq!(weight("how was the wrist broken", None), None);
    assert_eq!(weight("how was the wrist broken?", Some(1.0)), None);
    let doubled = weight("how was the wrist broken?", Some(2.0));
    assert!(
        doubled.is_some_and(|w| (w - 2.0 * DEFAULT_SEMANTIC_WEIGHT).abs() < 1e-6),
        "{doubled:?}"
    );
    // The lifted weight is the one fused: the match's semantic share grows
    // with it (its similarity is the best, normalised to 1).
    let fused = |lift: f32| {
        let mut req = SearchRequest::new("how was the wrist broken?");
        req.explain = true;
        req.weights.question_lift = lift;
        without_expansion(&mut req.weights);
        let r = db.sekha().search(&req).unwrap();
        explained(&r, "the wrist")
            .and_then(|e| e.fused)
            .expect("found")
    };
    assert!(fused(2.0) > fused(1.0), "{} {}", fused(2.0), fused(1.0));
    assert_weight_refused(&db, "wrist?", |w| w.question_lift = 0.5);
    assert_weight_refused(&db, "wrist?", |w| w.question_lift = f32::NAN);
    assert_weight_refused(&db, "wrist?", |w| w.question_lift = 11.0);
}

/// Speakers (`weights.speaker`): when the question names one speaker of
/// a `"Name: text"` dialogue, the other speaker's turns lose that share of
/// their fused score, so the named speaker's turn leads; a turn without a
/// known speaker keeps its score; nothing moves when the question names no
/// speaker; a value outside 0..=1 is refused.
#[test]
fn a_named_speaker_s_turns_lead() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    conv(
        &db,
        "pottery",
        "/",
        &[
            "Otto: my pottery class glazes bowls on thursday",
            "Zara: a pottery class glazes bowls, mine too",
            "pottery class glazes bowls, notes without a speaker",
        ],
    );
    let search = |query: &str, speaker: f32| {
        let mut req = SearchRequest::new(query);
        req.explain = true;
        req.weights.neighbours = 0.0;
        req.weights.speaker = speaker;
        db.sekha().search(&req).unwrap()
    };
    let factor =
        |r: &SearchResults, opening: &str| explained(r, opening).and_then(|e| e.speaker_factor);
    let q = "What did Zara say about pottery class glazes bowls?";
    let on = search(q, 0.5);
    assert!(
        on.hits[0].message.content.text().starts_with("Zara:"),
        "{on:?}"
    );
    assert_eq!(factor(&on, "Otto:"), Some(0.5));
    assert_eq!(factor(&on, "Zara:"), Some(1.0));
    assert_eq!(factor(&on, "pottery"), Some(1.0), "no speaker, no discount");
    // The discount is exactly the share: Otto's fused score halves.
    let off = search(q, 0.0);
    let fused = |r: &SearchResults| explained(r, "Otto:").and_then(|e| e.fused).unwrap();
    assert!((fused(&on) - 0.5 * fused(&off)).abs() < 1e-5);
    assert_eq!(factor(&off, "Otto:"), None, "off: the stage does not run");
    // No speaker named: the stage leaves every score alone.
    let unnamed = search("pottery class glazes bowls", 0.5);
    assert_eq!(factor(&unnamed, "Otto:"), None);
    assert_weight_refused(&db, q, |w| w.speaker = -0.1);
}

/// Session spread (`weights.per_conversation`): with a cap of 1, the first
/// hits come from distinct conversations, the rest follow in their fused
/// order; off by default; a cap over 1,000 is refused.
#[test]
fn session_spread_puts_other_conversations_first() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    let long = conv(
        &db,
        "long",
        "/",
        &[
            "the orchard apples were ripe",
            "apples from the orchard again",
            "we picked orchard apples all day",
        ],
    );
    let other = conv(&db, "other", "/", &["an apple from the market"]);
    let third = conv(&db, "third", "/", &["orchard visit in spring"]);
    let mut req = SearchRequest::new("orchard apples");
    req.weights.neighbours = 0.0;
    let convs = |r: &memdb::SearchResults| -> Vec<uuid::Uuid> {
        r.hits.iter().map(|h| h.message.conversation_id).collect()
    };
    let plain = db.sekha().search(&req).unwrap();
    let by_plain = convs(&plain);
    // Unspread, the long conversation's three turns lead.
    assert_eq!(&by_plain[..3], &[long.conversation.id; 3], "{by_plain:?}");
    req.weights.per_conversation = 1;
    let spread = db.sekha().search(&req).unwrap();
    let by_spread = convs(&spread);
    let firsts: std::collections::HashSet<_> = by_spread[..3].iter().collect();
    assert_eq!(firsts.len(), 3, "{by_spread:?}");
    assert!(firsts.contains(&other.conversation.id) && firsts.contains(&third.conversation.id));
    // The same hits, only reordered; the long conversation's others
    // follow in their fused order.
    let ids = |r: &memdb::SearchResults| -> Vec<uuid::Uuid> {
        r.hits.iter().map(|h| h.message.id).collect()
    };
    let (mut a, mut b) = (ids(&plain), ids(&spread));
    assert_eq!(b[3..], a[1..3]);
    a.sort();
    b.sort();
    assert_eq!(a, b);
    req.weights.per_conversation = 1_001;
    assert!(matches!(
        db.sekha().search(&req),
        Err(Error::InvalidInput { .. })
    ));
}

/// The session pass (SPEC.md §18.3): the session weight multiplies every
/// candidate's score by its conversation's factor, most for the
/// conversation with the most near turns; the session tail gives places
/// 7-10 to the best hits of conversations the places above miss, when they
/// score at least the ratio of the hit they displace; both off at 0, and
/// out-of-range settings are refused.
#[test]
fn the_session_pass_weighs_conversations_and_opens_the_tail_to_new_ones() {
    let dir = tmp();
    let db = open(dir.path(), hashing(128));
    let turns: Vec<String> = (0..12)
        .map(|i| format!("orchard apples picked on day {i}"))
        .collect();
    let refs: Vec<&str> = turns.iter().map(String::as_str).collect();
    let long = conv(&db, "long", "/", &refs);
    let others: Vec<uuid::Uuid> = [
        "an orchard in the hills",
        "the orchard gate",
        "orchard rows",
    ]
    .iter()
    .map(|t| conv(&db, "other", "/", &[t]).conversation.id)
    .collect();
    let mut req = SearchRequest::new("orchard apples");
    req.explain = true;
    let convs = |r: &memdb::SearchResults| -> Vec<uuid::Uuid> {
        r.hits.iter().map(|h| h.message.conversation_id).collect()
    };
    let ids = |r: &memdb::SearchResults| -> Vec<uuid::Uuid> {
        r.hits.iter().map(|h| h.message.id).collect()
    };
    req.weights.session_mass = 0.0;
    req.weights.session_tail = 0;
    let plain = db.sekha().search(&req).unwrap();
    assert_eq!(convs(&plain)[..10], [long.conversation.id; 10]);
    assert!(plain.hits.iter().all(|h| {
        let e = h.explain.unwrap();
        e.session_factor.is_none() && e.session_from.is_none()
    }));

    // The tail with no ratio: places 7-9 go to the three other
    // conversations, place 10 to the long one's next turn.
    req.weights.session_tail = 4;
    req.weights.session_tail_ratio = 0.0;
    let tail = db.sekha().search(&req).unwrap();
    assert_eq!(ids(&tail)[..6], ids(&plain)[..6]);
    let tens: std::collections::HashSet<_> = convs(&tail)[..10].iter().copied().collect();
    assert_eq!(tens.len(), 4, "{:?}", convs(&tail));
    for h in &tail.hits[6..9] {
        assert!(others.contains(&h.message.conversation_id));
        assert!(h.explain.unwrap().session_from.is_some_and(|r| r > 10));
    }
    assert_eq!(tail.hits[9].message.id, plain.hits[6].message.id);
    // A ratio no weaker hit reaches moves nothing.
    req.weights.session_tail_ratio = 1.0;
    assert_eq!(ids(&db.sekha().search(&req).unwrap()), ids(&plain));

    // The weight: the long conversation's factor is the largest, 1 + 0.5.
    req.weights.session_tail = 0;
    req.weights.session_mass = 0.5;
    let weighed = db.sekha().search(&req).unwrap();
    let factor = |h: &memdb::SearchHit| h.explain.unwrap().session_factor.unwrap();
    for h in &weighed.hits {
        if h.message.conversation_id == long.conversation.id {
            assert!((factor(h) - 1.5).abs() < 1e-6, "{}", factor(h));
        } else {
            assert!(factor(h) >= 1.0 && factor(h) < 1.5, "{}", factor(h));
        }
        assert_eq!(h.explain.unwrap().fused, Some(h.score));
    }
    assert_eq!(weighed.hits[0].message.id, plain.hits[0].message.id);

    assert_weight_refused(&db, "orchard apples", |w| w.session_mass = 10.5);
    assert_weight_refused(&db, "orchard apples", |w| w.session_tail = 11);
    assert_weight_refused(&db, "orchard apples", |w| w.session_tail_ratio = 1.5);
}

/// `embedding_id` (issue 19): null while a message waits in the queue, the
/// message's id once it has a vector in the active space (Sekha's Chroma id),
/// and null in a store without an embedder.
#[test]
fn embedding_id_is_the_message_id_once_embedded() {
    let d = tmp();
    {
        let db = Memdb::open(d.path()).unwrap();
        let c = conv(&db, "plain", "/", &["no embedder here"]);
        let got = db
            .sekha()
            .get_conversation_with_messages(c.conversation.id)
            .unwrap();
        assert_eq!(got.messages[0].embedding_id, None);
    }
    let mut config = Config::with_embedder(hashing(64));
    config.embed_on_write = false;
    let db = Memdb::open_with(d.path(), config).unwrap();
    let c = conv(&db, "queued", "/", &["first turn", "second turn"]);
    let got = db
        .sekha()
        .get_conversation_with_messages(c.conversation.id)
        .unwrap();
    assert!(
        got.messages.iter().all(|m| m.embedding_id.is_none()),
        "{:?}",
        got.messages
    );
    let report = db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(report.remaining, 0);
    let got = db
        .sekha()
        .get_conversation_with_messages(c.conversation.id)
        .unwrap();
    for m in &got.messages {
        assert_eq!(m.embedding_id.as_deref(), Some(m.id.to_string().as_str()));
        let one = db.sekha().get_message(m.id).unwrap();
        assert_eq!(one.embedding_id, m.embedding_id);
    }
}

/// A message longer than the model reads is embedded as the windows the
/// model reads whole, and its vector is their normalised mean (SPEC.md
/// §10.1, `LongPassage::Mean`): what only its end says finds it by
/// meaning, and the space says which rule it was filled by.
#[test]
fn a_long_message_is_the_mean_of_its_windows() {
    use crate::kuradb::Windowed;
    use std::sync::atomic::Ordering;
    let dir = tmp();
    let e = Arc::new(Windowed::new(128, 16));
    let db = open(dir.path(), e.clone());
    let mut long = String::new();
    for i in 0..90 {
        long.push_str(&format!("filler{i} "));
    }
    long.push_str("the secret ingredient is saffron from la mancha in spain");
    let c = conv(&db, "long", "/", &[&long]);
    conv(&db, "short", "/", &["a short note about tea"]);
    conv(&db, "other", "/", &["spain has trains"]);
    db.embed_pending(None, &mut |_| {}).unwrap();
    // 100 words in windows of 16 overlapping by 2: 7 windows, plus one
    // text for each short message.
    assert_eq!(e.texts.load(Ordering::SeqCst), 9);
    // The stored vector is the normalised mean of the windows' vectors.
    let assert_mean_of = |id: uuid::Uuid, pieces: &[&str]| {
        let v = db.message_vector(id).unwrap().expect("embedded");
        e.assert_mean_of(&v, pieces);
        v
    };
    let pieces = e.pieces(&long);
    assert_eq!(pieces.len(), 7);
    let v = assert_mean_of(c.messages[0].id, &pieces);
    // Found by what only its last window says, over a message sharing a
    // word of it.
    let r = db
        .sekha()
        .search(
            &SearchRequest::new("saffron from la mancha in spain")
                .mode(SearchMode::Semantic)
                .limit(3),
        )
        .unwrap();
    assert_eq!(r.hits[0].message.id, c.messages[0].id);
    let status = db.embedding_status().unwrap();
    let active = status.active.expect("an active space");
    assert_eq!(active.long_passage, LongPassage::Mean);
    // A rebuild keeps the rule and the vector.
    db.rebuild_embeddings(&mut |_| {}).unwrap();
    let again = db.message_vector(c.messages[0].id).unwrap().unwrap();
    assert_eq!(again, v);
    assert_eq!(
        db.embedding_status().unwrap().active.unwrap().long_passage,
        LongPassage::Mean
    );
    // A message of 29 windows costs the model 16 of them, spread from its
    // first to its last.
    let huge: String = (0..400).map(|i| format!("w{i} ")).collect();
    let all = e.passages(&huge).unwrap();
    assert_eq!(all.len(), 29);
    let before = e.texts.load(Ordering::SeqCst);
    let h = conv(&db, "huge", "/", &[&huge]);
    db.embed_pending(None, &mut |_| {}).unwrap();
    assert_eq!(
        e.texts.load(Ordering::SeqCst) - before,
        LongPassage::MAX_WINDOWS
    );
    let spread = spread_windows(all, LongPassage::MAX_WINDOWS);
    let pieces: Vec<&str> = spread.into_iter().map(|r| &huge[r]).collect();
    assert!(pieces[15].ends_with("w399 "), "{:?}", pieces[15]);
    assert_mean_of(h.messages[0].id, &pieces);
    // A turn that fits, between long neighbours: its passage is long only
    // by them, and is read as before (the turn whole, the neighbours cut
    // by the model), not as a mean giving neighbour text the say.
    let side: String = (0..60).map(|i| format!("n{i} ")).collect();
    let turn = "the kettle whistles when the water for tea boils";
    let c = conv(&db, "between", "/", &[&side, turn, &side]);
    db.embed_pending(None, &mut |_| {}).unwrap();
    let passage = Passage::WithNeighbours.build(turn, Some(&side), Some(&side));
    assert!(
        e.passages(&passage).unwrap().len() > 1,
        "long by its neighbours"
    );
    let v = db.message_vector(c.messages[1].id).unwrap().unwrap();
    let read = e.embed(&[passage.as_str()]).unwrap().remove(0);
    assert!(v.iter().zip(&read).all(|(a, b)| (a - b).abs() < 1e-6));
    // The long neighbours themselves are means.
    let own = Passage::WithNeighbours.build(&side, None, Some(turn));
    let pieces = e.pieces(&own);
    assert!(pieces.len() > 1);
    assert_mean_of(c.messages[0].id, &pieces);
}
