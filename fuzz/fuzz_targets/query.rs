//! Fuzzes the keyword query path: the query-complexity budget
//! (`memdb::check_query`), text search (`Sekha::search_text`) and keyword
//! mode of `memdb::Sekha::search`, against a small fixed store (common.rs); and
//! the natural-language reading (SPEC.md §16.2), which must answer any text
//! within the length limit.
//!
//! Errors are fine; a panic that reaches the caller or a stack overflow
//! (on a 2 MiB stack, as in the server) is a bug (see common.rs for panics
//! the engine catches). The budget is enforced inside the engine: a query
//! `check_query` refuses must be refused by both searches too.

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use memdb::{QueryLanguage, QueryLimits, SearchMode, SearchRequest, Systems, TextQuery};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data).into_owned();
    common::run(move |f| {
        let budget = memdb::check_query(&s);
        let text = f.db.sekha().search_text(&TextQuery::new(s.as_str()));
        let keyword =
            f.db.sekha().search(&SearchRequest::new(s.as_str()).mode(SearchMode::Keyword));
        if let Err(e) = &budget {
            assert!(
                text.is_err(),
                "check_query refused {s:?} ({e}) but search_text accepted it"
            );
            assert!(
                keyword.is_err(),
                "check_query refused {s:?} ({e}) but keyword search accepted it"
            );
        }
        // Natural language is never a syntax error: within the length
        // limit, a non-empty query answers.
        let natural = f.db.sekha().search(
            &SearchRequest::new(s.as_str())
                .mode(SearchMode::Keyword)
                .language(QueryLanguage::Natural),
        );
        if s.len() <= QueryLimits::DEFAULT.max_bytes && !s.trim().is_empty() {
            if let Err(e) = &natural {
                panic!("the natural-language path refused {s:?}: {e}");
            }
        } else {
            assert!(natural.is_err(), "{} bytes accepted", s.len());
        }
        if let Ok(hits) = &natural {
            for h in &hits.hits {
                assert!(f.ids.contains(&h.message.conversation_id));
            }
        }
        // Every hit resolves to a fixture message.
        if let Ok(hits) = &text {
            assert!(hits.len() <= 10);
            for h in hits {
                assert!(f.ids.contains(&h.message.conversation_id));
            }
        }
    });
});
