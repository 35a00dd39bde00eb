"""memdb's KuraDB ingest and search vs ChromaDB 1.5.9 on the same chunks
and the same vectors (issue #16; run through benches/kb/run.sh).

Each round runs memdb first (`kb_bench ingest`: a fresh store, `kb_sync` of
the generated folder, the hashing embedder's vectors written by
`embed_pending`, then the timed queries; it exports its chunks, their
vectors and the queries), then ChromaDB on that export: a fresh
`PersistentClient`, `collection.add(ids, documents, metadatas, embeddings)`
in batches of the client's maximum batch size (HNSW, cosine), then the same
queries: semantic as `collection.query(query_embeddings=[v], n_results=10)`
with the vector memdb's hashing embedder gives the query text (memdb reads
its cached query vector: embedding excluded on both sides), keyword as
`collection.get(where_document={"$contains": word}, limit=10)` (Chroma's
only text search: a substring filter over its full-text index, no ranking;
memdb's is BM25). Rounds alternate so that each ratio comes from the same
machine state. Prints one JSON object per round and a summary.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import chromadb


def pct(sorted_ms, q):
    i = round((len(sorted_ms) - 1) * q)
    return sorted_ms[min(i, len(sorted_ms) - 1)]


def latencies(samples, total):
    s = sorted(samples)
    return {
        "n": len(s),
        "p50_ms": round(pct(s, 0.5), 3),
        "p99_ms": round(pct(s, 0.99), 3),
        "qps": round(len(s) / total, 3),
    }


def run_chroma(export, dim):
    chunks = [json.loads(line) for line in open(os.path.join(export, "chunks.jsonl"))]
    vectors = np.fromfile(os.path.join(export, "vectors.f32"), dtype="<f4")
    vectors = vectors.reshape(len(chunks), dim)
    queries = json.load(open(os.path.join(export, "queries.json")))
    store = tempfile.mkdtemp(prefix="chroma-bench-")
    try:
        client = chromadb.PersistentClient(path=store)
        col = client.create_collection(
            "bench", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        batch = client.get_max_batch_size()
        ids = [c["id"] for c in chunks]
        docs = [c["text"] for c in chunks]
        metas = [{"source": c["source"] or "", "chunk": int(c["chunk"] or 0)} for c in chunks]
        t = time.perf_counter()
        for i in range(0, len(chunks), batch):
            col.add(
                ids=ids[i : i + batch],
                documents=docs[i : i + batch],
                metadatas=metas[i : i + batch],
                embeddings=vectors[i : i + batch],
            )
        add_s = time.perf_counter() - t
        assert col.count() == len(chunks), col.count()
        out = {
            "chunks": len(chunks),
            "add_s": round(add_s, 3),
            "chunks_per_s": round(len(chunks) / add_s, 3),
        }
        qv = np.asarray(queries["vectors"], dtype=np.float32)
        # Warm-up pass (memdb's first pass fills its query cache).
        for v in qv[:50]:
            col.query(query_embeddings=[v], n_results=10)
        for name, items, call in [
            (
                "keyword",
                queries["keyword"],
                lambda w: col.get(
                    where_document={"$contains": w},
                    limit=10,
                    include=["documents", "metadatas"],
                )["ids"],
            ),
            (
                "semantic",
                list(qv),
                lambda v: col.query(
                    query_embeddings=[v],
                    n_results=10,
                    include=["documents", "metadatas", "distances"],
                )["ids"][0],
            ),
        ]:
            lat, hits = [], 0
            t0 = time.perf_counter()
            for q in items:
                t = time.perf_counter()
                hits += len(call(q))
                lat.append((time.perf_counter() - t) * 1e3)
            res = latencies(lat, time.perf_counter() - t0)
            res["mean_hits"] = round(hits / max(len(items), 1), 3)
            out[name] = res
        out["store_mb"] = round(
            sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(store) for f in fs)
            / 2**20,
            1,
        )
        return out
    finally:
        shutil.rmtree(store, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="the kb_bench binary")
    ap.add_argument("--dir", required=True, help="the generated folder")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--dim", type=int, default=384)
    a = ap.parse_args()
    rounds = []
    for r in range(a.rounds):
        export = tempfile.mkdtemp(prefix="kb-export-")
        try:
            m = subprocess.run(
                [a.bench, "ingest", "--dir", a.dir, "--queries", str(a.queries), "--export", export],
                check=True,
                capture_output=True,
                text=True,
            )
            memdb = json.loads(m.stdout)
            chroma = run_chroma(export, a.dim)
        finally:
            shutil.rmtree(export, ignore_errors=True)
        row = {
            "round": r + 1,
            "memdb": memdb,
            "chroma": chroma,
            "ratio": {
                "ingest_sync_vs_add": round(chroma["add_s"] / memdb["sync_s"], 3),
                "ingest_with_vectors_vs_add": round(
                    chroma["add_s"] / memdb["ingest_with_vectors_s"], 3
                ),
                "keyword_p50": round(chroma["keyword"]["p50_ms"] / memdb["keyword"]["p50_ms"], 3),
                "semantic_p50": round(
                    chroma["semantic"]["p50_ms"] / memdb["semantic"]["p50_ms"], 3
                ),
                "keyword_qps": round(memdb["keyword"]["qps"] / chroma["keyword"]["qps"], 3),
                "semantic_qps": round(memdb["semantic"]["qps"] / chroma["semantic"]["qps"], 3),
            },
        }
        print(json.dumps(row), flush=True)
        rounds.append(row)
    print(json.dumps({"ratios": [r["ratio"] for r in rounds]}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
