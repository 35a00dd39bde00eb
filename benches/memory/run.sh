#!/usr/bin/env bash
# Conversational-memory quality of memdb-server through its REST API on
# multi-session chitchat histories (memory_quality.py says what it builds
# and measures). One fresh server and store per passage rule, side by side:
#
#   benches/memory/run.sh [RULE...]        # default: with-previous with-neighbours
#
# Needs the local model (scripts/install-model.sh) and benches/data
# (benches/fetch-data.sh); the paraphrased set needs WordNet (Debian's
# wordnet-base, else it is skipped). MEMORY_ARGS adds memory_quality.py options,
# EMBEDDER overrides --embedder (default local). Results: JSON files in
# $MEMDB_MEMORY_DIR (default $TMPDIR/memdb-memory).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
work="${MEMDB_MEMORY_DIR:-${TMPDIR:-/tmp}/memdb-memory}"
key="memory-quality-key-0123456789abcdef01234"
rules=("$@")
[[ ${#rules[@]} -gt 0 ]] || rules=(with-previous with-neighbours)

"$root/benches/fetch-data.sh" >/dev/null
(cd "$root" && cargo build --release -q -p memdb-server --bin memdb-server -p memdb-benches --bin synonyms)
export CARGO_TARGET_DIR="$target"
mkdir -p "$work"
for rule in "${rules[@]}"; do
  data="$work/store-$rule"
  rm -rf "$data"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  MEMDB_API_KEY="$key" MEMDB_RATE_LIMIT=0 MEMDB_LOG=warn \
    "$target/release/memdb-server" --data "$data" --listen "127.0.0.1:$port" \
    --embedder "${EMBEDDER:-local}" --passage "$rule" --kb-watch 0 2>"$work/server-$rule.log" &
  server=$!
  trap 'kill -TERM $server 2>/dev/null || true' EXIT
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null; then break; fi
    sleep 0.2
  done
  status=0
  python3 "$here/memory_quality.py" --url "http://127.0.0.1:$port" --key "$key" \
    --label "passage $rule" --json "$work/result-$rule.json" --written "$here/written.jsonl" ${MEMORY_ARGS:-} || status=$?
  kill -TERM $server
  wait $server || true
  trap - EXIT
  [[ $status == 0 ]] || exit $status
done
