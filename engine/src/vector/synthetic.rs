//! Deterministic synthetic data and exact answers, shared by the tests
//! (`tests.rs`) and the recall/QPS harness (`bench.rs`): clustered vectors
//! shaped like sentence embeddings, a seeded generator, an f64 brute force
//! written independently of the kernels, recall, and allowed sets for
//! filtered search.

use super::{Hit, Metric, NodeSet};

/// Deterministic synthetic data shaped like sentence embeddings: clusters
/// with a low intrinsic dimension. Each cluster has a unit center and a
/// private basis of `rank` unit directions; a point is
/// `center + Σ gⱼ·basisⱼ (gⱼ ~ N(0, spread²)) + isotropic noise of norm ≈ noise`.
pub(super) struct Clustered {
    pub(super) dim: usize,
    centers: Vec<f32>,
    bases: Vec<f32>,
    rank: usize,
    spread: f32,
    noise: f32,
    rng: Rng,
}

pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed ^ 0x2545_F491_4F6C_DD1D)
    }
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(super) fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    pub(super) fn gauss(&mut self) -> f32 {
        let (u, v) = (self.unit(), self.unit());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

fn unit_vec(rng: &mut Rng, dim: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..dim).map(|_| rng.gauss()).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

impl Clustered {
    pub(super) fn new(dim: usize, clusters: usize, seed: u64) -> Self {
        Self::with_shape(dim, clusters, 16, 0.25, 0.1, seed)
    }

    /// `rank` directions per cluster with coefficients of deviation
    /// `spread`, plus isotropic noise of norm about `noise`: a higher rank
    /// or more noise makes nearest neighbors harder to find.
    pub(super) fn with_shape(
        dim: usize,
        clusters: usize,
        rank: usize,
        spread: f32,
        noise: f32,
        seed: u64,
    ) -> Self {
        let mut rng = Rng::new(seed);
        let centers = (0..clusters)
            .flat_map(|_| unit_vec(&mut rng, dim))
            .collect();
        let bases = (0..clusters * rank)
            .flat_map(|_| unit_vec(&mut rng, dim))
            .collect();
        Clustered {
            dim,
            centers,
            bases,
            rank,
            spread,
            noise,
            rng,
        }
    }

    pub(super) fn point(&mut self) -> Vec<f32> {
        let (dim, rank) = (self.dim, self.rank);
        let c = self.rng.below(self.centers.len() / dim);
        let mut p = self.centers[c * dim..(c + 1) * dim].to_vec();
        for j in 0..rank {
            let g = self.rng.gauss() * self.spread;
            let b = &self.bases[(c * rank + j) * dim..(c * rank + j + 1) * dim];
            for (x, y) in p.iter_mut().zip(b) {
                *x += g * y;
            }
        }
        let s = self.noise / (dim as f32).sqrt();
        for x in &mut p {
            *x += self.rng.gauss() * s;
        }
        p
    }

    pub(super) fn points(&mut self, n: usize) -> Vec<f32> {
        (0..n).flat_map(|_| self.point()).collect()
    }
}

/// Exact top-k node ids by f64 brute force.
pub(super) fn brute_force(
    metric: Metric,
    dim: usize,
    data: &[f32],
    q: &[f32],
    k: usize,
    allow: impl Fn(u32) -> bool,
) -> Vec<u32> {
    let qn = match metric {
        Metric::Cosine => {
            let n = q.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
            q.iter().map(|&x| f64::from(x) / n).collect::<Vec<_>>()
        }
        _ => q.iter().map(|&x| f64::from(x)).collect(),
    };
    let mut scored: Vec<(f64, u32)> = data
        .chunks_exact(dim)
        .enumerate()
        .filter(|(i, _)| allow(*i as u32))
        .map(|(i, v)| {
            let v: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
            let d = match metric {
                Metric::L2 => v.iter().zip(&qn).map(|(a, b)| (a - b).powi(2)).sum(),
                Metric::Dot => -v.iter().zip(&qn).map(|(a, b)| a * b).sum::<f64>(),
                _ => {
                    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                    1.0 - v.iter().zip(&qn).map(|(a, b)| a * b).sum::<f64>() / n
                }
            };
            (d, i as u32)
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    scored.into_iter().take(k).map(|(_, i)| i).collect()
}

pub(super) fn recall(found: &[Hit], truth: &[u32]) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    let hits = found.iter().filter(|h| truth.contains(&h.node)).count();
    hits as f64 / truth.len() as f64
}

/// A pseudo-random allowed set of about `share` of the nodes.
pub(super) fn allowed_set(n: usize, share: f64, seed: u64) -> NodeSet {
    let mut rng = Rng::new(seed);
    NodeSet::new(n, (0..n as u32).filter(|_| rng.unit() < share))
}
