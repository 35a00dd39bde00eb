//! memdb's vector recall/QPS harness: recall@10 against exact search and
//! single-thread QPS over an `ef` sweep, filtered recall at 1/10/50%
//! selectivity, and the same search over the generation file. Run it in
//! release:
//!
//! ```text
//! cargo run --release -p memdb-benches --bin vector_harness
//! MEMDB_VEC_N=20000 MEMDB_VEC_METRIC=l2 cargo run --release -p memdb-benches --bin vector_harness
//! ```
//!
//! The harness itself is in the engine (`engine/src/vector/bench.rs`,
//! reached through the hidden `memdb::bench_internals` of the
//! `bench-internals` feature), since it measures crate-private code. It is
//! configured by environment variables, listed by `--help`;
//! `benches/vector/run.sh` runs it next to hnswlib.

use std::process::ExitCode;

const HELP: &str = "\
vector_harness: memdb's HNSW recall@10 and QPS on clustered synthetic vectors

Settings (environment, default in parentheses):
  MEMDB_VEC_N         data vectors (100000)
  MEMDB_VEC_DIM       dimension (384)
  MEMDB_VEC_QUERIES   queries (1000)
  MEMDB_VEC_METRIC    cosine | dot | l2 (cosine)
  MEMDB_VEC_M         M (16)
  MEMDB_VEC_EFC       ef_construction (200)
  MEMDB_VEC_THREADS   build threads (2); search is single-threaded
  MEMDB_VEC_EFS       ef sweep (10,16,24,32,48,64,96,128,192,256,384)
  MEMDB_VEC_ROUNDS    passes per ef, QPS is the best (3)
  MEMDB_VEC_RANK, MEMDB_VEC_SPREAD, MEMDB_VEC_NOISE, MEMDB_VEC_CLUSTERS
                      data shape (16, 0.25, 0.1, n / 1000)
  MEMDB_VEC_DATA=DIR  read DIR/base.fvecs and DIR/query.fvecs instead
  MEMDB_VEC_OUT=DIR   write base.fvecs, query.fvecs, gt.ivecs, memdb.json
  MEMDB_VEC_MERGE=NEW,STALE
                      instead compare a compaction's merge (a generation
                      over 1-NEW of the data, STALE of it overwritten, the
                      rest inserted) with a rebuild: time and recall
  MEMDB_VEC_SERVE=1   then keep the graph and answer `ef N` lines on stdin
                      with one JSON line each (recall, QPS), until `quit`
";

fn main() -> ExitCode {
    if std::env::args().skip(1).any(|a| a == "-h" || a == "--help") {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    match memdb::bench_internals::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vector_harness: {e}");
            ExitCode::FAILURE
        }
    }
}
