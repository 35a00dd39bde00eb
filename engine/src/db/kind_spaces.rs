//! A record kind's vector spaces in one namespace for one model (SPEC.md
//! §13): the main space (each record's vector: its text, or the first
//! passage of a text longer than the model reads), the passage spaces
//! (passage `k` of such a text in space `k`, k = 2, 3, ...; §10.5), and,
//! for a kind with a vector-sum rule ([`RecordKind::sums_into`]), the space
//! of its parents' summed vectors. Every write path of `records.rs` and the
//! embedding pipeline resolve these before their transaction (a space is
//! created in a transaction of its own) and keep them consistent inside it.
//!
//! [`RecordKind::sums_into`]: crate::db::records::RecordKind::sums_into

use crate::store::WriteTxn;
use serde_json::Value;

use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::store::OpBatch;
use crate::store::records as rows;
use crate::vector::spaces::{RECORD_SPACE_PREFIX, model_of};
use crate::vector::spaces::{SpaceSpec, VectorSpace};

/// The key of a passage space's description holding its passage number.
const WINDOW_KEY: &str = "window";
/// The key of a main space's description naming the kind it sums into.
const SUMS_KEY: &str = "sums_into";

/// The parent kind a record space's vectors sum into (its description's
/// `sums_into`, set from `RecordKind::sums_into` when it was created).
pub(crate) fn sums_into(space: &VectorSpace) -> Option<u16> {
    space
        .model
        .get(SUMS_KEY)
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
}

/// Records `code` as the kind `described`'s vectors sum into.
pub(crate) fn describe_sum(described: &mut Value, code: u16) {
    described[SUMS_KEY] = Value::from(code);
}

/// Whether `space` holds the later passages of another space's records.
pub(crate) fn is_passage_space(space: &VectorSpace) -> bool {
    space.model.get(WINDOW_KEY).is_some()
}

fn passage_name(main: &str, k: usize) -> String {
    format!("{main}/p{k}")
}

/// One kind's spaces, resolved before a write.
#[derive(Debug, Clone)]
pub(crate) struct KindSpaces {
    /// Each record's own vector.
    pub main: VectorSpace,
    /// Passage spaces 2, 3, ... in order.
    pub passages: Vec<VectorSpace>,
    /// Where the parents' summed vectors go, with a vector-sum rule.
    pub sum: Option<VectorSpace>,
}

impl KindSpaces {
    /// The ids of every space holding this kind's vectors.
    fn all_ids(&self) -> Vec<u32> {
        std::iter::once(self.main.id)
            .chain(self.passages.iter().map(|p| p.id))
            .collect()
    }

    /// Writes record `id`'s later passage vectors (`extra[i]` is passage
    /// `i + 2`) and removes the ones it no longer has, inside a write.
    pub(crate) fn put_passages(
        &self,
        txn: &WriteTxn,
        ops: &mut OpBatch,
        id: u128,
        extra: &[Vec<f32>],
    ) -> Result<()> {
        if extra.len() > self.passages.len() {
            return Err(Error::Embedding(format!(
                "{} passages for {} passage spaces",
                extra.len() + 1,
                self.passages.len() + 1
            )));
        }
        for (i, space) in self.passages.iter().enumerate() {
            match extra.get(i) {
                Some(v) => crate::store::vectors::put_vectors(txn, space.id, [(id, v)], ops)?,
                None => {
                    crate::store::vectors::delete_vector(txn, space.id, id, ops)?;
                }
            }
        }
        Ok(())
    }

    /// Recomputes `parents`' summed vectors from their children's vectors
    /// in every space of this kind, inside a write; nothing without a
    /// vector-sum rule. A parent that is gone is skipped.
    pub(crate) fn refresh_sums(
        &self,
        txn: &WriteTxn,
        ops: &mut OpBatch,
        parents: impl IntoIterator<Item = u128>,
    ) -> Result<()> {
        let Some(sum) = &self.sum else {
            return Ok(());
        };
        let children = self.all_ids();
        let parents: std::collections::BTreeSet<u128> = parents.into_iter().collect();
        for p in parents {
            if rows::get_for_write(txn, p)?.is_some() {
                crate::store::vectors::refresh_sum(
                    txn,
                    &children,
                    sum.id,
                    self.main.dimension,
                    p,
                    ops,
                )?;
            }
        }
        Ok(())
    }
}

impl Memdb {
    /// `main`'s spaces, with passage spaces created up to passage
    /// `passages_upto` (existing ones beyond it are listed too) and the
    /// sum space created when the rule asks for one and it is missing (a
    /// store from before the rule).
    pub(crate) fn kind_spaces(
        &self,
        main: &VectorSpace,
        passages_upto: usize,
    ) -> Result<KindSpaces> {
        Ok(KindSpaces {
            main: main.clone(),
            passages: self.passage_spaces(main, passages_upto)?,
            sum: self.sum_space_of(main, true)?,
        })
    }

    /// `main`'s passage spaces 2, 3, ... in order, created up to passage
    /// `passages_upto` (0: none created; a read).
    pub(crate) fn passage_spaces(
        &self,
        main: &VectorSpace,
        passages_upto: usize,
    ) -> Result<Vec<VectorSpace>> {
        let mut passages = Vec::new();
        for k in 2.. {
            let name = passage_name(&main.name, k);
            match self.vector_space(&name) {
                Ok(s) => passages.push(s),
                Err(Error::NotFound { .. }) if k <= passages_upto => {
                    let mut spec = SpaceSpec::new(name, main.dimension, main.metric);
                    let mut described = main.model.clone();
                    if let Some(o) = described.as_object_mut() {
                        o.remove(SUMS_KEY);
                    }
                    described[WINDOW_KEY] = Value::from(k);
                    spec.model = Some(described);
                    passages.push(self.create_vector_space(&spec)?);
                }
                Err(Error::NotFound { .. }) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(passages)
    }

    /// The space of the parents of `child`'s records when `child` carries
    /// a vector-sum rule, created when missing if `create`.
    pub(crate) fn sum_space_of(
        &self,
        child: &VectorSpace,
        create: bool,
    ) -> Result<Option<VectorSpace>> {
        let Some(code) = sums_into(child) else {
            return Ok(None);
        };
        let Some(ns) = child
            .name
            .strip_prefix(RECORD_SPACE_PREFIX)
            .and_then(|rest| rest.split('/').next())
            .and_then(|n| n.parse::<u32>().ok())
        else {
            return Ok(None);
        };
        self.record_space_for(ns, code, &model_of(child)?, create, None)
    }
}
