//! Test helper for the vector crash suite: upserts and deletes vectors in a
//! memdb data directory (compacting now and then) until it is killed,
//! printing `PUT <record>` / `DEL <record>` after each write returns
//! (`DELETING <record>` before a delete starts) and `COMPACT` after each
//! compaction.
//!
//! Usage: `memdb-vector-crash-child DIR SEED`. Record `r`'s vector is a
//! deterministic function of `r` (see `vector_for`), so the parent can check
//! that every acknowledged vector is still found at its own position.

use std::io::Write;

use memdb::{Memdb, Metric, SpaceSpec};

/// Dimension of the crash test's space.
const DIM: usize = 16;

fn vector_for(r: u128) -> Vec<f32> {
    let mut s = (r as u64) ^ ((r >> 64) as u64).rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15;
    (0..DIM)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f32 / (1u64 << 53) as f32 - 0.5
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(seed)) = (args.next(), args.next()) else {
        eprintln!("usage: memdb-vector-crash-child DIR SEED");
        std::process::exit(2);
    };
    let seed: u64 = seed.parse().unwrap_or(1);
    let db = match Memdb::open(&dir) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = db.create_vector_space(&SpaceSpec::new("crash", DIM as u32, Metric::L2)) {
        eprintln!("space: {e}");
        std::process::exit(1);
    }
    let mut out = std::io::stdout().lock();
    let mut rng = seed | 1;
    let base = u128::from(seed) << 64;
    for i in 0u128.. {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let r = match rng % 20 {
            0 => {
                if db.compact_vectors("crash").is_ok() {
                    let _ = writeln!(out, "COMPACT");
                }
                continue;
            }
            1..=3 if i > 0 => {
                let victim = (base + u128::from(rng >> 8) % i) * 4 + u128::from(rng % 4);
                // Announced first: a kill between the delete's commit and
                // its `DEL` line must not read as a lost vector.
                let _ = writeln!(out, "DELETING {victim}");
                let _ = out.flush();
                match db.delete_vector("crash", uuid::Uuid::from_u128(victim)) {
                    Ok(_) => {
                        let _ = writeln!(out, "DEL {victim}");
                        let _ = out.flush();
                    }
                    Err(e) => {
                        eprintln!("delete failed: {e}");
                        std::process::exit(1);
                    }
                }
                continue;
            }
            _ => base + i,
        };
        let batch: Vec<_> = (0..4u128)
            .map(|j| (uuid::Uuid::from_u128(r * 4 + j), vector_for(r * 4 + j)))
            .collect();
        match db.upsert_vectors("crash", &batch) {
            Ok(()) => {
                for (id, _) in &batch {
                    let _ = writeln!(out, "PUT {}", id.as_u128());
                }
                let _ = out.flush();
            }
            Err(e) => {
                eprintln!("upsert failed: {e}");
                std::process::exit(1);
            }
        }
    }
}
