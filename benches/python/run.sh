#!/usr/bin/env bash
# The Python package's performance benchmark (issue #58), in one run:
#   1. builds the wheel in release mode with maturin (timed; its size
#      reported) and installs it into a venv with numpy and chromadb 1.5.9
#      (`pip install ./bindings/python` is the same maturin release build);
#   2. builds the Rust baseline (bindings/python/examples/bench_baseline.rs)
#      in release, in the same Cargo workspace, lockfile and target
#      directory, so it runs the engine the wheel holds;
#   3. runs bench.py: search per-call overhead (Python vs Rust, same store),
#      bulk insert of 100K chitchat messages (Python vs Rust) and memdb vs
#      ChromaDB on the same vectors; prints a table with ratios.
#
# Usage: benches/python/run.sh [bench.py arguments...]
#   e.g. benches/python/run.sh --vectors 20000 --rounds 3
# Environment: CARGO_TARGET_DIR (default ~/.cache/memdb-bench-target),
# MEMDB_BENCH_VENV (default ~/.cache/memdb-venv-bench), SKIP_BUILD=1 to
# reuse the last wheel and baseline (built together).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memdb-bench-target}"
venv="${MEMDB_BENCH_VENV:-$HOME/.cache/memdb-venv-bench}"
export PATH="$venv/bin:$PATH"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  'maturin==1.16.0' 'numpy>=1.24' 'chromadb==1.5.9'
"$root/benches/fetch-data.sh" >/dev/null

wheels="$CARGO_TARGET_DIR/bench-wheels"
build_s=0
if [[ "${SKIP_BUILD:-}" != 1 || ! -d "$wheels" ]]; then
  rm -rf "$wheels"
  echo "run.sh: maturin build --release (target $CARGO_TARGET_DIR)" >&2
  start=$(date +%s.%N)
  maturin build -q --release -m "$root/bindings/python/Cargo.toml" --out "$wheels"
  build_s=$(echo "$(date +%s.%N) - $start" | bc)
  echo "$build_s" >"$wheels/build_seconds"
fi
[[ -f "$wheels/build_seconds" ]] && build_s=$(cat "$wheels/build_seconds")
wheel=$(ls "$wheels"/memdb-*-cp39-abi3-manylinux_*.whl)
wheel_bytes=$(stat -c %s "$wheel")
ls -l "$wheel" >&2
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"

baseline="$CARGO_TARGET_DIR/release/examples/bench_baseline"
# Built with the wheel (SKIP_BUILD=1 keeps both as they are: rebuilding one
# alone after the engine changed would compare two engines).
if [[ "${SKIP_BUILD:-}" != 1 || ! -x "$baseline" ]]; then
  echo "run.sh: cargo build --release --example bench_baseline" >&2
  # pyo3 links no libpython for an extension module (maturin sets this too).
  PYO3_PYTHON="$venv/bin/python" PYO3_BUILD_EXTENSION_MODULE=1 \
    cargo build -q --release --manifest-path "$root/bindings/python/Cargo.toml" --example bench_baseline
fi

dirty=$(git -C "$root" diff --quiet HEAD -- engine bindings/python format 2>/dev/null || echo " + uncommitted changes")
echo "run.sh: source $(git -C "$root" rev-parse --short HEAD 2>/dev/null)$dirty" >&2
echo "run.sh: load average $(cut -d' ' -f1-3 /proc/loadavg) before the run" >&2
cd "$root"
exec "$venv/bin/python" "$here/bench.py" --baseline "$baseline" \
  --data "$root/benches/data/dataset.json" \
  --wheel-bytes "$wheel_bytes" --build-s "$build_s" "$@"
