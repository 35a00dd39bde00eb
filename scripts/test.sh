#!/usr/bin/env bash
# Runs every test in the workspace: unit, integration (tests/), CLI, doc tests.
# This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memdb-target}"
cargo test --workspace --all-targets
cargo test --workspace --doc
