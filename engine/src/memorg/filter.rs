//! Metadata filters with Chroma's `where` semantics (SPEC.md §14.2),
//! parsed once (every error names its path) and then evaluated over an
//! item's `serde_json` metadata, so vector and text search can apply them
//! while they collect candidates instead of after.
//!
//! Syntax: `{"key": value}` (equality), `{"key": {"$op": operand, ...}}`
//! with `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$nin`,
//! `$exists`, and `{"$and": [f, ...]}`, `{"$or": [f, ...]}`. Several keys
//! in one object, and several operators on one key, are ANDed (Chroma asks
//! for an explicit `$and`; accepting both is a superset). `{}` matches
//! everything.
//!
//! Memorg's own filters never match: its SQLite adapter compares
//! `json_extract(data, '$.key')` with the JSON-encoded value, so a string or
//! a number is never equal to itself.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};

/// Deepest nesting of `$and`/`$or` a filter may use.
pub const MAX_FILTER_DEPTH: usize = 32;
/// Most values one `$in`/`$nin` list may hold.
pub const MAX_IN_VALUES: usize = 1024;
/// Most conditions (leaves) one filter may hold.
pub const MAX_CONDITIONS: usize = 4096;

/// A value a condition compares against: Chroma's metadata scalars.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// A string.
    Str(String),
    /// A number (integers compare exactly, mixed integer/float as `f64`).
    Num(Number),
    /// A boolean.
    Bool(bool),
}

impl Scalar {
    fn parse(v: &Value, path: &str) -> Result<Scalar> {
        match v {
            Value::String(s) => Ok(Scalar::Str(s.clone())),
            Value::Number(n) => Ok(Scalar::Num(n.clone())),
            Value::Bool(b) => Ok(Scalar::Bool(*b)),
            Value::Null => Err(Error::invalid(
                path,
                "null is not a filter value (use $exists: false)",
            )),
            Value::Array(_) => Err(Error::invalid(
                path,
                "a list is not a filter value here (use $in)",
            )),
            Value::Object(_) => Err(Error::invalid(path, "an object is not a filter value here")),
        }
    }

    /// Whether a stored scalar equals this one (numbers by value, so `1`
    /// equals `1.0`; no cross-type equality).
    fn equals(&self, v: &Value) -> bool {
        match (self, v) {
            (Scalar::Str(a), Value::String(b)) => a == b,
            (Scalar::Bool(a), Value::Bool(b)) => a == b,
            (Scalar::Num(a), Value::Number(b)) => cmp_numbers(b, a) == Some(Ordering::Equal),
            _ => false,
        }
    }
}

/// One comparison on one key.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `$eq` (also a bare value).
    Eq(Scalar),
    /// `$ne`: matches when the key is absent too.
    Ne(Scalar),
    /// `$gt` (numbers only).
    Gt(Number),
    /// `$gte` (numbers only).
    Gte(Number),
    /// `$lt` (numbers only).
    Lt(Number),
    /// `$lte` (numbers only).
    Lte(Number),
    /// `$in`: equal to one of the values.
    In(Vec<Scalar>),
    /// `$nin`: equal to none of the values; matches an absent key.
    Nin(Vec<Scalar>),
    /// `$exists`: the key is present with a non-null value (`true`), or
    /// absent or null (`false`).
    Exists(bool),
}

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataFilter {
    /// Every part matches (`$and`, several keys, `{}`).
    And(Vec<MetadataFilter>),
    /// Some part matches (`$or`). An empty `$or` is refused at parse time.
    Or(Vec<MetadataFilter>),
    /// A condition on one key. A key is looked up as is first, then as a
    /// dotted path into nested objects (`"author.name"`).
    Field {
        /// The metadata key.
        key: String,
        /// The comparison.
        condition: Condition,
    },
}

impl MetadataFilter {
    /// A filter that matches everything.
    pub fn all() -> MetadataFilter {
        MetadataFilter::And(Vec::new())
    }

    /// Parses a `where` object. Errors are `InvalidInput` whose field is
    /// the path of the offending part (`where.$and[1].year.$gt`).
    pub fn parse(filter: &Value) -> Result<MetadataFilter> {
        let mut leaves = 0;
        parse_object(filter, "where", 0, &mut leaves)
    }

    /// Whether `metadata` (an object; anything else is treated as an empty
    /// object) passes the filter.
    pub fn matches(&self, metadata: &Value) -> bool {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match metadata {
            Value::Object(m) => self.matches_map(m),
            _ => self.matches_map(EMPTY.get_or_init(Map::new)),
        }
    }

    /// Whether the metadata map passes the filter.
    pub fn matches_map(&self, metadata: &Map<String, Value>) -> bool {
        match self {
            MetadataFilter::And(parts) => parts.iter().all(|p| p.matches_map(metadata)),
            MetadataFilter::Or(parts) => parts.iter().any(|p| p.matches_map(metadata)),
            MetadataFilter::Field { key, condition } => {
                condition.holds(lookup(metadata, key).filter(|v| !v.is_null()))
            }
        }
    }

    /// Whether the filter matches everything (`{}` or only empty `$and`s).
    pub fn is_trivial(&self) -> bool {
        match self {
            MetadataFilter::And(parts) => parts.iter().all(MetadataFilter::is_trivial),
            _ => false,
        }
    }
}

impl Condition {
    /// Whether a stored value (`None` when the key is absent or null)
    /// passes. A list value passes a positive condition when one of its
    /// elements does, and `$ne`/`$nin` when none of its elements is
    /// excluded (tags: `{"tags": "ai"}` finds items tagged `ai`).
    pub fn holds(&self, value: Option<&Value>) -> bool {
        match self {
            Condition::Exists(want) => value.is_some() == *want,
            Condition::Ne(s) => value.is_none_or(|v| !any_element(v, |e| s.equals(e))),
            Condition::Nin(list) => {
                value.is_none_or(|v| !any_element(v, |e| list.iter().any(|s| s.equals(e))))
            }
            Condition::Eq(s) => value.is_some_and(|v| any_element(v, |e| s.equals(e))),
            Condition::In(list) => {
                value.is_some_and(|v| any_element(v, |e| list.iter().any(|s| s.equals(e))))
            }
            Condition::Gt(n) => compare(value, n, |o| o == Ordering::Greater),
            Condition::Gte(n) => compare(value, n, |o| o != Ordering::Less),
            Condition::Lt(n) => compare(value, n, |o| o == Ordering::Less),
            Condition::Lte(n) => compare(value, n, |o| o != Ordering::Greater),
        }
    }
}

fn compare(value: Option<&Value>, n: &Number, ok: impl Fn(Ordering) -> bool) -> bool {
    value.is_some_and(|v| {
        any_element(v, |e| match e {
            Value::Number(x) => cmp_numbers(x, n).is_some_and(&ok),
            _ => false,
        })
    })
}

fn any_element(v: &Value, f: impl Fn(&Value) -> bool) -> bool {
    match v {
        Value::Array(items) => items.iter().any(f),
        other => f(other),
    }
}

/// Orders two JSON numbers: exactly when both are integers, else as f64.
fn cmp_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Some(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return Some(x.cmp(&y));
    }
    // One is negative (i64 only) and the other beyond i64 (u64 only).
    if let (Some(_), Some(_)) = (a.as_i64(), b.as_u64()) {
        return Some(Ordering::Less);
    }
    if let (Some(_), Some(_)) = (a.as_u64(), b.as_i64()) {
        return Some(Ordering::Greater);
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}

fn lookup<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if let Some(v) = m.get(key) {
        return Some(v);
    }
    if !key.contains('.') {
        return None;
    }
    let mut parts = key.split('.');
    let mut cur = m.get(parts.next()?)?;
    for p in parts {
        cur = cur.as_object()?.get(p)?;
    }
    Some(cur)
}

fn parse_object(v: &Value, path: &str, depth: usize, leaves: &mut usize) -> Result<MetadataFilter> {
    if depth > MAX_FILTER_DEPTH {
        return Err(Error::invalid(
            path,
            format!("filter nests deeper than {MAX_FILTER_DEPTH} levels"),
        ));
    }
    let Value::Object(obj) = v else {
        return Err(Error::invalid(
            path,
            format!("expected an object, got {}", kind(v)),
        ));
    };
    let mut parts = Vec::with_capacity(obj.len());
    for (key, value) in obj {
        let here = format!("{path}.{key}");
        match key.as_str() {
            "$and" | "$or" => {
                let Value::Array(items) = value else {
                    return Err(Error::invalid(
                        here,
                        format!("expected a list of filters, got {}", kind(value)),
                    ));
                };
                if items.is_empty() {
                    return Err(Error::invalid(here, "needs at least one filter"));
                }
                let subs = items
                    .iter()
                    .enumerate()
                    .map(|(i, f)| parse_object(f, &format!("{here}[{i}]"), depth + 1, leaves))
                    .collect::<Result<Vec<_>>>()?;
                parts.push(if key == "$and" {
                    MetadataFilter::And(subs)
                } else {
                    MetadataFilter::Or(subs)
                });
            }
            k if k.starts_with('$') => {
                return Err(Error::invalid(
                    here,
                    format!("unknown logical operator {k:?}; expected $and or $or"),
                ));
            }
            "" => return Err(Error::invalid(here, "a metadata key must not be empty")),
            _ => parse_field(key, value, &here, leaves, &mut parts)?,
        }
    }
    Ok(if parts.len() == 1 {
        parts.remove(0)
    } else {
        MetadataFilter::And(parts)
    })
}

fn parse_field(
    key: &str,
    value: &Value,
    path: &str,
    leaves: &mut usize,
    out: &mut Vec<MetadataFilter>,
) -> Result<()> {
    let mut push = |condition: Condition, out: &mut Vec<MetadataFilter>| -> Result<()> {
        *leaves += 1;
        if *leaves > MAX_CONDITIONS {
            return Err(Error::invalid(
                path,
                format!("filter has more than {MAX_CONDITIONS} conditions"),
            ));
        }
        out.push(MetadataFilter::Field {
            key: key.to_string(),
            condition,
        });
        Ok(())
    };
    let Value::Object(ops) = value else {
        return push(Condition::Eq(Scalar::parse(value, path)?), out);
    };
    if ops.is_empty() {
        return Err(Error::invalid(path, "expected an operator such as $eq"));
    }
    for (op, operand) in ops {
        let here = format!("{path}.{op}");
        let condition = match op.as_str() {
            "$eq" => Condition::Eq(Scalar::parse(operand, &here)?),
            "$ne" => Condition::Ne(Scalar::parse(operand, &here)?),
            "$gt" => Condition::Gt(number(operand, &here)?),
            "$gte" => Condition::Gte(number(operand, &here)?),
            "$lt" => Condition::Lt(number(operand, &here)?),
            "$lte" => Condition::Lte(number(operand, &here)?),
            "$in" => Condition::In(list(operand, &here)?),
            "$nin" => Condition::Nin(list(operand, &here)?),
            "$exists" => match operand {
                Value::Bool(b) => Condition::Exists(*b),
                other => {
                    return Err(Error::invalid(
                        here,
                        format!("expected true or false, got {}", kind(other)),
                    ));
                }
            },
            other => {
                return Err(Error::invalid(
                    here,
                    format!(
                        "unknown operator {other:?}; expected one of $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists"
                    ),
                ));
            }
        };
        push(condition, out)?;
    }
    Ok(())
}

fn number(v: &Value, path: &str) -> Result<Number> {
    match v {
        Value::Number(n) => Ok(n.clone()),
        other => Err(Error::invalid(
            path,
            format!("expected a number, got {}", kind(other)),
        )),
    }
}

fn list(v: &Value, path: &str) -> Result<Vec<Scalar>> {
    let Value::Array(items) = v else {
        return Err(Error::invalid(
            path,
            format!("expected a list, got {}", kind(v)),
        ));
    };
    if items.is_empty() {
        return Err(Error::invalid(path, "needs at least one value"));
    }
    if items.len() > MAX_IN_VALUES {
        return Err(Error::invalid(
            path,
            format!(
                "{} values is over the limit of {MAX_IN_VALUES}",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, x)| Scalar::parse(x, &format!("{path}[{i}]")))
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;
    use serde_json::json;

    fn f(v: Value) -> MetadataFilter {
        MetadataFilter::parse(&v).unwrap()
    }

    fn err(v: Value) -> String {
        MetadataFilter::parse(&v).unwrap_err().to_string()
    }

    fn doc() -> Value {
        json!({
            "author": "Research Team",
            "category": "AI",
            "year": 2024,
            "score": 0.75,
            "draft": false,
            "tags": ["research", "ai"],
            "nested": {"lang": "en", "pages": 12},
            "empty": null
        })
    }

    #[test]
    fn equality_bare_and_explicit() {
        let d = doc();
        assert!(f(json!({"author": "Research Team"})).matches(&d));
        assert!(!f(json!({"author": "research team"})).matches(&d));
        assert!(f(json!({"year": {"$eq": 2024}})).matches(&d));
        // Numbers by value: 2024 == 2024.0; strings never equal numbers.
        assert!(f(json!({"year": 2024.0})).matches(&d));
        assert!(!f(json!({"year": "2024"})).matches(&d));
        assert!(f(json!({"draft": false})).matches(&d));
        assert!(!f(json!({"draft": 0})).matches(&d));
        assert!(!f(json!({"missing": "x"})).matches(&d));
    }

    #[test]
    fn not_equal_and_not_in_match_absent_keys() {
        let d = doc();
        assert!(f(json!({"author": {"$ne": "Someone"}})).matches(&d));
        assert!(!f(json!({"author": {"$ne": "Research Team"}})).matches(&d));
        assert!(f(json!({"missing": {"$ne": "x"}})).matches(&d));
        assert!(f(json!({"missing": {"$nin": ["x"]}})).matches(&d));
        assert!(f(json!({"category": {"$nin": ["ML", "DB"]}})).matches(&d));
        assert!(!f(json!({"category": {"$nin": ["ML", "AI"]}})).matches(&d));
    }

    #[test]
    fn ranges_are_numeric_and_inclusive_where_asked() {
        let d = doc();
        assert!(f(json!({"year": {"$gt": 2023}})).matches(&d));
        assert!(!f(json!({"year": {"$gt": 2024}})).matches(&d));
        assert!(f(json!({"year": {"$gte": 2024}})).matches(&d));
        assert!(f(json!({"year": {"$lte": 2024}})).matches(&d));
        assert!(!f(json!({"year": {"$lt": 2024}})).matches(&d));
        assert!(f(json!({"score": {"$gt": 0.5, "$lt": 1}})).matches(&d));
        assert!(!f(json!({"score": {"$gt": 0.8, "$lt": 1}})).matches(&d));
        // Ranges never match a string or an absent key.
        assert!(!f(json!({"author": {"$gt": 0}})).matches(&d));
        assert!(!f(json!({"missing": {"$lt": 10}})).matches(&d));
        // Large integers compare exactly, not through f64.
        let big = json!({"n": 9007199254740993u64});
        assert!(f(json!({"n": {"$gt": 9007199254740992u64}})).matches(&big));
        assert!(f(json!({"n": {"$gt": -1}})).matches(&big));
        assert!(!f(json!({"n": {"$lt": -1}})).matches(&big));
    }

    #[test]
    fn in_lists_and_list_valued_metadata() {
        let d = doc();
        assert!(f(json!({"category": {"$in": ["ML", "AI"]}})).matches(&d));
        assert!(!f(json!({"category": {"$in": ["ML"]}})).matches(&d));
        // A list value matches when one of its elements does.
        assert!(f(json!({"tags": "ai"})).matches(&d));
        assert!(f(json!({"tags": {"$in": ["x", "research"]}})).matches(&d));
        assert!(!f(json!({"tags": {"$ne": "ai"}})).matches(&d));
        assert!(f(json!({"tags": {"$ne": "ml"}})).matches(&d));
        assert!(!f(json!({"tags": {"$nin": ["ai"]}})).matches(&d));
    }

    #[test]
    fn exists_treats_null_as_absent() {
        let d = doc();
        assert!(f(json!({"author": {"$exists": true}})).matches(&d));
        assert!(!f(json!({"missing": {"$exists": true}})).matches(&d));
        assert!(f(json!({"missing": {"$exists": false}})).matches(&d));
        assert!(!f(json!({"empty": {"$exists": true}})).matches(&d));
        assert!(f(json!({"empty": {"$exists": false}})).matches(&d));
    }

    #[test]
    fn logic_and_implicit_and() {
        let d = doc();
        assert!(f(json!({"$and": [{"category": "AI"}, {"year": {"$gte": 2020}}]})).matches(&d));
        assert!(!f(json!({"$and": [{"category": "AI"}, {"year": {"$lt": 2020}}]})).matches(&d));
        assert!(f(json!({"$or": [{"category": "DB"}, {"year": 2024}]})).matches(&d));
        assert!(!f(json!({"$or": [{"category": "DB"}, {"year": 2000}]})).matches(&d));
        assert!(f(json!({"category": "AI", "draft": false})).matches(&d));
        assert!(!f(json!({"category": "AI", "draft": true})).matches(&d));
        assert!(
            f(json!({"$or": [{"$and": [{"draft": true}, {"year": 2024}]}, {"tags": "ai"}]}))
                .matches(&d)
        );
        let all = f(json!({}));
        assert!(all.is_trivial());
        assert!(all.matches(&d));
        assert!(all.matches(&json!(null)));
        assert!(!f(json!({"a": 1})).is_trivial());
        // Non-object metadata is an empty object.
        assert!(!f(json!({"a": 1})).matches(&json!([1, 2])));
        assert!(f(json!({"a": {"$exists": false}})).matches(&json!("x")));
    }

    #[test]
    fn dotted_keys_reach_nested_objects() {
        let d = doc();
        assert!(f(json!({"nested.lang": "en"})).matches(&d));
        assert!(f(json!({"nested.pages": {"$gte": 10}})).matches(&d));
        assert!(!f(json!({"nested.nope": {"$exists": true}})).matches(&d));
        assert!(!f(json!({"author.name": "x"})).matches(&d));
        // A literal dotted key wins over the path.
        let lit = json!({"a.b": 1, "a": {"b": 2}});
        assert!(f(json!({"a.b": 1})).matches(&lit));
    }

    #[test]
    fn bad_filters_are_errors_naming_their_path() {
        let e = err(json!("x"));
        assert!(e.contains("where") && e.contains("object"), "{e}");
        let e = err(json!({"year": {"$gt": "2020"}}));
        assert!(e.contains("where.year.$gt") && e.contains("number"), "{e}");
        let e = err(json!({"year": {"$between": [1, 2]}}));
        assert!(
            e.contains("$between") && e.contains("unknown operator"),
            "{e}"
        );
        let e = err(json!({"$not": {"a": 1}}));
        assert!(e.contains("$not"), "{e}");
        let e = err(json!({"$and": {"a": 1}}));
        assert!(e.contains("list"), "{e}");
        let e = err(json!({"$or": []}));
        assert!(e.contains("at least one"), "{e}");
        let e = err(json!({"$and": [{"a": 1}, {"b": {"$in": []}}]}));
        assert!(e.contains("where.$and[1].b.$in"), "{e}");
        let e = err(json!({"a": {"$in": "x"}}));
        assert!(e.contains("list"), "{e}");
        let e = err(json!({"a": {"$in": [1, [2]]}}));
        assert!(e.contains("where.a.$in[1]"), "{e}");
        let e = err(json!({"a": null}));
        assert!(e.contains("$exists"), "{e}");
        let e = err(json!({"a": {}}));
        assert!(e.contains("operator"), "{e}");
        let e = err(json!({"a": {"$exists": "yes"}}));
        assert!(e.contains("true or false"), "{e}");
        let e = err(json!({"": 1}));
        assert!(e.contains("empty"), "{e}");
        let too_many: Vec<Value> = (0..=MAX_IN_VALUES).map(|i| json!(i)).collect();
        assert!(err(json!({"a": {"$in": too_many}})).contains("limit"));
    }

    #[test]
    fn depth_and_size_limits_hold_without_overflowing() {
        let mut v = json!({"a": 1});
        for _ in 0..200 {
            v = json!({"$and": [v]});
        }
        let e = err(v);
        assert!(e.contains("deeper"), "{e}");
        let mut ok = json!({"a": 1});
        for _ in 0..MAX_FILTER_DEPTH {
            ok = json!({"$or": [ok]});
        }
        assert!(f(ok).matches(&json!({"a": 1})));
        let many: Vec<Value> = (0..=MAX_CONDITIONS).map(|i| json!({"k": i})).collect();
        assert!(err(json!({"$or": many})).contains("conditions"));
    }

    fn scalar() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            (0i64..4).prop_map(Value::from),
            prop::sample::select(vec!["a", "b"]).prop_map(Value::from),
            proptest::bool::ANY.prop_map(Value::from),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// `$ne` is the negation of `$eq` and `$nin` of `$in`, for scalar
        /// and list values, present or absent keys alike; `$exists`
        /// partitions every document.
        #[test]
        fn negations_are_complements(
            stored in proptest::option::of(proptest::prop_oneof![
                scalar(),
                proptest::collection::vec(scalar(), 0..3).prop_map(Value::from),
            ]),
            probe in scalar(),
            list in proptest::collection::vec(scalar(), 1..3),
        ) {
            let mut doc = Map::new();
            if let Some(v) = stored {
                doc.insert("k".into(), v);
            }
            let doc = Value::Object(doc);
            let eq = f(json!({"k": {"$eq": probe.clone()}})).matches(&doc);
            let ne = f(json!({"k": {"$ne": probe}})).matches(&doc);
            proptest::prop_assert_ne!(eq, ne);
            let is_in = f(json!({"k": {"$in": list.clone()}})).matches(&doc);
            let nin = f(json!({"k": {"$nin": list}})).matches(&doc);
            proptest::prop_assert_ne!(is_in, nin);
            let yes = f(json!({"k": {"$exists": true}})).matches(&doc);
            let no = f(json!({"k": {"$exists": false}})).matches(&doc);
            proptest::prop_assert_ne!(yes, no);
        }
    }
}
