#!/usr/bin/env bash
# Runs every test in the workspace: unit, integration (tests/), CLI, doc tests.
# This is the README's test command. It first installs the local embedding
# model (idempotent, checksummed) that the embedder tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memdb-target}"
./scripts/install-model.sh
cargo test --workspace --all-targets
cargo test --workspace --doc
