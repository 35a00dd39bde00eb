#!/usr/bin/env bash
# Differential test: memorg 0.1.2 (Python) vs memdb's `mcp --tools memorg` (Rust).
#
#   tests/memorg_diff/run.sh <memdb-binary>     # e.g. target/debug/memdb
#
# Steps: build the pinned venv if missing (PyPI, requirements.txt) -> start fake_openai.py
# on a free loopback port -> run_memorg.py -> run_memdb.py -> compare.py (its exit code).
# Once the venv exists and the o200k BPE file is cached, everything runs offline.
#
# Environment:
#   MEMORG_DIFF_VENV   venv path (default /tmp/memorg-venv)
#   MEMORG_DIFF_WORK   work dir for DBs/JSON/logs (default: new /tmp/memorg-diff.XXXXXX)
#   MEMORG_DIFF_CACHE  persistent tiktoken cache (default ~/.cache/memorg-diff/tiktoken)
#   MEMORG_O200K_FILE  o200k_base.tiktoken to use (default: from the tiktoken-rs crate source)
#   MEMORG_JSON        reuse an existing memorg.json instead of running memorg again
#   MEMORG_DIFF_FAST=1 skip memorg's slow defect probes (raw-stdout hang, SSE, memory items)
#   COMPARE_ARGS       extra args for compare.py (e.g. --lenient-usage)
#   MEMDB_PYTHON       a Python with the memdb package installed, for the third run (the
#                      workload through the Python package; default: the venv
#                      scripts/test-python.sh builds, ~/.cache/memdb-venv-python)
#   MEMDB_DIFF_SKIP_PYTHON=1  skip that run
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${MEMORG_DIFF_VENV:-/tmp/memorg-venv}"
CACHE="${MEMORG_DIFF_CACHE:-$HOME/.cache/memorg-diff/tiktoken}"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in
  -h|--help) usage ;;
  *) BIN="$1"
     [ -x "$BIN" ] || { echo "run.sh: memdb binary '$BIN' not found or not executable" >&2; exit 2; }
     BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" ;;
esac

# ---------------------------------------------------------------- venv (pinned)
REQ="$HERE/requirements.txt"
STAMP="$VENV/.memorg_diff_requirements.sha256"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
  PYTHON="${PYTHON:-python3}"
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || { echo "run.sh: memorg 0.1.2 needs Python >= 3.11 (have $("$PYTHON" --version))" >&2; exit 2; }
  echo "run.sh: building venv $VENV from $REQ (PyPI)"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
  echo "$want" > "$STAMP"
fi
PY="$VENV/bin/python"

# ---------------------------------------------------------------- tiktoken BPE (offline)
mkdir -p "$CACHE"
export TIKTOKEN_CACHE_DIR="$CACHE"
O200K_KEY=fb374d419588a4632f3f557e76b4b70aebbca790   # sha1 of tiktoken's o200k_base blob URL
if [ ! -f "$CACHE/$O200K_KEY" ] && [ -z "${MEMORG_O200K_FILE:-}" ]; then
  CARGO_HOME_="${CARGO_HOME:-$HOME/.cargo}"
  if ! ls "$CARGO_HOME_"/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken >/dev/null 2>&1; then
    if command -v cargo >/dev/null && [ -f "$REPO/Cargo.toml" ]; then
      echo "run.sh: fetching crate sources (cargo fetch, no build) for tiktoken-rs' bundled o200k_base.tiktoken"
      cargo fetch --manifest-path "$REPO/Cargo.toml" >/dev/null
    fi
  fi
fi

# ---------------------------------------------------------------- work dir, fake server
WORK="${MEMORG_DIFF_WORK:-$(mktemp -d /tmp/memorg-diff.XXXXXX)}"
mkdir -p "$WORK"
FAKE_PID=""
cleanup() { [ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null || true; }
trap cleanup EXIT
"$PY" "$HERE/fake_openai.py" --port 0 --quiet > "$WORK/fake.port" 2> "$WORK/fake.stderr" &
FAKE_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/fake.port" ] && break; sleep 0.1; done
PORT="$(head -n1 "$WORK/fake.port" 2>/dev/null || true)"
[ -n "$PORT" ] || { echo "run.sh: fake_openai.py did not report a port" >&2; cat "$WORK/fake.stderr" >&2; exit 2; }
BASE="http://127.0.0.1:$PORT/v1"
echo "run.sh: work dir $WORK, fake OpenAI at $BASE"

# ---------------------------------------------------------------- memorg side
if [ -n "${MEMORG_JSON:-}" ]; then
  cp "$MEMORG_JSON" "$WORK/memorg.json"
  echo "run.sh: reusing $MEMORG_JSON"
else
  extra=()
  [ "${MEMORG_DIFF_FAST:-0}" = 1 ] && extra+=(--skip-probes)
  [ -n "${MEMORG_O200K_FILE:-}" ] && extra+=(--o200k "$MEMORG_O200K_FILE")
  echo "run.sh: running memorg 0.1.2 (API + MCP over stdio)"
  "$PY" "$HERE/run_memorg.py" --out "$WORK/memorg.json" --base-url "$BASE" --workdir "$WORK/memorg" \
      "${extra[@]}" 2> "$WORK/run_memorg.stderr" \
    || { echo "run.sh: run_memorg.py failed (log: $WORK/run_memorg.stderr)" >&2; tail -20 "$WORK/run_memorg.stderr" >&2; exit 2; }
fi

# ---------------------------------------------------------------- memdb side
echo "run.sh: running memdb ($BIN mcp --tools memorg, stdio)"
set +e
"$PY" "$HERE/run_memdb.py" "$BIN" --out "$WORK/memdb.json" --base-url "$BASE" --data "$WORK/memdb-data"
MEMDB_RC=$?
"$PY" "$HERE/compare.py" "$WORK/memorg.json" "$WORK/memdb.json" ${COMPARE_ARGS:-}
CMP_RC=$?
# ---------------------------------------------------------------- memdb through Python
PY_RC=0; PYCMP_RC=0; SURF_RC=0
if [ "${MEMDB_DIFF_SKIP_PYTHON:-0}" != 1 ]; then
  MPY="${MEMDB_PYTHON:-$HOME/.cache/memdb-venv-python/bin/python}"
  if ! "$MPY" -c 'import memdb' 2>/dev/null; then
    echo "run.sh: no memdb package in $MPY (run scripts/test-python.sh, set MEMDB_PYTHON, or MEMDB_DIFF_SKIP_PYTHON=1)" >&2
    exit 2
  fi
  echo "run.sh: running memdb through its Python package ($MPY)"
  "$MPY" "$HERE/run_memdb_python.py" --out "$WORK/memdb_python.json" --base-url "$BASE" --data "$WORK/memdb-py-data"
  PY_RC=$?
  echo "run.sh: memorg vs memdb (Python package)"
  "$PY" "$HERE/compare.py" "$WORK/memorg.json" "$WORK/memdb_python.json" ${COMPARE_ARGS:-}
  PYCMP_RC=$?
  echo "run.sh: memdb over MCP vs memdb through Python"
  "$PY" "$HERE/compare_surfaces.py" "$WORK/memdb.json" "$WORK/memdb_python.json"
  SURF_RC=$?
fi
set -e
echo "run.sh: outputs in $WORK (memorg.json, memdb.json, memdb_python.json, memdb_server.stderr)"
if [ "$CMP_RC" -ne 0 ] || [ "$MEMDB_RC" -ne 0 ] || [ "$PY_RC" -ne 0 ] || [ "$PYCMP_RC" -ne 0 ] || [ "$SURF_RC" -ne 0 ]; then
  echo "run.sh: FAILED (run_memdb rc=$MEMDB_RC, compare rc=$CMP_RC, run_memdb_python rc=$PY_RC," \
       "compare (python) rc=$PYCMP_RC, compare_surfaces rc=$SURF_RC)"
  exit 1
fi
echo "run.sh: OK"
