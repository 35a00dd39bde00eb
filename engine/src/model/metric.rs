//! How vectors are compared ([`Metric`]) and the largest dimension a space
//! or an embedding model may have. Shared by the embedding providers and the
//! vector index.

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
