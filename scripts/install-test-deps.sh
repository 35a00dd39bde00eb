#!/usr/bin/env bash
# Installs the system packages the test suite needs and says what it does:
#   - Python's venv and ensurepip modules (the Sekha SDK, MCP and Memorg
#     end-to-end tests build a venv from tests/python/requirements.txt);
#   - headless Chromium, Debian's `chromium` package (the web UI test,
#     tests/suite/ui.rs), unless MEMDB_CHROMIUM names another browser.
# Idempotent: when everything is present it prints one line and does nothing.
# Installing needs apt-get and root (or sudo without a password); when it
# cannot install, it stops and names the packages to install by hand.
#
#   scripts/install-test-deps.sh
set -euo pipefail

missing=()
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
if [[ -z "${MEMDB_CHROMIUM:-}" ]] && ! command -v chromium >/dev/null 2>&1; then
  missing+=(chromium)
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-test-deps: python venv and chromium present"
  exit 0
fi

echo "install-test-deps: installing Debian packages: ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "install-test-deps: cannot install as $(id -un) (not root, no password-less sudo);" >&2
  echo "  run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: no apt-get on this machine; install by hand: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q "${missing[@]}"
echo "install-test-deps: installed ${missing[*]}"
