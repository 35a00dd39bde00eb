//! The query-complexity budget: what a keyword query may ask of the parser
//! and the index, checked before anything parses it (SPEC.md §16.1).
//!
//! tantivy's query grammar recurses once per parenthesis, field group
//! (`field:(…)`) and `NOT` keyword, and compiles every regex (a DFA whose
//! size grows with counted repetitions) while it parses. A request must not
//! be able to exhaust the stack or the CPU through it, so [`check`] scans
//! the text once, iteratively (no recursion, no allocation per character),
//! and refuses a query that nests too deep, has too many terms, too many
//! regex or prefix terms, or a regex too large, before the parser sees it.
//! Every search path of the engine calls it: text search, every mode of
//! [`crate::Sekha::search`], and the parser itself (a second line of
//! defense for future callers).
//!
//! The scan reads the query as the parser will: quoted phrases are one
//! unit (their words count as terms), `field:/…/` is a regex, a word
//! ending in `*` is a prefix, and `*` alone (or `field:*`) a wildcard.

use crate::error::{Error, Result};

/// The limits of one keyword query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    /// Longest query, in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of parentheses, field groups and `NOT` chains.
    pub max_depth: usize,
    /// Most terms (words, phrase words, regexes, prefixes).
    pub max_terms: usize,
    /// Most regex terms (`field:/pattern/`).
    pub max_regex: usize,
    /// Most prefix and wildcard terms (`word*`, `"a phrase"*`, `*`, `field:*`).
    pub max_prefix: usize,
    /// Longest regex pattern, in bytes.
    pub max_regex_bytes: usize,
    /// Most positions one regex may expand to (counted repetitions multiply
    /// what they repeat): bounds the cost of compiling it.
    pub max_regex_positions: u64,
}

impl QueryLimits {
    /// The limits every surface applies (SPEC.md §16.1).
    pub const DEFAULT: QueryLimits = QueryLimits {
        max_bytes: 8 * 1024,
        max_depth: 32,
        max_terms: 512,
        max_regex: 4,
        max_prefix: 32,
        max_regex_bytes: 128,
        max_regex_positions: 32,
    };
}

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits::DEFAULT
    }
}

/// What [`check`] counted in a query that fits its budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryShape {
    /// Deepest nesting seen.
    pub depth: usize,
    /// Terms.
    pub terms: usize,
    /// Regex terms.
    pub regexes: usize,
    /// Prefix and wildcard terms.
    pub prefixes: usize,
}

fn over(what: &str, limit: impl std::fmt::Display) -> Error {
    Error::invalid(
        "query",
        format!("query too complex: {what} (the limit is {limit})"),
    )
}

/// Checks `query` against [`QueryLimits::DEFAULT`].
pub fn check(query: &str) -> Result<QueryShape> {
    check_with(query, &QueryLimits::DEFAULT)
}

/// Checks a natural-language query (`natural.rs`) against
/// [`QueryLimits::DEFAULT`]: only its length can be over budget, since it
/// is never parsed and makes no regex, prefix or nested term.
pub(crate) fn check_natural(query: &str) -> Result<()> {
    check_length(query, &QueryLimits::DEFAULT)
}

fn check_length(query: &str, limits: &QueryLimits) -> Result<()> {
    if query.len() > limits.max_bytes {
        return Err(Error::invalid(
            "query",
            format!(
                "query is {} bytes; the limit is {} bytes",
                query.len(),
                limits.max_bytes
            ),
        ));
    }
    Ok(())
}

/// Checks `query` against `limits`: `Ok` with what it counted, or
/// `InvalidInput { field: "query" }` naming the first limit exceeded.
/// Linear in the query's length; stops at the first limit crossed.
pub fn check_with(query: &str, limits: &QueryLimits) -> Result<QueryShape> {
    check_length(query, limits)?;
    let bytes = query.as_bytes();
    let mut shape = QueryShape::default();
    let mut parens = 0usize;
    // `NOT` keywords since the last term: each is one level of recursion.
    let mut nots = 0usize;
    let mut i = 0;
    let count_term =
        |shape: &mut QueryShape, n: usize| bump(&mut shape.terms, n, limits.max_terms, "terms");
    let deeper = |shape: &mut QueryShape, depth: usize| -> Result<()> {
        shape.depth = shape.depth.max(depth);
        if depth > limits.max_depth {
            return Err(over(
                &format!(
                    "nesting deeper than {} (parentheses, field groups or NOT chains)",
                    limits.max_depth
                ),
                limits.max_depth,
            ));
        }
        Ok(())
    };
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => i += 1,
            b'(' => {
                parens += 1;
                deeper(&mut shape, parens + nots)?;
                nots = 0;
                i += 1;
            }
            b')' => {
                parens = parens.saturating_sub(1);
                i += 1;
            }
            b'"' | b'\'' => {
                // A phrase: its words are terms; a `*` right after it makes
                // it a phrase prefix.
                let end = closing_quote(bytes, i + 1, c);
                let words = count_words(&bytes[i + 1..end]);
                count_term(&mut shape, words.max(1))?;
                deeper(&mut shape, parens + nots)?;
                nots = 0;
                i = (end + 1).min(bytes.len());
                if bytes.get(i) == Some(&b'*') {
                    prefix(&mut shape, limits)?;
                    i += 1;
                }
            }
            b'/' if i > 0 && bytes[i - 1] == b':' => {
                // A regex literal (`field:/…/`): up to the next unescaped
                // `/`.
                let end = closing_regex(bytes, i + 1);
                let pattern = &query[i + 1..end];
                regex(&mut shape, limits, pattern)?;
                count_term(&mut shape, 1)?;
                deeper(&mut shape, parens + nots)?;
                nots = 0;
                i = (end + 1).min(bytes.len());
            }
            _ => {
                // A word: up to whitespace or a structural character. A
                // `field:` prefix continues into what follows it.
                let start = i;
                while i < bytes.len()
                    && !is_break(bytes[i])
                    && !(bytes[i] == b'/' && i > start && bytes[i - 1] == b':')
                {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let i_end = i.min(bytes.len());
                let word = &bytes[start..i_end];
                i = i_end;
                if word == b"NOT" {
                    nots += 1;
                    deeper(&mut shape, parens + nots)?;
                    continue;
                }
                if word == b"AND" || word == b"OR" || word == b"+" || word == b"-" {
                    continue;
                }
                if word.ends_with(b":") {
                    // `field:` then a group, regex, phrase or word: the next
                    // token is the term.
                    continue;
                }
                if word.ends_with(b":*") {
                    // tantivy reads `field:*` as "the field exists", which
                    // needs a fast field; no text field is one.
                    return Err(Error::invalid(
                        "query",
                        format!(
                            "{} (field exists) is not supported: use `*` to match every message",
                            String::from_utf8_lossy(word)
                        ),
                    ));
                }
                if word.ends_with(b"*") && !word.ends_with(b"\\*") {
                    prefix(&mut shape, limits)?;
                }
                count_term(&mut shape, 1)?;
                deeper(&mut shape, parens + nots)?;
                nots = 0;
            }
        }
    }
    Ok(shape)
}

/// Whitespace, parentheses and quotes end a word (and `/` after `field:`).
fn is_break(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | b'(' | b')' | b'"'
    )
}

/// Index of the quote closing the one opened before `from`, or the end.
fn closing_quote(bytes: &[u8], from: usize, quote: u8) -> usize {
    let mut j = from;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            q if q == quote => return j,
            _ => j += 1,
        }
    }
    bytes.len()
}

/// Index of the `/` closing a regex opened before `from`, or the end.
fn closing_regex(bytes: &[u8], from: usize) -> usize {
    let mut j = from;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'/' => return j,
            _ => j += 1,
        }
    }
    bytes.len()
}

fn count_words(bytes: &[u8]) -> usize {
    bytes
        .split(|b| !b.is_ascii_alphanumeric() && *b < 0x80)
        .filter(|w| !w.is_empty())
        .count()
}

/// Adds `by` to `count`; over `limit`, the error naming `what` was counted.
fn bump(count: &mut usize, by: usize, limit: usize, what: &str) -> Result<()> {
    *count += by;
    if *count > limit {
        return Err(over(&format!("more than {limit} {what}"), limit));
    }
    Ok(())
}

fn prefix(shape: &mut QueryShape, limits: &QueryLimits) -> Result<()> {
    bump(
        &mut shape.prefixes,
        1,
        limits.max_prefix,
        "prefix or wildcard terms",
    )
}

fn regex(shape: &mut QueryShape, limits: &QueryLimits, pattern: &str) -> Result<()> {
    bump(&mut shape.regexes, 1, limits.max_regex, "regex terms")?;
    if pattern.len() > limits.max_regex_bytes {
        return Err(over(
            &format!(
                "a regex of {} bytes, longer than {}",
                pattern.len(),
                limits.max_regex_bytes
            ),
            limits.max_regex_bytes,
        ));
    }
    // The parser unescapes `\/` before compiling.
    let pattern = pattern.replace("\\/", "/");
    let hir = regex_syntax::ParserBuilder::new()
        .nest_limit(limits.max_depth as u32)
        .build()
        .parse(&pattern)
        .map_err(|e| Error::invalid("query", format!("invalid regex /{pattern}/: {e}")))?;
    let positions = positions(&hir, limits.max_regex_positions);
    if positions > limits.max_regex_positions {
        return Err(over(
            &format!(
                "a regex expanding to more than {} positions (counted repetitions multiply)",
                limits.max_regex_positions
            ),
            limits.max_regex_positions,
        ));
    }
    Ok(())
}

/// Positions `hir` expands to: literals and classes count 1, repetitions
/// multiply by their upper bound (`*` and `+` by their lower bound plus
/// one: a loop, not an expansion), concatenations and alternations sum.
/// Saturates just above `cap`; recursion depth is bounded by the parser's
/// nest limit.
fn positions(hir: &regex_syntax::hir::Hir, cap: u64) -> u64 {
    use regex_syntax::hir::HirKind;
    let capped = |n: u64| n.min(cap.saturating_add(1));
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 0,
        HirKind::Literal(l) => capped(l.0.len() as u64),
        HirKind::Class(_) => 1,
        HirKind::Repetition(r) => {
            let times = u64::from(r.max.unwrap_or(r.min.saturating_add(1)).max(1));
            capped(times.saturating_mul(positions(&r.sub, cap)))
        }
        HirKind::Capture(c) => positions(&c.sub, cap),
        HirKind::Concat(v) | HirKind::Alternation(v) => capped(
            v.iter()
                .map(|h| positions(h, cap))
                .fold(0u64, u64::saturating_add),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reason `q` fails the default limits, length aside (so that
    /// inputs longer than 8 KiB reach the other limits).
    fn reason(q: &str) -> String {
        let limits = QueryLimits {
            max_bytes: usize::MAX,
            ..QueryLimits::DEFAULT
        };
        match check_with(q, &limits) {
            Err(Error::InvalidInput { field, reason }) => {
                assert_eq!(field, "query");
                reason
            }
            other => panic!("{q:?} passed the budget: {other:?}"),
        }
    }

    #[test]
    fn natural_language_is_over_budget_only_by_length() {
        // What the syntax budget refuses is text to a natural-language query.
        for q in [
            "(".repeat(4000),
            "a* ".repeat(100),
            "content_raw:/(?:.?){55}aa/ ".repeat(5),
            "NOT ".repeat(100),
        ] {
            assert!(check(&q).is_err(), "{q:?}");
            check_natural(&q).unwrap();
        }
        let long = "x".repeat(QueryLimits::DEFAULT.max_bytes + 1);
        let e = check_natural(&long).unwrap_err().to_string();
        assert!(e.contains("the limit is 8192 bytes"), "{e}");
        check_natural(&long[1..]).unwrap();
    }

    #[test]
    fn ordinary_queries_pass_and_are_counted() {
        let s = check("borrow checker").unwrap();
        assert_eq!((s.terms, s.depth, s.regexes, s.prefixes), (2, 0, 0, 0));
        let s = check("(rust OR go) AND NOT \"garbage collector\" pyth*").unwrap();
        assert_eq!(s.terms, 5);
        assert_eq!(s.depth, 1);
        assert_eq!(s.prefixes, 1);
        let s = check("content_raw:/rus.*/ label:Work").unwrap();
        assert_eq!((s.terms, s.regexes), (2, 1));
        check("content:(a OR (b AND c))").unwrap();
        check("*").unwrap();
        assert!(reason("content:*").contains("not supported"));
        check("").unwrap();
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let q = format!("{}hello{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(reason(&q).contains("nesting deeper than 32"));
        let ok = format!("{}hello{}", "(".repeat(32), ")".repeat(32));
        assert_eq!(check(&ok).unwrap().depth, 32);
        // NOT chains recurse in the grammar too.
        let nots = format!("{}x", "NOT ".repeat(100));
        assert!(reason(&nots).contains("NOT chains"));
        // Field groups are parentheses.
        let groups = "content:(".repeat(40);
        assert!(reason(&groups).contains("nesting"));
    }

    #[test]
    fn regex_and_prefix_counts_are_bounded() {
        let many: Vec<String> = (0..1000).map(|i| format!("content_raw:/a{i}.*/")).collect();
        assert!(reason(&many.join(" ")).contains("regex terms"));
        let prefixes: Vec<String> = (0..33).map(|i| format!("w{i}*")).collect();
        assert!(reason(&prefixes.join(" ")).contains("prefix"));
        let terms: Vec<String> = (0..513).map(|i| format!("w{i}")).collect();
        assert!(reason(&terms.join(" ")).contains("terms"));
    }

    #[test]
    fn expensive_regexes_are_refused() {
        assert!(reason("content_raw:/(?:.?){55}aa/").contains("positions"));
        assert!(reason("content_raw:/((a?){8}){8}/").contains("positions"));
        assert!(reason(&format!("content_raw:/{}/", "a".repeat(200))).contains("bytes"));
        assert!(reason("content_raw:/(unclosed/").contains("invalid regex"));
        check("content_raw:/colou?r/").unwrap();
        check("content_raw:/.{3,8}x/").unwrap();
        check("content_raw:/a.*b/").unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Safe by construction: whatever passes the budget parses within
        /// a 256 KiB stack (an eighth of a tokio blocking thread's), so the
        /// recursion the depth limit leaves cannot overflow any thread the
        /// engine runs on. Inputs are drawn from the grammar's own
        /// characters and keywords, deeply nested ones included.
        #[test]
        fn queries_within_budget_parse_on_a_small_stack(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("(".to_string()),
                    proptest::strategy::Just(")".to_string()),
                    proptest::strategy::Just("NOT ".to_string()),
                    proptest::strategy::Just(" AND ".to_string()),
                    proptest::strategy::Just(" OR ".to_string()),
                    proptest::strategy::Just("\"".to_string()),
                    proptest::strategy::Just("content:".to_string()),
                    proptest::strategy::Just("content:(".to_string()),
                    proptest::strategy::Just("-".to_string()),
                    proptest::strategy::Just("+".to_string()),
                    proptest::strategy::Just("*".to_string()),
                    proptest::strategy::Just(" ".to_string()),
                    "[a-z]{1,6}",
                ],
                0..400,
            ),
            repeat in 1usize..40,
        ) {
            let q = parts.concat().repeat(repeat);
            if check(&q).is_ok() {
                let parsed = std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn(move || {
                        let mut b = tantivy::schema::Schema::builder();
                        let content = b.add_text_field("content", tantivy::schema::TEXT);
                        let index = tantivy::Index::create_in_ram(b.build());
                        let parser = tantivy::query::QueryParser::for_index(&index, vec![content]);
                        let _ = parser.parse_query(&q);
                    })
                    .expect("spawn")
                    .join();
                proptest::prop_assert!(parsed.is_ok(), "parsing panicked");
            }
        }
    }

    #[test]
    fn length_is_bounded() {
        let q = "a ".repeat(5000);
        let Err(Error::InvalidInput { reason, .. }) = check(&q) else {
            panic!("a 10 KB query passed");
        };
        assert!(reason.contains("10000 bytes"), "{reason}");
        // Within 8 KiB, the other limits still apply.
        let deep = format!("{}x{}", "(".repeat(4000), ")".repeat(4000));
        let Err(Error::InvalidInput { reason, .. }) = check(&deep) else {
            panic!("depth 4000 passed");
        };
        assert!(reason.contains("nesting"), "{reason}");
    }
}
