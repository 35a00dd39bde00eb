#!/usr/bin/env bash
# Runs every test in the workspace: unit, integration (tests/), CLI, doc tests,
# then the Python package's (scripts/test-python.sh).
# This is the README's test command. It first installs what the tests need,
# each step idempotent and saying what it does: the local embedding models
# (checksummed) and the system packages (Python's venv, headless Chromium;
# scripts/install-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memdb-target}"
./scripts/install-model.sh
./scripts/install-test-deps.sh
cargo test --workspace --all-targets
cargo test --workspace --doc
./scripts/test-python.sh
