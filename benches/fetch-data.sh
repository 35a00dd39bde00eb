#!/usr/bin/env bash
# Fetches the benchmark corpus into benches/data/ (gitignored). Idempotent:
# does nothing when the file is already there.
#
# Corpus: PyPI `chitchat-dataset` 0.9.0 (MIT), file chitchat_dataset/dataset.json:
# 7,168 conversations, 258,145 timestamped messages (about 40 MB of JSON).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
data="$here/data"
out="$data/dataset.json"
version="0.9.0"
wheel="chitchat_dataset-$version-py3-none-any.whl"

mkdir -p "$data"
if [[ -s "$out" ]]; then
    echo "already present: $out"
    exit 0
fi

if [[ ! -s "$data/$wheel" ]]; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        -d "$data" "chitchat-dataset==$version"
fi
# Write to a temp name, then rename, so a
# partial extraction never looks complete.
unzip -p "$data/$wheel" chitchat_dataset/dataset.json >"$out.tmp"
mv "$out.tmp" "$out"
unzip -p "$data/$wheel" chitchat_dataset-$version.dist-info/LICENSE >"$data/LICENSE.chitchat" || true
echo "wrote $out ($(wc -c <"$out") bytes)"
