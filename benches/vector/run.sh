#!/usr/bin/env bash
# memdb's HNSW vs hnswlib 0.8.0 side by side: builds memdb's harness (the
# vector_harness binary of memdb-benches, release), then runs
# compare_hnswlib.py, which runs the harness and hnswlib on the same data, in
# a venv with hnswlib 0.8.0 (built from source with -march=native, as its
# setup.py does) and numpy. Arguments pass through to compare_hnswlib.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q numpy hnswlib==0.8.0
fi
(cd "$root" && cargo build --release -p memdb-benches --bin vector_harness)
exec "$venv/bin/python" "$here/compare_hnswlib.py" "$@"
