#!/usr/bin/env bash
# KuraDB at scale (issue #16): generates a 10,000-file mixed folder (once),
# then
#   1. `memdb kb add` + `memdb kb sync` through the real CLI under
#      /usr/bin/time -v (peak RSS of the whole sync, embedding drain with the
#      hashing embedder included);
#   2. compare_chroma.py: ROUNDS rounds of kb_bench ingest (sync timed,
#      time to first searchable, RSS per phase, 500 keyword and 500
#      semantic queries) followed by ChromaDB 1.5.9 on the same chunks and
#      vectors, in a venv at $HOME/.cache/memdb-bench-venv.
# Usage: benches/kb/run.sh [FILES (10000)] [ROUNDS (2)]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
files="${1:-10000}"
rounds="${2:-2}"
target="${CARGO_TARGET_DIR:-$root/target}"
work="${KB_BENCH_DIR:-${TMPDIR:-/tmp}/memdb-kb-bench}"
venv="$HOME/.cache/memdb-bench-venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q chromadb==1.5.9 numpy
fi
(cd "$root" && cargo build --release -p memdb-benches --bin kb_bench -p memdb-cli --bin memdb)
bench="$target/release/kb_bench"
memdb="$target/release/memdb"
folder="$work/f$files"
if [ ! -d "$folder" ]; then
    "$bench" gen --dir "$folder" --files "$files"
fi
store="$(mktemp -d)"
trap 'rm -rf "$store"' EXIT
echo "== memdb kb sync (CLI, hashing embedder) =="
"$memdb" --data "$store" --embedder hashing kb add bench "$folder" > /dev/null
/usr/bin/time -v "$memdb" --data "$store" --embedder hashing --json kb sync bench 2> "$store.time"
grep -E "Elapsed|Maximum resident" "$store.time"
rm -f "$store.time"
echo "== memdb vs ChromaDB 1.5.9, $rounds rounds =="
"$venv/bin/python" "$here/compare_chroma.py" --bench "$bench" --dir "$folder" --rounds "$rounds"
