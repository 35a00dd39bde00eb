#!/usr/bin/env bash
# The main job with embedded defaults: build the memdb CLI, store the example
# conversations in a fresh data directory, and answer queries over them.
# No server, no API key, nothing to install beyond the Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memdb-target}"
cargo build --release -q -p memdb-cli
memdb="$CARGO_TARGET_DIR/release/memdb"
data="${MEMDB_DEMO_DATA:-$(mktemp -d)}"
echo "data directory: $data"
for f in examples/conversations/*.json; do
  "$memdb" --data "$data" store "$f"
done
"$memdb" --data "$data" stats
for q in '"borrow checker"' 'sourdough AND starter' 'lisb*'; do
  echo
  echo "\$ memdb query $q"
  "$memdb" --data "$data" query "$q"
done
