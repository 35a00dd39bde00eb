//! Exchange importance (SPEC.md §14.5): a base score from the exchange's
//! content and Memorg's two prioritization strategies over it.
//!
//! Memorg's `MemorgSystem.add_exchange` stores every exchange with
//! `importance_score = 0.0`, then computes `RecencyWeightedStrategy`'s
//! `importance_score · exp(−0.1 · age_seconds)` (always 0: the base is 0,
//! and a per-second decay zeroes anything within a minute anyway), sets it
//! on the returned object and never persists it. Here:
//! - [`base_importance`] gives the exchange a content-derived base in
//!   0..=1 (questions and requests, decisions, entities, length, code,
//!   strong sentiment; small talk lowers it), every part named;
//! - [`RecencyWeighted`] decays per **day** (default 0.1/day, half-life
//!   ≈ 6.9 days) instead of per second;
//! - [`TopicCoherence`] is Memorg's: `importance · (0.7 + 0.3 · Jaccard)`
//!   of the topic's key entities and the user message's entities (names
//!   compared case-insensitively).
//!
//! The storage side persists `strategy.calculate_importance(base)` at add
//! time (age 0, so the recency strategy returns the base).

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::memorg::parse::{Entity, ParsedContent};
use crate::util::keywords::code_fences;

/// Memorg's recency decay default (0.1), here per day.
pub const DEFAULT_DECAY_PER_DAY: f64 = 0.1;
/// The base every exchange starts from.
pub const BASE: f64 = 0.3;
const SECONDS_PER_DAY: f64 = 86_400.0;

/// An importance with its named parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportanceBreakdown {
    /// 0..=1.
    pub score: f64,
    /// Each contribution by name (`base`, `question_or_request`, ...).
    pub factors: BTreeMap<String, f64>,
}

/// The content-derived base importance of an exchange, 0..=1:
/// `0.3` + `0.15` for a question or request from the user + `0.15` for a
/// decision in either message + `0.1 · min(entities / 5, 1)` (distinct
/// entity names across both) + `0.1 · min(words / 200, 1)` + `0.1` when
/// either message has a code block + `0.1 · |compound sentiment|` of the
/// user message; `−0.15` when the user message is only small talk
/// (greeting, thanks, farewell). Clamped to 0..=1.
pub fn base_importance(
    user_text: &str,
    user: &ParsedContent,
    system_text: &str,
    system: &ParsedContent,
) -> ImportanceBreakdown {
    let mut factors = BTreeMap::new();
    factors.insert("base".to_string(), BASE);
    let has = |p: &ParsedContent, label: &str| p.intents.iter().any(|i| i == label);
    if has(user, "question") || has(user, "request") {
        factors.insert("question_or_request".to_string(), 0.15);
    }
    if has(user, "decision") || has(system, "decision") {
        factors.insert("decision".to_string(), 0.15);
    }
    let names: HashSet<String> = user
        .entities
        .iter()
        .chain(&system.entities)
        .map(|e| e.name.to_lowercase())
        .collect();
    if !names.is_empty() {
        factors.insert(
            "entities".to_string(),
            0.1 * (names.len() as f64 / 5.0).min(1.0),
        );
    }
    let words = user_text.split_whitespace().count() + system_text.split_whitespace().count();
    if words > 0 {
        factors.insert("length".to_string(), 0.1 * (words as f64 / 200.0).min(1.0));
    }
    if code_fences(user_text).0 || code_fences(system_text).0 {
        factors.insert("code".to_string(), 0.1);
    }
    let compound = user.sentiment.get("compound").copied().unwrap_or(0.0);
    if compound.is_finite() && compound != 0.0 {
        factors.insert("sentiment".to_string(), 0.1 * compound.abs().min(1.0));
    }
    let small_talk = !user.intents.is_empty()
        && user
            .intents
            .iter()
            .all(|i| matches!(i.as_str(), "greeting" | "thanks" | "farewell"));
    if small_talk {
        factors.insert("small_talk".to_string(), -0.15);
    }
    let score = factors.values().sum::<f64>().clamp(0.0, 1.0);
    ImportanceBreakdown { score, factors }
}

/// What a strategy reads from an exchange.
#[derive(Debug, Clone, Copy)]
pub struct ExchangeFacts<'a> {
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Its current (base or stored) importance, 0..=1.
    pub importance: f64,
    /// The user message's entities.
    pub user_entities: &'a [Entity],
}

/// What a strategy reads from around the exchange.
#[derive(Debug, Clone, Copy)]
pub struct ImportanceContext<'a> {
    /// The reference time.
    pub now: DateTime<Utc>,
    /// The key entities of the exchange's topic (Memorg's
    /// `context["current_topic"].key_entities`), if known.
    pub topic_entities: Option<&'a [Entity]>,
}

/// Memorg's `PrioritizationStrategy`.
pub trait PrioritizationStrategy: Send + Sync {
    /// The exchange's importance in this context, 0..=1.
    fn calculate_importance(
        &self,
        exchange: &ExchangeFacts<'_>,
        context: &ImportanceContext<'_>,
    ) -> f64;
    /// The strategy's name (`recency_weighted`, `topic_coherence`).
    fn name(&self) -> &'static str;
}

/// Memorg's `RecencyWeightedStrategy`: `importance · exp(−decay · age)`,
/// with age in days.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecencyWeighted {
    /// Decay per day (≥ 0). Default [`DEFAULT_DECAY_PER_DAY`].
    pub decay_per_day: f64,
}

impl Default for RecencyWeighted {
    fn default() -> Self {
        RecencyWeighted {
            decay_per_day: DEFAULT_DECAY_PER_DAY,
        }
    }
}

impl RecencyWeighted {
    /// The multiplier for an item `age_seconds` old: 1 for age ≤ 0 (clock
    /// skew never boosts), `exp(−decay · days)` otherwise.
    pub fn decay(&self, age_seconds: f64) -> f64 {
        if age_seconds.is_nan()
            || age_seconds <= 0.0
            || self.decay_per_day.is_nan()
            || self.decay_per_day <= 0.0
        {
            return 1.0;
        }
        (-self.decay_per_day * age_seconds / SECONDS_PER_DAY).exp()
    }

    /// Days until an importance halves.
    pub fn half_life_days(&self) -> f64 {
        std::f64::consts::LN_2 / self.decay_per_day
    }
}

impl PrioritizationStrategy for RecencyWeighted {
    fn calculate_importance(
        &self,
        exchange: &ExchangeFacts<'_>,
        context: &ImportanceContext<'_>,
    ) -> f64 {
        let age = (context.now - exchange.created_at).num_microseconds();
        let age = age.map_or(f64::MAX, |us| us as f64 / 1e6);
        clamp01(exchange.importance) * self.decay(age)
    }

    fn name(&self) -> &'static str {
        "recency_weighted"
    }
}

/// Memorg's `TopicCoherenceStrategy`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TopicCoherence;

/// Jaccard overlap of two entity lists by lowercased name (0 when both
/// are empty).
pub fn entity_coherence(a: &[Entity], b: &[Entity]) -> f64 {
    let a: HashSet<String> = a.iter().map(|e| e.name.to_lowercase()).collect();
    let b: HashSet<String> = b.iter().map(|e| e.name.to_lowercase()).collect();
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

impl PrioritizationStrategy for TopicCoherence {
    fn calculate_importance(
        &self,
        exchange: &ExchangeFacts<'_>,
        context: &ImportanceContext<'_>,
    ) -> f64 {
        let importance = clamp01(exchange.importance);
        match context.topic_entities {
            None => importance,
            Some(topic) => {
                importance * (0.7 + 0.3 * entity_coherence(topic, exchange.user_entities))
            }
        }
    }

    fn name(&self) -> &'static str {
        "topic_coherence"
    }
}

/// Memorg's `rank_context_items(items, max_items)`: the `max_items` most
/// important, highest first, ties in input order.
pub fn rank_context_items<T>(
    mut items: Vec<T>,
    max_items: usize,
    importance: impl Fn(&T) -> f64,
) -> Vec<T> {
    items.sort_by(|a, b| clamp01(importance(b)).total_cmp(&clamp01(importance(a))));
    items.truncate(max_items);
    items
}

/// NaN → 0, else clamped to 0..=1.
fn clamp01(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memorg::parse::{EntityType, parse_content};
    use chrono::{Duration, TimeZone};

    fn ent(name: &str) -> Entity {
        Entity {
            name: name.into(),
            entity_type: EntityType::Concept,
            salience: 1.0,
            metadata: Default::default(),
        }
    }

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
    }

    #[test]
    fn base_importance_adds_named_parts() {
        let u = "Can you explain how Tokio and Rayon differ?";
        let s = "Tokio is an async runtime; Rayon is a data-parallelism library.";
        let b = base_importance(u, &parse_content(u), s, &parse_content(s));
        assert_eq!(b.factors["base"], BASE);
        assert_eq!(b.factors["question_or_request"], 0.15);
        // Tokio, Rayon: 2 distinct entities → 0.1 · 2/5.
        assert!((b.factors["entities"] - 0.04).abs() < 1e-12, "{b:?}");
        let words = 8 + 10;
        assert!((b.factors["length"] - 0.1 * words as f64 / 200.0).abs() < 1e-12);
        assert!(!b.factors.contains_key("decision"));
        assert!(!b.factors.contains_key("code"));
        assert!((b.score - b.factors.values().sum::<f64>()).abs() < 1e-12);
    }

    #[test]
    fn small_talk_scores_below_substance() {
        let hi = base_importance(
            "Hello!",
            &parse_content("Hello!"),
            "Hi!",
            &parse_content("Hi!"),
        );
        assert_eq!(hi.factors["small_talk"], -0.15);
        let u = "We decided to use Postgres. Please write the migration:\n```sql\nCREATE TABLE t (id int);\n```";
        let s = "Done. I will run it tonight.";
        let real = base_importance(u, &parse_content(u), s, &parse_content(s));
        assert_eq!(real.factors["decision"], 0.15);
        assert_eq!(real.factors["code"], 0.1);
        assert!(real.score > hi.score + 0.3, "{real:?} vs {hi:?}");
        assert!((0.0..=1.0).contains(&real.score));
        let empty = base_importance("", &ParsedContent::default(), "", &ParsedContent::default());
        assert_eq!(empty.score, BASE);
    }

    #[test]
    fn recency_decays_per_day_not_per_second() {
        let r = RecencyWeighted::default();
        let ex = |age: Duration| ExchangeFacts {
            created_at: t0() - age,
            importance: 0.8,
            user_entities: &[],
        };
        let ctx = ImportanceContext {
            now: t0(),
            topic_entities: None,
        };
        // A minute old: practically intact (Memorg's per-second decay gives
        // 0.8 · e^-6 ≈ 0.002 here).
        let minute = r.calculate_importance(&ex(Duration::seconds(60)), &ctx);
        assert!((minute - 0.8 * (-0.1f64 / 1440.0).exp()).abs() < 1e-12);
        assert!(
            (r.calculate_importance(&ex(Duration::days(1)), &ctx) - 0.8 * (-0.1f64).exp()).abs()
                < 1e-12
        );
        let half = r.calculate_importance(
            &ex(Duration::seconds((r.half_life_days() * 86_400.0) as i64)),
            &ctx,
        );
        assert!((half - 0.4).abs() < 1e-4, "{half}");
        // Future timestamps do not boost; age 0 keeps the base.
        assert_eq!(r.calculate_importance(&ex(Duration::days(-3)), &ctx), 0.8);
        assert_eq!(r.calculate_importance(&ex(Duration::zero()), &ctx), 0.8);
        let none = RecencyWeighted { decay_per_day: 0.0 };
        assert_eq!(
            none.calculate_importance(&ex(Duration::days(400)), &ctx),
            0.8
        );
        // NaN and out-of-range importances are clamped.
        let bad = ExchangeFacts {
            importance: f64::NAN,
            ..ex(Duration::zero())
        };
        assert_eq!(r.calculate_importance(&bad, &ctx), 0.0);
        let big = ExchangeFacts {
            importance: 7.0,
            ..ex(Duration::zero())
        };
        assert_eq!(r.calculate_importance(&big, &ctx), 1.0);
    }

    #[test]
    fn topic_coherence_is_memorgs_jaccard_formula() {
        let topic = [ent("Rust"), ent("Tokio"), ent("Async")];
        let user = [ent("rust"), ent("tokio"), ent("Serde")];
        // Intersection {rust, tokio} = 2, union 4 → 0.5.
        assert_eq!(entity_coherence(&topic, &user), 0.5);
        let ex = ExchangeFacts {
            created_at: t0(),
            importance: 0.6,
            user_entities: &user,
        };
        let with = ImportanceContext {
            now: t0(),
            topic_entities: Some(&topic),
        };
        let got = TopicCoherence.calculate_importance(&ex, &with);
        assert!((got - 0.6 * (0.7 + 0.3 * 0.5)).abs() < 1e-12);
        let without = ImportanceContext {
            now: t0(),
            topic_entities: None,
        };
        assert_eq!(TopicCoherence.calculate_importance(&ex, &without), 0.6);
        let none = ImportanceContext {
            now: t0(),
            topic_entities: Some(&[]),
        };
        let lone = ExchangeFacts {
            user_entities: &[],
            ..ex
        };
        assert!((TopicCoherence.calculate_importance(&lone, &none) - 0.6 * 0.7).abs() < 1e-12);
        assert_eq!(TopicCoherence.name(), "topic_coherence");
        assert_eq!(RecencyWeighted::default().name(), "recency_weighted");
    }

    #[test]
    fn ranking_takes_the_top_n_stably() {
        let items = vec![
            ("a", 0.2),
            ("b", 0.9),
            ("c", 0.2),
            ("d", f64::NAN),
            ("e", 0.5),
        ];
        let top = rank_context_items(items.clone(), 3, |x| x.1);
        assert_eq!(top.iter().map(|x| x.0).collect::<Vec<_>>(), ["b", "e", "a"]);
        let all = rank_context_items(items, 10, |x| x.1);
        assert_eq!(
            all.iter().map(|x| x.0).collect::<Vec<_>>(),
            ["b", "e", "a", "c", "d"]
        );
        assert!(rank_context_items(Vec::<(u8, f64)>::new(), 3, |x| x.1).is_empty());
    }
}
