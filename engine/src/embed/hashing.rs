//! The hashing embedder: deterministic lexical vectors with no model.
//!
//! Each text is lowercased and split into words (runs of alphanumeric
//! characters); every word (weight 1) and every pair of adjacent words
//! (weight 0.5) is hashed with 64-bit FNV-1a into one of `dimension` buckets,
//! added with a sign taken from another bit of the hash (signed feature
//! hashing, so collisions cancel on average instead of piling up), and the
//! vector is L2-normalised. Texts that share words are close; texts that mean
//! the same in other words are not: it is lexical, not semantic.
//!
//! FNV-1a is written out here rather than taken from `std`'s hasher, whose
//! algorithm may change between Rust releases: the vectors must stay the same
//! across builds, since they are stored.

use crate::embed::{Embedder, Embeddings, ModelIdentity, l2_normalize};
use crate::error::{Error, Result};
use crate::model::metric::{MAX_DIMENSION, Metric};

/// Deterministic lexical embedder (feature hashing of word unigrams and
/// bigrams). Identity: provider `hashing`, name `hashing-v1`, cosine.
///
/// For tests, and for users who want no model. It captures shared words, not
/// meaning ("reset my password" is far from "forgot my login credentials"),
/// and memdb never substitutes it for a configured model that fails to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hashing {
    dimension: u32,
}

impl Hashing {
    /// Default dimension (the same as all-MiniLM-L6-v2).
    pub const DEFAULT_DIMENSION: u32 = 384;
    /// Identity provider name.
    pub const PROVIDER: &'static str = "hashing";
    /// Identity model name; a change to the algorithm gets a new name.
    pub const NAME: &'static str = "hashing-v1";

    /// A hashing embedder of `dimension` buckets (1..=[`MAX_DIMENSION`]).
    pub fn new(dimension: u32) -> Result<Self> {
        if dimension == 0 || dimension > MAX_DIMENSION {
            return Err(Error::invalid(
                "dimension",
                format!("must be between 1 and {MAX_DIMENSION}, got {dimension}"),
            ));
        }
        Ok(Hashing { dimension })
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let dim = self.dimension as usize;
        let mut v = vec![0.0f32; dim];
        let lower = text.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let mut add = |parts: &[&str], weight: f32| {
            let h = fnv1a(parts);
            // Bucket from the low bits, sign from the top bit.
            let bucket = (h % dim as u64) as usize;
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            if let Some(slot) = v.get_mut(bucket) {
                *slot += sign * weight;
            }
        };
        if words.is_empty() {
            // A fixed unit vector, so that cosine spaces (which refuse zero
            // vectors) accept texts with no words.
            add(&["\u{0}empty"], 1.0);
        }
        for w in &words {
            add(&[w], 1.0);
        }
        for pair in words.windows(2) {
            add(pair, 0.5);
        }
        l2_normalize(&mut v);
        v
    }
}

impl Default for Hashing {
    fn default() -> Self {
        Hashing {
            dimension: Self::DEFAULT_DIMENSION,
        }
    }
}

impl Embedder for Hashing {
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            provider: Self::PROVIDER.into(),
            name: Self::NAME.into(),
            dimension: self.dimension,
            metric: Metric::Cosine,
        }
    }

    fn embed_report(&self, texts: &[&str]) -> Result<Embeddings> {
        Ok(Embeddings {
            vectors: texts.iter().map(|t| self.embed_one(t)).collect(),
            truncated: vec![false; texts.len()],
        })
    }
}

/// 64-bit FNV-1a over the parts joined by a space.
fn fnv1a(parts: &[&str]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            h ^= u64::from(b' ');
            h = h.wrapping_mul(PRIME);
        }
        for b in part.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    // FNV's low bits mix poorly for short keys; fold the high half in.
    h ^ (h >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn deterministic_normalized_and_lexical() {
        let e = Hashing::default();
        let texts = [
            "How do I reset my password?",
            "how do i RESET my password",
            "Password reset instructions",
            "The weather in Paris is sunny today",
            "",
        ];
        let a = e.embed(&texts).unwrap();
        let b = e.embed(&texts).unwrap();
        assert_eq!(a, b);
        for v in &a {
            assert_eq!(v.len(), 384);
            let n = cos(v, v).sqrt();
            assert!((n - 1.0).abs() < 1e-5, "norm {n}");
        }
        // Case and punctuation do not matter.
        assert!(cos(&a[0], &a[1]) > 0.999);
        // Shared words beat unrelated text.
        assert!(cos(&a[0], &a[2]) > cos(&a[0], &a[3]) + 0.1);
        assert!(cos(&a[0], &a[3]).abs() < 0.3);
    }

    #[test]
    fn fixed_vectors_do_not_drift() {
        // Stored vectors must stay valid across builds: pin one bucket.
        let v = Hashing::new(16).unwrap().embed(&["memdb"]).unwrap();
        let hot: Vec<usize> = (0..16).filter(|&i| v[0][i] != 0.0).collect();
        assert_eq!(hot.len(), 1);
        let h = fnv1a(&["memdb"]);
        assert_eq!(hot[0], (h % 16) as usize);
    }

    #[test]
    fn bad_dimension_is_refused() {
        assert!(Hashing::new(0).is_err());
        assert!(Hashing::new(MAX_DIMENSION + 1).is_err());
        assert_eq!(Hashing::new(8).unwrap().identity().dimension, 8);
    }
}
