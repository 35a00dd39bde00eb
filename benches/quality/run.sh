#!/usr/bin/env bash
# Retrieval quality and HNSW recall on real MiniLM embeddings of chitchat
# (issue #4, "Done means"). Idempotent and cached: the corpus, the model,
# the stored subset (benches/data/quality/) and the embeddings
# (benches/data/minilm/) are made once and reused.
#
#   benches/quality/run.sh                  # both parts
#   benches/quality/run.sh quality [ARGS]   # retrieval_quality only, ARGS passed on
#   benches/quality/run.sh hnsw             # embed_fvecs + vector_harness only
#
# Environment: CONVERSATIONS (1000), QUERIES (500), BASE (20000),
# HNSW_QUERIES (1000), EFS (ef sweep of the harness).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
data="$root/benches/data"
what="${1:-all}"
shift || true

"$root/benches/fetch-data.sh"
"$root/scripts/install-model.sh"
if [[ ! -f /usr/share/wordnet/index.noun ]]; then
    # WordNet 3.0 (Debian's wordnet-base) for the synonyms query set; the
    # harness skips that set when it is missing.
    if [[ $(id -u) == 0 ]]; then
        apt-get install -y -q wordnet-base >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null && apt-get install -y -q wordnet-base >/dev/null; } \
            || echo "note: could not install wordnet-base; the synonyms set will be skipped" >&2
    else
        echo "note: WordNet missing (apt-get install wordnet-base); the synonyms set will be skipped" >&2
    fi
fi

cd "$root"
cargo build --release -q -p memdb-benches --bin retrieval_quality --bin embed_fvecs --bin vector_harness
bin="${CARGO_TARGET_DIR:-$root/target}/release"

if [[ "$what" == all || "$what" == quality ]]; then
    mkdir -p "$data/quality"
    "$bin/retrieval_quality" --conversations "${CONVERSATIONS:-1000}" --queries "${QUERIES:-500}" \
        --json "$data/quality/results.json" "$@"
fi

if [[ "$what" == all || "$what" == hnsw ]]; then
    "$bin/embed_fvecs" --base "${BASE:-20000}" --queries "${HNSW_QUERIES:-1000}" --out "$data/minilm"
    MEMDB_VEC_DATA="$data/minilm" MEMDB_VEC_OUT="$data/minilm/out" \
        MEMDB_VEC_EFS="${EFS:-10,16,24,32,48,64,96,128}" "$bin/vector_harness"
fi
