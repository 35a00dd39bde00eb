#!/usr/bin/env bash
# Load test of memdb-server at 100K chitchat messages (issue #5).
#
#   benches/load/run.sh [EMBEDDER=hashing] [SECONDS=60] [CONNECTIONS=64] [MIX]
#
# 1. builds memdb-server and the seed/phase bins (release);
# 2. seeds $MEMDB_LOAD_DIR/seed-$EMBEDDER once (load_seed: 100,000 messages,
#    all embedded, one vector compaction), then copies it to a fresh run
#    directory so every run starts from the same 100K store;
# 3. starts memdb-server on a free loopback port (rate limit off), waits for
#    /health, runs benches/load/load.py, stops the server with SIGTERM;
# 4. with PHASES=1, times the engine calls behind each route on the run
#    directory (load_phases), single-threaded, after the server stopped.
# MIX is load.py's --mix (default store=20,hybrid=30,keyword=20,context=30).
# MEMDB_LOAD_DIR (default $TMPDIR/memdb-load) holds the run directory, the
# server log and the JSON results; MEMDB_LOAD_SEED overrides where the seeded
# template lives (e.g. on tmpfs when the disk is short: the run directory,
# where fsyncs count, stays under MEMDB_LOAD_DIR). LOAD_ARGS adds load.py
# options (e.g. LOAD_ARGS="--query-pool 500"). SERVER_NICE (default 0) runs
# the server at that nice level, so the client on the same cores is not
# starved of CPU by the server's bursts (its clock would then count them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
embedder="${1:-hashing}"
secs="${2:-60}"
conns="${3:-64}"
mix="${4:-store=20,hybrid=30,keyword=20,context=30}"
work="${MEMDB_LOAD_DIR:-${TMPDIR:-/tmp}/memdb-load}"
target="${CARGO_TARGET_DIR:-$root/target}"
key="load-test-key-0123456789abcdef0123456789"

"$root/benches/fetch-data.sh" >/dev/null
cargo build --release -q -p memdb-server -p memdb-benches --bin memdb-server --bin load_seed --bin load_phases

mkdir -p "$work"
seed="${MEMDB_LOAD_SEED:-$work/seed-$embedder}"
if [[ ! -f "$seed/.seeded" ]]; then
  rm -rf "$seed"
  "$target/release/load_seed" --dir "$seed" --embedder "$embedder" | tee "$work/seed-$embedder.json"
  touch "$seed/.seeded"
fi
run="$work/run-$embedder"
rm -rf "$run"
cp -a "$seed" "$run"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
MEMDB_API_KEY="$key" MEMDB_RATE_LIMIT=0 MEMDB_LOG=warn \
  nice -n "${SERVER_NICE:-0}" "$target/release/memdb-server" --data "$run" --listen "127.0.0.1:$port" --embedder "$embedder" \
  2>"$work/server.log" &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  if curl -sf "http://127.0.0.1:$port/health" >/dev/null; then break; fi
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "server did not start"; cat "$work/server.log"; exit 1; }

status=0
python3 "$here/load.py" --url "http://127.0.0.1:$port" --key "$key" \
  --connections "$conns" --seconds "$secs" --mix "$mix" \
  ${LOAD_ARGS:-} --json "$work/result-$embedder-$(date +%H%M%S).json" || status=$?
kill -TERM $server
wait $server || true
trap - EXIT

if [[ "${PHASES:-0}" == 1 ]]; then
  "$target/release/load_phases" --dir "$run" --embedder "$embedder"
fi
exit $status
