//! Vector spaces as the engine speaks of them (SPEC.md §"Vector spaces"):
//! the public types (`SpaceSpec`, `VectorSpace`, `VectorFilter`,
//! `VectorHit`, `VerifyOutcome`), the stored record to public space
//! conversion, the checks a vector must pass, and exact similarity.
//!
//! redb is the source of truth for vectors as for everything else: the
//! spaces, vector rows and tombstones are `store/vectors.rs`'s, and a vector
//! write is one transaction that stores the vector bytes and appends a
//! `PutVector` op to the oplog. The HNSW generations and the in-memory delta
//! are derived from these rows.

use memdb_format::SpaceRecord;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::metric::Metric;
use crate::model::types::Filter;
/// The conversation-delete cascade's vector part (rows, tombstones, ops and
/// queue entries of the removed messages in every space) is the store's.
pub(crate) use crate::store::vectors::delete_record_vectors;

/// What defines a vector space: its name (conventionally the model name), its
/// dimension and metric, and HNSW build parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpaceSpec {
    /// Unique name, e.g. `all-MiniLM-L6-v2`.
    pub name: String,
    /// Vector dimension (1..=8192).
    pub dimension: u32,
    /// Comparison metric.
    pub metric: Metric,
    /// HNSW M (default 16).
    #[serde(default)]
    pub m: Option<u16>,
    /// HNSW ef_construction (default 200).
    #[serde(default)]
    pub ef_construction: Option<u16>,
    /// Free description of the model (provider, version), stored verbatim.
    #[serde(default)]
    pub model: Option<serde_json::Value>,
}

impl SpaceSpec {
    /// A space with default build parameters.
    pub fn new(name: impl Into<String>, dimension: u32, metric: Metric) -> Self {
        SpaceSpec {
            name: name.into(),
            dimension,
            metric,
            m: None,
            ef_construction: None,
            model: None,
        }
    }
}

/// A stored vector space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorSpace {
    /// Name.
    pub name: String,
    /// Internal id.
    pub id: u32,
    /// Dimension.
    pub dimension: u32,
    /// Metric.
    pub metric: Metric,
    /// HNSW M.
    pub m: u16,
    /// HNSW ef_construction.
    pub ef_construction: u16,
    /// Model description.
    pub model: serde_json::Value,
}

/// Which records a vector search may return. All given conditions must hold.
/// Scope conditions select **messages** (as in text search; `since`/`until`
/// bound the message timestamp); `records` is an explicit allow-list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VectorFilter {
    /// Conversation scope (folder, label, status, importance, time).
    #[serde(default)]
    pub scope: Filter,
    /// Only messages of this conversation.
    #[serde(default)]
    pub conversation_id: Option<Uuid>,
    /// Only messages with this role.
    #[serde(default)]
    pub role: Option<String>,
    /// Only these record ids.
    #[serde(default)]
    pub records: Option<Vec<Uuid>>,
}

impl VectorFilter {
    pub(crate) fn is_empty(&self) -> bool {
        self.scope == Filter::default()
            && self.conversation_id.is_none()
            && self.role.is_none()
            && self.records.is_none()
    }
}

/// One vector-search hit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VectorHit {
    /// The record (a message id for message embeddings).
    pub record: Uuid,
    /// Similarity, higher is better (see [`Metric`]).
    pub similarity: f32,
}

pub(crate) fn space_from(name: &str, r: &SpaceRecord) -> Result<VectorSpace> {
    Ok(VectorSpace {
        name: name.to_string(),
        id: r.id,
        dimension: r.dimension,
        metric: Metric::from_code(r.metric).ok_or_else(|| Error::Corrupted {
            what: format!("vector space {name}"),
            reason: format!("unknown metric code {}", r.metric),
        })?,
        m: r.m,
        ef_construction: r.ef_construction,
        model: serde_json::from_str(&r.model_json).unwrap_or(serde_json::Value::Null),
    })
}

pub(crate) fn unknown_space(name: &str) -> Error {
    Error::NotFound {
        what: "vector space",
        id: name.to_string(),
    }
}

/// Checks a vector against a space: dimension, finiteness, and non-zero
/// norm under cosine.
pub(crate) fn check_vector(field: &str, space: &VectorSpace, v: &[f32]) -> Result<()> {
    if v.len() != space.dimension as usize {
        return Err(Error::invalid(
            field,
            format!(
                "vector has {} dimensions; space {:?} has {}",
                v.len(),
                space.name,
                space.dimension
            ),
        ));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(Error::invalid(
            field,
            format!("component {i} is {} (must be finite)", v[i]),
        ));
    }
    if space.metric == Metric::Cosine && v.iter().all(|x| *x == 0.0) {
        return Err(Error::invalid(
            field,
            "zero vector has no direction under cosine",
        ));
    }
    Ok(())
}

/// Similarity of two vectors under `metric` (exact path; the HNSW kernels
/// compute the same quantities).
pub(crate) fn similarity(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    match metric {
        Metric::Dot => a.iter().zip(b).map(|(x, y)| x * y).sum(),
        Metric::L2 => -a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>(),
        Metric::Cosine => {
            let (mut d, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
            for (x, y) in a.iter().zip(b) {
                d += x * y;
                na += x * x;
                nb += y * y;
            }
            if na == 0.0 || nb == 0.0 {
                0.0
            } else {
                d / (na.sqrt() * nb.sqrt())
            }
        }
    }
}

/// What [`crate::Memdb::verify_vectors`] found for one space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyOutcome {
    /// Space name.
    pub space: String,
    /// The damage found, if any.
    pub error: Option<String>,
    /// Whether the generation was rebuilt from the store.
    pub rebuilt: bool,
}

/// The name prefix of every record vector space
/// (`records/<namespace id>/<kind code>/<provider>/<model>`).
pub(crate) const RECORD_SPACE_PREFIX: &str = "records/";

/// The embedding model a space's vectors came from (its `model` identity).
pub(crate) fn model_of(space: &VectorSpace) -> Result<crate::embed::ModelIdentity> {
    serde_json::from_value(space.model.clone()).map_err(|e| Error::Corrupted {
        what: format!("vector space {:?}", space.name),
        reason: format!("model identity: {e}"),
    })
}

/// Whether `space` holds generic records (named `records/<ns>/<kind>/...`
/// by `Memdb::record_space`) rather than messages.
pub(crate) fn is_record_space(space: &VectorSpace) -> bool {
    space.name.starts_with(RECORD_SPACE_PREFIX)
}
