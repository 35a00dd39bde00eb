#!/usr/bin/env bash
# The main job with embedded defaults: install the local embedding model
# (idempotent, checksummed), build the memdb CLI, store the example
# conversations in a fresh data directory (embedding each message), and answer
# keyword, semantic and hybrid queries over them. No server, no API key.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memdb-target}"
./scripts/install-model.sh
cargo build --release -q -p memdb-cli
memdb="$CARGO_TARGET_DIR/release/memdb"
data="${MEMDB_DEMO_DATA:-$(mktemp -d)}"
echo "data directory: $data"
for f in examples/conversations/*.json; do
  "$memdb" --data "$data" store "$f"
done
"$memdb" --data "$data" stats
"$memdb" --data "$data" embed --status
run() {
  echo
  echo "\$ memdb query $*"
  "$memdb" --data "$data" query "$@"
}
# Keyword syntax: phrases, AND, prefixes.
run '"borrow checker"' --mode keyword
run 'sourdough AND starter' --mode keyword
run 'lisb*' --mode keyword
# Paraphrases that share no word with the answer: found by meaning.
run 'where should I go on holiday when winter ends' --limit 3
run 'my fermented dough culture has a chemical odour' --limit 3 --mode semantic --explain
