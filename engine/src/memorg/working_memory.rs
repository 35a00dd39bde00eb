//! Memorg's working memory (`WorkingMemory(capacity)`): a token-budgeted
//! buffer of context snippets, as a pure data structure (SPEC.md §14.7).
//!
//! `allocate(content, priority)` counts the content's tokens and keeps it
//! if it fits. When it does not, allocations are evicted **lowest priority
//! first, oldest first among equals**, never one with a higher priority
//! than the newcomer, and only if evicting them makes room: otherwise
//! nothing is evicted and the allocation is refused. Memorg ignores the
//! priority, evicts exactly one allocation (the smallest id in string
//! order, so `alloc_10` goes before `alloc_2`) and retries once, so a
//! large newcomer can destroy an entry and still be refused.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::util::tokens::TokenCounter;

/// MemorgSystem's working-memory capacity, in tokens.
pub const DEFAULT_CAPACITY: usize = 4096;

/// One kept snippet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Allocation {
    /// `alloc_<n>`, n counting from 0 per memory.
    pub id: String,
    /// The snippet.
    pub content: String,
    /// Its token count.
    pub tokens: usize,
    /// Its priority (higher survives longer).
    pub priority: f64,
}

/// What `allocate` did (Memorg's `AllocationResult`, plus what it
/// evicted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationResult {
    /// The new allocation's id, empty when refused.
    pub allocation_id: String,
    /// Whether the content was kept.
    pub allocated: bool,
    /// The content's token count.
    pub token_count: usize,
    /// Allocations evicted to make room, in eviction order.
    pub evicted: Vec<String>,
}

/// One allocation in a usage report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationUsage {
    /// The allocation id.
    pub id: String,
    /// Its tokens.
    pub tokens: usize,
    /// Its priority.
    pub priority: f64,
}

/// Memorg's `MemoryUsage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryUsage {
    /// Tokens held.
    pub used: usize,
    /// `capacity − used`.
    pub available: usize,
    /// The capacity.
    pub capacity: usize,
    /// Every allocation, oldest first.
    pub allocations: Vec<AllocationUsage>,
}

/// The working memory.
#[derive(Debug, Clone)]
pub struct WorkingMemory {
    capacity: usize,
    counter: TokenCounter,
    next_id: u64,
    /// Oldest first.
    entries: Vec<Allocation>,
    used: usize,
}

impl WorkingMemory {
    /// An empty memory of `capacity` tokens (≥ 1) counted with `counter`
    /// (Memorg counts with o200k_base).
    pub fn new(capacity: usize, counter: TokenCounter) -> Result<WorkingMemory> {
        if capacity == 0 {
            return Err(Error::invalid("capacity", "must be at least 1 token"));
        }
        Ok(WorkingMemory {
            capacity,
            counter,
            next_id: 0,
            entries: Vec::new(),
            used: 0,
        })
    }

    /// The capacity in tokens.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Tokens held.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Keeps `content` with `priority` if it fits, evicting lower-or-equal
    /// priority allocations (lowest, then oldest first) when that makes
    /// room. Errors on a non-finite priority or a failed token count;
    /// content larger than the whole capacity is refused, evicting nothing.
    pub fn allocate(&mut self, content: &str, priority: f64) -> Result<AllocationResult> {
        if !priority.is_finite() {
            return Err(Error::invalid(
                "priority",
                format!("{priority} is not a finite number"),
            ));
        }
        let tokens = self.counter.count(content)?;
        let refused = |evicted| AllocationResult {
            allocation_id: String::new(),
            allocated: false,
            token_count: tokens,
            evicted,
        };
        if tokens > self.capacity {
            return Ok(refused(Vec::new()));
        }
        let mut evict: Vec<usize> = Vec::new();
        if self.used + tokens > self.capacity {
            let mut order: Vec<usize> = (0..self.entries.len())
                .filter(|&i| self.entries[i].priority <= priority)
                .collect();
            // Stable: equal priorities stay oldest first.
            order.sort_by(|&a, &b| {
                self.entries[a]
                    .priority
                    .total_cmp(&self.entries[b].priority)
            });
            let mut freed = 0;
            for i in order {
                if self.used - freed + tokens <= self.capacity {
                    break;
                }
                freed += self.entries[i].tokens;
                evict.push(i);
            }
            if self.used - freed + tokens > self.capacity {
                return Ok(refused(Vec::new()));
            }
        }
        let evicted: Vec<String> = evict.iter().map(|&i| self.entries[i].id.clone()).collect();
        evict.sort_unstable();
        for i in evict.into_iter().rev() {
            let gone = self.entries.remove(i);
            self.used -= gone.tokens;
        }
        let id = format!("alloc_{}", self.next_id);
        self.next_id += 1;
        self.entries.push(Allocation {
            id: id.clone(),
            content: content.to_string(),
            tokens,
            priority,
        });
        self.used += tokens;
        Ok(AllocationResult {
            allocation_id: id,
            allocated: true,
            token_count: tokens,
            evicted,
        })
    }

    /// Drops an allocation; `false` when there was none with that id.
    pub fn release(&mut self, allocation_id: &str) -> bool {
        match self.entries.iter().position(|e| e.id == allocation_id) {
            Some(i) => {
                let gone = self.entries.remove(i);
                self.used -= gone.tokens;
                true
            }
            None => false,
        }
    }

    /// Drops everything (ids keep counting).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.used = 0;
    }

    /// The allocation with this id.
    pub fn get(&self, allocation_id: &str) -> Option<&Allocation> {
        self.entries.iter().find(|e| e.id == allocation_id)
    }

    /// Every allocation, oldest first.
    pub fn entries(&self) -> &[Allocation] {
        &self.entries
    }

    /// Every allocation, highest priority first, newest first among equals
    /// (the order to put them in a prompt when space is short).
    pub fn by_priority(&self) -> Vec<&Allocation> {
        let mut v: Vec<&Allocation> = self.entries.iter().rev().collect();
        v.sort_by(|a, b| b.priority.total_cmp(&a.priority));
        v
    }

    /// Memorg's `get_current_usage`.
    pub fn usage(&self) -> MemoryUsage {
        MemoryUsage {
            used: self.used,
            available: self.capacity - self.used,
            capacity: self.capacity,
            allocations: self
                .entries
                .iter()
                .map(|e| AllocationUsage {
                    id: e.id.clone(),
                    tokens: e.tokens,
                    priority: e.priority,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Estimate counter: ceil(chars / 4), so "x" * 4n is n tokens.
    fn text(tokens: usize) -> String {
        "x".repeat(tokens * 4)
    }

    fn mem(cap: usize) -> WorkingMemory {
        WorkingMemory::new(cap, TokenCounter::Estimate).unwrap()
    }

    fn ids(m: &WorkingMemory) -> Vec<&str> {
        m.entries().iter().map(|e| e.id.as_str()).collect()
    }

    #[test]
    fn allocates_until_full_and_accounts_tokens() {
        let mut m = mem(10);
        let a = m.allocate(&text(4), 0.5).unwrap();
        assert_eq!(
            (a.allocation_id.as_str(), a.allocated, a.token_count),
            ("alloc_0", true, 4)
        );
        let b = m.allocate(&text(6), 0.5).unwrap();
        assert_eq!(b.allocation_id, "alloc_1");
        assert!(b.evicted.is_empty());
        let u = m.usage();
        assert_eq!((u.used, u.available, u.capacity), (10, 0, 10));
        assert_eq!(u.allocations.len(), 2);
        assert!(m.release("alloc_0"));
        assert!(!m.release("alloc_0"));
        assert_eq!(m.used(), 6);
        assert_eq!(m.get("alloc_1").unwrap().content, text(6));
    }

    #[test]
    fn evicts_lowest_priority_then_oldest() {
        let mut m = mem(10);
        for p in [0.5, 0.2, 0.5, 0.2] {
            m.allocate(&text(2), p).unwrap();
        }
        m.allocate(&text(2), 0.9).unwrap(); // alloc_4, memory full.
        // 5 tokens need 3 evictions: both 0.2s (oldest first), then the
        // oldest 0.5.
        let r = m.allocate(&text(5), 0.5).unwrap();
        assert!(r.allocated);
        assert_eq!(r.evicted, ["alloc_1", "alloc_3", "alloc_0"]);
        assert_eq!(ids(&m), ["alloc_2", "alloc_4", "alloc_5"]);
        assert_eq!(m.used(), 9);
    }

    #[test]
    fn ids_are_not_compared_as_strings() {
        // Memorg would evict alloc_10 before alloc_2 ("alloc_10" < "alloc_2").
        let mut m = mem(11);
        for _ in 0..11 {
            m.allocate(&text(1), 0.5).unwrap();
        }
        assert_eq!(m.entries().last().unwrap().id, "alloc_10");
        let r = m.allocate(&text(1), 0.5).unwrap();
        assert_eq!(r.evicted, ["alloc_0"]);
        let r = m.allocate(&text(1), 0.5).unwrap();
        assert_eq!(r.evicted, ["alloc_1"]);
        assert!(m.get("alloc_10").is_some());
    }

    #[test]
    fn never_evicts_higher_priority_and_refuses_atomically() {
        let mut m = mem(10);
        m.allocate(&text(4), 0.9).unwrap();
        m.allocate(&text(4), 0.1).unwrap();
        // 6 tokens at 0.5: evicting the 0.1 frees 4 → 2 + 6 ≤ 10? used 8 − 4 + 6 = 10. Fits.
        let r = m.allocate(&text(6), 0.5).unwrap();
        assert!(r.allocated);
        assert_eq!(r.evicted, ["alloc_1"]);
        // 3 tokens at 0.3: only higher priorities are held → refused, nothing evicted.
        let before = ids(&m).iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = m.allocate(&text(3), 0.3).unwrap();
        assert!(!r.allocated);
        assert_eq!(r.allocation_id, "");
        assert_eq!(r.token_count, 3);
        assert!(r.evicted.is_empty());
        assert_eq!(ids(&m), before);
        // Refusal spends no id.
        assert_eq!(m.allocate("", 0.0).unwrap().allocation_id, "alloc_3");
    }

    #[test]
    fn oversized_content_is_refused_without_damage() {
        let mut m = mem(8);
        m.allocate(&text(3), 0.1).unwrap();
        let r = m.allocate(&text(9), 1.0).unwrap();
        assert!(!r.allocated);
        assert_eq!(r.token_count, 9);
        assert_eq!(m.used(), 3);
        // Exactly the capacity fits after evicting everything lower.
        let r = m.allocate(&text(8), 1.0).unwrap();
        assert!(r.allocated);
        assert_eq!(m.used(), 8);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(WorkingMemory::new(0, TokenCounter::Estimate).is_err());
        let mut m = mem(4);
        assert!(
            m.allocate("x", f64::NAN)
                .unwrap_err()
                .to_string()
                .contains("priority")
        );
        assert!(m.allocate("x", f64::INFINITY).is_err());
        assert_eq!(m.used(), 0);
    }

    #[test]
    fn priority_order_and_clear() {
        let mut m = mem(100);
        m.allocate("a", 0.1).unwrap();
        m.allocate("b", 0.9).unwrap();
        m.allocate("c", 0.9).unwrap();
        let order: Vec<&str> = m.by_priority().iter().map(|a| a.content.as_str()).collect();
        assert_eq!(order, ["c", "b", "a"]);
        m.clear();
        assert_eq!(m.used(), 0);
        assert_eq!(m.allocate("d", 0.0).unwrap().allocation_id, "alloc_3");
    }

    #[test]
    fn exact_counters_are_used() {
        let mut m = WorkingMemory::new(DEFAULT_CAPACITY, TokenCounter::O200kBase).unwrap();
        let r = m.allocate("hello world", 0.5).unwrap();
        assert_eq!(r.token_count, 2);
        assert_eq!(m.usage().available, DEFAULT_CAPACITY - 2);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Over any sequence of allocations and releases: usage never
        /// exceeds the capacity, `used` is the sum of the entries, a
        /// refusal changes nothing, and an eviction never removes an entry
        /// of higher priority than the newcomer's.
        #[test]
        fn invariants_hold_over_random_operations(
            cap in 1usize..40,
            ops in proptest::collection::vec((0usize..20, 0u8..4, proptest::bool::ANY), 1..60),
        ) {
            let mut m = mem(cap);
            for (tokens, prio, release) in ops {
                if release && !m.entries().is_empty() {
                    let id = m.entries()[tokens % m.entries().len()].id.clone();
                    proptest::prop_assert!(m.release(&id));
                    continue;
                }
                let before: Vec<Allocation> = m.entries().to_vec();
                let priority = f64::from(prio) / 4.0;
                let r = m.allocate(&text(tokens), priority).unwrap();
                if r.allocated {
                    for gone in &r.evicted {
                        let old = before.iter().find(|a| &a.id == gone).unwrap();
                        proptest::prop_assert!(old.priority <= priority);
                    }
                } else {
                    proptest::prop_assert_eq!(m.entries(), &before[..]);
                }
                proptest::prop_assert!(m.used() <= cap);
                let sum: usize = m.entries().iter().map(|a| a.tokens).sum();
                proptest::prop_assert_eq!(m.used(), sum);
                proptest::prop_assert_eq!(m.usage().available, cap - sum);
            }
        }
    }
}
