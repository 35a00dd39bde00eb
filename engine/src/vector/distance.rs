//! Distance kernels: dot product and squared L2, in AVX-512, AVX2+FMA and
//! portable versions, chosen once at run time.
//!
//! The graph code works with *distances* (lower is closer):
//! cosine `1 − a·b` over unit vectors, dot `−a·b`, L2 `‖a − b‖²`.
//! [`similarity`] turns a distance into the score callers see (higher is
//! better): cosine similarity `a·b`, the inner product `a·b`, and for L2 the
//! negated squared distance `−‖a − b‖²` (monotone, exact, no extra math; it
//! is ≤ 0 and 0 means identical).
//!
//! This is the only module of the vector index with `unsafe`: calling a
//! `#[target_feature]` function and loading through raw pointers inside one.
//! Every kernel is checked against the scalar one in the tests below.

#![allow(unsafe_code)]

use std::sync::OnceLock;

use memdb_format::Metric;

/// A distance function: lower is closer. Slices of unequal length are
/// compared over the shorter length (never a panic).
pub(crate) type DistFn = fn(&[f32], &[f32]) -> f32;

/// Instruction set the kernels use on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

/// The best instruction set available, detected once. `MEMDB_SIMD=scalar`
/// or `MEMDB_SIMD=avx2` caps it (benchmarks, debugging).
pub(crate) fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        let cap = std::env::var("MEMDB_SIMD").unwrap_or_default();
        detect(&cap)
    })
}

#[cfg(target_arch = "x86_64")]
fn detect(cap: &str) -> Isa {
    if cap == "scalar" {
        return Isa::Scalar;
    }
    if cap != "avx2" && std::arch::is_x86_feature_detected!("avx512f") {
        return Isa::Avx512;
    }
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        return Isa::Avx2Fma;
    }
    Isa::Scalar
}

#[cfg(not(target_arch = "x86_64"))]
fn detect(_cap: &str) -> Isa {
    Isa::Scalar
}

/// The distance function for `metric` on this machine.
pub(crate) fn distance_fn(metric: Metric) -> DistFn {
    distance_fn_for(metric, isa())
}

pub(crate) fn distance_fn_for(metric: Metric, isa: Isa) -> DistFn {
    match (isa, metric) {
        (Isa::Scalar, Metric::L2) => l2sq_scalar,
        (Isa::Scalar, Metric::Dot) => |a, b| -dot_scalar(a, b),
        (Isa::Scalar, _) => |a, b| 1.0 - dot_scalar(a, b),
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2Fma, Metric::L2) => x86::l2sq_avx2,
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2Fma, Metric::Dot) => |a, b| -x86::dot_avx2(a, b),
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2Fma, _) => |a, b| 1.0 - x86::dot_avx2(a, b),
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx512, Metric::L2) => x86::l2sq_avx512,
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx512, Metric::Dot) => |a, b| -x86::dot_avx512(a, b),
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx512, _) => |a, b| 1.0 - x86::dot_avx512(a, b),
    }
}

/// The score callers see for a distance (higher is better): cosine
/// similarity, inner product, or `−‖a − b‖²`.
pub(crate) fn similarity(metric: Metric, distance: f32) -> f32 {
    match metric {
        Metric::L2 | Metric::Dot => -distance,
        _ => 1.0 - distance,
    }
}

/// Portable dot product; eight independent accumulators let the compiler
/// vectorize it with the baseline instruction set.
pub(crate) fn dot_scalar(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ac.zip(bc) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Portable squared Euclidean distance.
pub(crate) fn l2sq_scalar(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| (x - y) * (x - y))
        .sum();
    for (x, y) in ac.zip(bc) {
        for i in 0..8 {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Hints the CPU to start loading the first `lines` cache lines of `v`
/// (at most its length). A no-op where there is no prefetch instruction.
#[inline(always)]
pub(crate) fn prefetch_lines<T>(v: &[T], lines: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = v.as_ptr().cast::<i8>();
        let bytes = std::mem::size_of_val(v);
        let mut off = 0;
        while off < bytes && off < lines * 64 {
            // SAFETY: prefetch never faults and never dereferences in the
            // language's sense; the address is inside `v`. SSE is part of
            // the x86_64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, lines);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    // The entry points below are safe `fn`s so that they can be stored as a
    // `DistFn`. SAFETY (all four): `distance_fn_for` hands them out only for
    // an `Isa` that `detect` (or a test that checked the CPU) found
    // available, so the target features the inner functions enable are
    // present on the running CPU.

    pub(super) fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: see above.
        unsafe { dot_avx512_impl(a, b) }
    }
    pub(super) fn l2sq_avx512(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: see above.
        unsafe { l2sq_avx512_impl(a, b) }
    }
    pub(super) fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: see above.
        unsafe { dot_avx2_impl(a, b) }
    }
    pub(super) fn l2sq_avx2(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: see above.
        unsafe { l2sq_avx2_impl(a, b) }
    }

    // In the kernels, every `_loadu` reads 16 (or 8) floats at `i` with
    // `i + 16 <= n` (or `i + 8 <= n`) checked by the loop bounds, and
    // `n = min(a.len(), b.len())`, so reads stay inside both slices; the
    // masked tail load reads only the `n - i` lanes its mask enables.

    #[target_feature(enable = "avx512f")]
    fn dot_avx512_impl(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm512_setzero_ps(); 4];
        let mut i = 0;
        while i + 64 <= n {
            for (j, acc) in acc.iter_mut().enumerate() {
                // SAFETY: i + 16 * j + 16 <= n (see above).
                let (x, y) = unsafe {
                    (
                        _mm512_loadu_ps(pa.add(i + 16 * j)),
                        _mm512_loadu_ps(pb.add(i + 16 * j)),
                    )
                };
                *acc = _mm512_fmadd_ps(x, y, *acc);
            }
            i += 64;
        }
        while i + 16 <= n {
            // SAFETY: i + 16 <= n.
            let (x, y) = unsafe { (_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i))) };
            acc[0] = _mm512_fmadd_ps(x, y, acc[0]);
            i += 16;
        }
        if i < n {
            let mask: __mmask16 = ((1u32 << (n - i)) - 1) as u16;
            // SAFETY: the mask enables lanes 0..n-i only.
            let (x, y) = unsafe {
                (
                    _mm512_maskz_loadu_ps(mask, pa.add(i)),
                    _mm512_maskz_loadu_ps(mask, pb.add(i)),
                )
            };
            acc[1] = _mm512_fmadd_ps(x, y, acc[1]);
        }
        let s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
        _mm512_reduce_add_ps(s)
    }

    #[target_feature(enable = "avx512f")]
    fn l2sq_avx512_impl(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm512_setzero_ps(); 4];
        let mut i = 0;
        while i + 64 <= n {
            for (j, acc) in acc.iter_mut().enumerate() {
                // SAFETY: i + 16 * j + 16 <= n.
                let (x, y) = unsafe {
                    (
                        _mm512_loadu_ps(pa.add(i + 16 * j)),
                        _mm512_loadu_ps(pb.add(i + 16 * j)),
                    )
                };
                let d = _mm512_sub_ps(x, y);
                *acc = _mm512_fmadd_ps(d, d, *acc);
            }
            i += 64;
        }
        while i + 16 <= n {
            // SAFETY: i + 16 <= n.
            let (x, y) = unsafe { (_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i))) };
            let d = _mm512_sub_ps(x, y);
            acc[0] = _mm512_fmadd_ps(d, d, acc[0]);
            i += 16;
        }
        if i < n {
            let mask: __mmask16 = ((1u32 << (n - i)) - 1) as u16;
            // SAFETY: the mask enables lanes 0..n-i only.
            let (x, y) = unsafe {
                (
                    _mm512_maskz_loadu_ps(mask, pa.add(i)),
                    _mm512_maskz_loadu_ps(mask, pb.add(i)),
                )
            };
            let d = _mm512_sub_ps(x, y);
            acc[1] = _mm512_fmadd_ps(d, d, acc[1]);
        }
        let s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
        _mm512_reduce_add_ps(s)
    }

    #[target_feature(enable = "avx2,fma")]
    fn hsum256(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps::<1>(v);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s));
        _mm_cvtss_f32(s)
    }

    #[target_feature(enable = "avx2,fma")]
    fn dot_avx2_impl(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (j, acc) in acc.iter_mut().enumerate() {
                // SAFETY: i + 8 * j + 8 <= n.
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_ps(pa.add(i + 8 * j)),
                        _mm256_loadu_ps(pb.add(i + 8 * j)),
                    )
                };
                *acc = _mm256_fmadd_ps(x, y, *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            // SAFETY: i + 8 <= n.
            let (x, y) = unsafe { (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i))) };
            acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
            i += 8;
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut total = hsum256(s);
        while i < n {
            total += a[i] * b[i];
            i += 1;
        }
        total
    }

    #[target_feature(enable = "avx2,fma")]
    fn l2sq_avx2_impl(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (j, acc) in acc.iter_mut().enumerate() {
                // SAFETY: i + 8 * j + 8 <= n.
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_ps(pa.add(i + 8 * j)),
                        _mm256_loadu_ps(pb.add(i + 8 * j)),
                    )
                };
                let d = _mm256_sub_ps(x, y);
                *acc = _mm256_fmadd_ps(d, d, *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            // SAFETY: i + 8 <= n.
            let (x, y) = unsafe { (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i))) };
            let d = _mm256_sub_ps(x, y);
            acc[0] = _mm256_fmadd_ps(d, d, acc[0]);
            i += 8;
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut total = hsum256(s);
        while i < n {
            let d = a[i] - b[i];
            total += d * d;
            i += 1;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn available() -> Vec<Isa> {
        let mut v = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                v.push(Isa::Avx2Fma);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                v.push(Isa::Avx512);
            }
        }
        v
    }

    fn exact(metric: Metric, a: &[f32], b: &[f32]) -> f64 {
        let dot: f64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        match metric {
            Metric::L2 => a
                .iter()
                .zip(b)
                .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
                .sum(),
            Metric::Dot => -dot,
            _ => 1.0 - dot,
        }
    }

    #[test]
    fn simd_kernels_match_scalar_at_every_length() {
        let mut seed = 0x1234_5678_u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for len in 0..=300usize {
            let a: Vec<f32> = (0..len).map(|_| rnd()).collect();
            let b: Vec<f32> = (0..len).map(|_| rnd()).collect();
            for metric in [Metric::Cosine, Metric::Dot, Metric::L2] {
                let want = exact(metric, &a, &b);
                for isa in available() {
                    let got = f64::from(distance_fn_for(metric, isa)(&a, &b));
                    assert!(
                        (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                        "{isa:?} {metric:?} len {len}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn unequal_lengths_use_the_shorter() {
        let a = [1.0f32; 37];
        let b = [2.0f32; 20];
        for isa in available() {
            assert_eq!(distance_fn_for(Metric::Dot, isa)(&a, &b), -40.0, "{isa:?}");
            assert_eq!(distance_fn_for(Metric::L2, isa)(&b, &a), 20.0, "{isa:?}");
        }
    }

    #[test]
    fn similarity_is_higher_for_closer() {
        assert_eq!(similarity(Metric::Cosine, 0.0), 1.0);
        assert_eq!(similarity(Metric::Dot, -3.0), 3.0);
        assert_eq!(similarity(Metric::L2, 4.0), -4.0);
    }
}
