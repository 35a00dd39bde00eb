//! Conversation postings of one space's index: for each conversation, the
//! node ids its messages hold in the generation and in the delta (SPEC.md
//! §9.4). Derived and in memory only, built on the first search that needs
//! them: a conversation-scope filter (folder, label, status, importance,
//! pinned, one conversation, a namespace) resolves to conversations, and
//! their postings are the search's allowed node set, with no scan of the
//! messages and no record-id lookups per query.
//!
//! Correct without invalidation because a message never changes
//! conversation: the generation is immutable (its postings are built once
//! for the index's lifetime; compaction installs a new index), and delta
//! nodes are only appended (the postings cover the first `delta_covered`
//! nodes and catch up on the next search). Deleted and overwritten records
//! stay in the lists; the search drops them with the tombstones and the
//! delta's live bits, as it does for unfiltered searches.

use crate::util::idhash::IdMap;

/// Per-conversation node lists of a generation and its delta.
#[derive(Debug, Default)]
pub(crate) struct ConvPostings {
    /// Conversation → generation nodes; `None` until first built.
    generation: Option<IdMap<Vec<u32>>>,
    /// Conversation → delta nodes, for delta nodes `0..delta_covered`.
    delta: IdMap<Vec<u32>>,
    delta_covered: usize,
}

impl ConvPostings {
    /// Whether the generation's postings still have to be built.
    pub(crate) fn needs_generation(&self) -> bool {
        self.generation.is_none()
    }

    /// Builds the generation's postings from every (message, conversation)
    /// pair of the store and the generation's `node_count` nodes with their
    /// `record_id`s. Each list comes out in node order.
    pub(crate) fn build_generation(
        &mut self,
        pairs: Vec<(u128, u128)>,
        node_count: usize,
        record_id: impl Fn(u32) -> Option<u128>,
    ) {
        let conversation: IdMap<u128> = pairs.into_iter().collect();
        let mut map: IdMap<Vec<u32>> = IdMap::default();
        for node in 0..node_count as u32 {
            if let Some(c) = record_id(node).and_then(|r| conversation.get(&r)) {
                map.entry(*c).or_default().push(node);
            }
        }
        self.generation = Some(map);
    }

    /// Extends the delta's postings to its first `delta_len` nodes;
    /// `conversation_of(node)` names a node's conversation (`None`: not a
    /// message, or gone).
    pub(crate) fn catch_up_delta<E>(
        &mut self,
        delta_len: usize,
        mut conversation_of: impl FnMut(u32) -> Result<Option<u128>, E>,
    ) -> Result<(), E> {
        while self.delta_covered < delta_len {
            let node = self.delta_covered as u32;
            if let Some(c) = conversation_of(node)? {
                self.delta.entry(c).or_default().push(node);
            }
            self.delta_covered += 1;
        }
        Ok(())
    }

    /// The generation nodes of `conversations` (empty before
    /// [`ConvPostings::build_generation`]).
    pub(crate) fn generation_nodes<'a>(
        &'a self,
        conversations: &'a [u128],
    ) -> impl Iterator<Item = u32> + 'a {
        conversations.iter().flat_map(move |c| {
            self.generation
                .as_ref()
                .and_then(|g| g.get(c))
                .into_iter()
                .flatten()
                .copied()
        })
    }

    /// The delta nodes of `conversations` among those covered.
    pub(crate) fn delta_nodes<'a>(
        &'a self,
        conversations: &'a [u128],
    ) -> impl Iterator<Item = u32> + 'a {
        conversations
            .iter()
            .flat_map(move |c| self.delta.get(c).into_iter().flatten().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_group_nodes_by_conversation_and_catch_up() {
        let mut p = ConvPostings::default();
        assert!(p.needs_generation());
        // Messages 1..=4 in conversations 10 and 20; the generation's nodes
        // 0..=3 hold records 7 (not a message), 2, 1 and 3; message 4 is not
        // in it (written after it).
        let records = [7u128, 2, 1, 3];
        p.build_generation(vec![(3, 20), (1, 10), (2, 10), (4, 20)], 4, |n| {
            records.get(n as usize).copied()
        });
        assert!(!p.needs_generation());
        let mut g: Vec<u32> = p.generation_nodes(&[10]).collect();
        g.sort_unstable();
        assert_eq!(g, vec![1, 2]);
        assert_eq!(p.generation_nodes(&[20]).collect::<Vec<_>>(), vec![3]);
        assert_eq!(p.generation_nodes(&[30]).count(), 0);

        // Delta nodes 0, 1, 2: conversation 20, not a message, 10.
        let convs = [Some(20u128), None, Some(10)];
        let mut asked = Vec::new();
        p.catch_up_delta::<()>(2, |n| {
            asked.push(n);
            Ok(convs[n as usize])
        })
        .unwrap();
        assert_eq!(p.delta_nodes(&[20]).collect::<Vec<_>>(), vec![0]);
        assert_eq!(p.delta_nodes(&[10]).count(), 0);
        // Catching up asks only for the nodes not yet covered.
        p.catch_up_delta::<()>(3, |n| {
            asked.push(n);
            Ok(convs[n as usize])
        })
        .unwrap();
        assert_eq!(asked, vec![0, 1, 2]);
        assert_eq!(p.delta_nodes(&[10, 20]).collect::<Vec<_>>(), vec![2, 0]);
        // An error stops the catch-up where it happened.
        let mut q = ConvPostings::default();
        assert_eq!(
            q.catch_up_delta(3, |n| if n == 1 { Err(n) } else { Ok(None) }),
            Err(1)
        );
        assert_eq!(q.delta_covered, 1);
    }
}
