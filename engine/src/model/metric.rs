//! How vectors are compared ([`Metric`]), how several are summed into one
//! ([`VectorSum`]), and the largest dimension a space or an embedding model
//! may have. Shared by the embedding providers, the store and the vector
//! index.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Largest accepted dimension.
pub const MAX_DIMENSION: u32 = 8192;

/// How vectors in a space are compared. Similarities are higher-is-better:
/// cosine similarity, the dot product, or the negated squared L2 distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Cosine similarity in [-1, 1]; zero vectors are refused.
    Cosine,
    /// Inner product.
    Dot,
    /// Negated squared Euclidean distance (0 for identical vectors).
    L2,
}

impl Metric {
    pub(crate) fn code(self) -> u8 {
        match self {
            Metric::Cosine => 0,
            Metric::Dot => 1,
            Metric::L2 => 2,
        }
    }
    pub(crate) fn from_code(c: u8) -> Option<Metric> {
        match c {
            0 => Some(Metric::Cosine),
            1 => Some(Metric::Dot),
            2 => Some(Metric::L2),
            _ => None,
        }
    }
}

impl std::str::FromStr for Metric {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cosine" => Ok(Metric::Cosine),
            "dot" => Ok(Metric::Dot),
            "l2" => Ok(Metric::L2),
            other => Err(Error::invalid(
                "metric",
                format!("unknown metric {other:?}: expected cosine, dot or l2"),
            )),
        }
    }
}

/// A sum of vectors accumulated in `f64`, read back at unit length: a
/// parent's vector under the vector-sum rule (SPEC.md §13) and a long
/// message's mean of its windows (§10.1) are both this.
pub(crate) struct VectorSum(Vec<f64>);

impl VectorSum {
    /// An empty sum of `dim` components.
    pub(crate) fn new(dim: usize) -> VectorSum {
        VectorSum(vec![0.0; dim])
    }

    /// Adds `v` (its first `dim` components).
    pub(crate) fn add(&mut self, v: &[f32]) {
        for (s, x) in self.0.iter_mut().zip(v) {
            *s += f64::from(*x);
        }
    }

    /// The sum scaled to unit length; `None` when its norm is zero (nothing
    /// added, or the vectors cancel out) or not a normal number.
    pub(crate) fn normalized(&self) -> Option<Vec<f32>> {
        let norm = self.0.iter().map(|x| x * x).sum::<f64>().sqrt();
        norm.is_normal()
            .then(|| self.0.iter().map(|x| (x / norm) as f32).collect())
    }
}
