#!/usr/bin/env bash
# Builds the memdb Python package from the checkout with pip (maturin, a
# release build of the engine) into its own venv, then runs its tests
# (bindings/python/tests, LangChain's standard vector-store tests among
# them) and the Memorg differential harness through it. Part of
# scripts/test.sh; the local embedding model must be installed first
# (scripts/install-model.sh).
#
#   scripts/test-python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memdb-target}"
venv="${MEMDB_PYTHON_VENV:-$HOME/.cache/memdb-venv-python}"
# maturin runs from the venv's bin (pip calls it by name).
export PATH="$venv/bin:$PATH"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "test-python: creating $venv"
  python3 -m venv "$venv"
fi
# maturin builds the wheel; numpy is what the vector tests pass as arrays;
# langchain-core is what the LangChain integration implements, and
# langchain-tests holds LangChain's standard vector-store tests; pytest runs them.
"$venv/bin/python" -m pip install -q --disable-pip-version-check 'maturin==1.16.0' 'numpy>=1.24' \
  'langchain-core>=1.4,<2' 'langchain-tests==1.1.9' 'pytest>=9.0.3,<10'
# The one-command install from the checkout (README) must work ...
echo "test-python: pip install ./bindings/python"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
  --force-reinstall --no-deps ./bindings/python
"$venv/bin/python" -c 'import memdb; print("test-python: imported memdb", memdb.__version__)'
# ... and so must the abi3 manylinux wheel (the same build, packaged): the
# tests run against the installed wheel.
wheels="$CARGO_TARGET_DIR/wheels"
rm -rf "$wheels"
maturin build -q --release -m bindings/python/Cargo.toml --out "$wheels"
wheel=$(ls "$wheels"/memdb-*-cp39-abi3-manylinux_*.whl)
echo "test-python: built $(basename "$wheel")"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
# The cross-surface test reads the store with the workspace's memdb CLI.
if [[ ! -x "$CARGO_TARGET_DIR/debug/memdb" ]]; then
  cargo build -q -p memdb-cli
fi
export MEMDB_BIN="$CARGO_TARGET_DIR/debug/memdb"
"$venv/bin/python" -m pytest -q bindings/python/tests
# The Memorg differential harness (tests/memorg_diff): memorg 0.1.2 itself,
# memdb's MCP server and this package run one workload; both memdb runs must
# match memorg's contract and agree with each other. Its own pinned venv
# (PyPI); memorg's slow defect probes are skipped.
# (The memdb-only cargo test of the same harness, cli/tests/memorg_diff.rs,
# skips the Python run; both share memorg's venv.)
MEMORG_DIFF_VENV="${MEMORG_DIFF_VENV:-$HOME/.cache/memdb-memorg-venv}" MEMDB_PYTHON="$venv/bin/python" \
  MEMDB_DIFF_FAST=1 tests/memorg_diff/run.sh "$MEMDB_BIN"
