#!/usr/bin/env bash
# memdb's embedder vs onnxruntime's Python API, same model, tokenizer,
# threads and batch size, side by side. Builds embed_bench (release), makes a
# venv with onnxruntime==1.31.1, tokenizers and numpy, writes N chitchat
# messages (benches/fetch-data.sh) to a sentences file, then for each thread
# count runs both ROUNDS times, alternating, and prints each side's best
# sentences/s and the ratio memdb / Python (target >= 0.9).
#
#   benches/embed/run.sh [N=2000] [BATCH=32] [THREADS="1 2"] [ROUNDS=3]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
n="${1:-2000}"
batch="${2:-32}"
threads="${3:-1 2}"
rounds="${4:-3}"
models="${MEMDB_MODELS:-${XDG_DATA_HOME:-$HOME/.local/share}/memdb/models}"
venv="$here/.venv"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$root/scripts/install-model.sh" "$models" >&2
"$root/benches/fetch-data.sh" >&2
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q onnxruntime==1.31.1 tokenizers numpy
fi
(cd "$root" && cargo build -q --release -p memdb-benches --bin embed_bench)
bin="${CARGO_TARGET_DIR:-$root/target}/release/embed_bench"

"$venv/bin/python" "$here/bench.py" sentences --data "$root/benches/data/dataset.json" --n "$n" --out "$work/sentences.txt"
echo "sentences: $n chitchat messages, batch $batch, models $models, $(nproc) cores"
for t in $threads; do
    for r in $(seq "$rounds"); do
        # --float: the Python side runs the export's own (float) graph, so
        # memdb runs the same products; its default int8 products are
        # measured against floats in benches/README.md, "Int8 products".
        "$bin" --sentences "$work/sentences.txt" --models "$models" --threads "$t" --batch "$batch" \
            --float --vectors "$work/memdb.f32" >>"$work/memdb-$t.jsonl"
        "$venv/bin/python" "$here/bench.py" run --sentences "$work/sentences.txt" --models "$models" \
            --threads "$t" --batch "$batch" --compare "$work/memdb.f32" >>"$work/python-$t.jsonl"
    done
    "$venv/bin/python" - "$work/memdb-$t.jsonl" "$work/python-$t.jsonl" "$t" <<'PY'
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
ref = [json.loads(l) for l in open(sys.argv[2])]
a = max(r["sentences_per_s"] for r in ours)
b = max(r["sentences_per_s"] for r in ref)
cos = min(r["min_cosine_vs_memdb"] for r in ref)
runs = lambda rs: " ".join(f'{r["sentences_per_s"]:.0f}' for r in rs)
print(f"threads {sys.argv[3]}: memdb {a:.1f}/s (runs {runs(ours)}), onnxruntime-python {b:.1f}/s "
      f"(runs {runs(ref)}), ratio {a / b:.3f}; min cosine memdb vs python {cos:.6f}")
PY
done
