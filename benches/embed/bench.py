"""The reference side of memdb's embedding throughput bench.

Runs the same files memdb's LocalOnnx loads (model.onnx, tokenizer.json from
the models directory) through onnxruntime's Python API and HuggingFace
`tokenizers`, with the same settings: batch-longest padding, truncation at
256 tokens, intra-op threads as given, one inter-op thread, spinning off, full
graph optimisation, mean pooling over the attention mask, L2 normalisation.

  bench.py sentences --data dataset.json --n N --out FILE
      writes the first N non-blank chitchat messages, one per line
  bench.py run --sentences FILE --models DIR --threads T --batch B [--repeat R]
               [--compare VECTORS]
      prints one JSON line like embed_bench does; with --compare, also the
      smallest cosine between its vectors and memdb's
"""

import argparse
import json
import os
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def write_sentences(args):
    with open(args.data) as f:
        data = json.load(f)
    out = []
    for conv in data.values():
        for turn in conv["messages"]:
            for m in turn:
                text = " ".join(m["text"].split())
                if text:
                    out.append(text)
                if len(out) == args.n:
                    break
            if len(out) == args.n:
                break
        if len(out) == args.n:
            break
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


def run(args):
    with open(args.sentences) as f:
        sentences = f.read().splitlines()
    t0 = time.perf_counter()
    tok = Tokenizer.from_file(os.path.join(args.models, "tokenizer.json"))
    tok.enable_padding()  # batch-longest
    tok.enable_truncation(256)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    sess = ort.InferenceSession(
        os.path.join(args.models, "model.onnx"), opts, providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in sess.get_inputs()]
    load_s = time.perf_counter() - t0

    def embed(texts):
        out = []
        for i in range(0, len(texts), args.batch):
            encs = tok.encode_batch(texts[i : i + args.batch])
            ids = np.array([e.ids for e in encs], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feeds["token_type_ids"] = np.array([e.type_ids for e in encs], dtype=np.int64)
            hidden = sess.run(None, {k: v for k, v in feeds.items() if k in names})[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.append(pooled / np.maximum(norms, 1e-12))
        return np.concatenate(out)

    embed(sentences[: args.batch])  # warm-up, as embed_bench does
    best = float("inf")
    vectors = None
    for _ in range(args.repeat):
        t = time.perf_counter()
        vectors = embed(sentences)
        best = min(best, time.perf_counter() - t)
    result = {
        "impl": "onnxruntime-python",
        "sentences": len(sentences),
        "threads": args.threads,
        "batch": args.batch,
        "seconds": best,
        "sentences_per_s": len(sentences) / best,
        "load_s": load_s,
        "onnxruntime": ort.__version__,
    }
    if args.compare:
        theirs = np.fromfile(args.compare, dtype="<f4").reshape(vectors.shape)
        result["min_cosine_vs_memdb"] = float((theirs * vectors).sum(axis=1).min())
    print(json.dumps(result))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sentences")
    s.add_argument("--data", required=True)
    s.add_argument("--n", type=int, default=2000)
    s.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--sentences", required=True)
    r.add_argument("--models", required=True)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--batch", type=int, default=32)
    r.add_argument("--repeat", type=int, default=1)
    r.add_argument("--compare")
    args = p.parse_args()
    write_sentences(args) if args.cmd == "sentences" else run(args)


if __name__ == "__main__":
    main()
