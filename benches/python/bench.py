"""The memdb Python package's performance benchmark (issue #58), run by
benches/python/run.sh. Three comparisons, side by side in one run:

1. Per-call overhead of ``db.sekha.search`` from Python over the same
   ``Sekha::search`` call from Rust (the ``bench_baseline`` example,
   bindings/python/examples/bench_baseline.rs), on the same store (the one
   the Python insert below wrote, hashing embedder), the same queries and
   the same request; rounds alternate Rust then Python. Overhead = Python
   p50 - Rust p50. Also the native call alone (``Store.search``: dict in,
   dicts out, without the dataclasses the Python layer builds).
2. Bulk insert of 100K chitchat messages: one ``create_conversation`` per
   conversation (the package's only batch shape: a conversation with its
   messages), from Python and from Rust, into fresh stores, with no embedder
   and with the hashing one; the time covers the create calls, draining the
   embedding queue and flushing the text index. Also the native call alone
   (``Store.create_conversation`` with prebuilt dicts, result left as dicts).
3. memdb's vector spaces (``db.vectors``) vs ChromaDB ``PersistentClient``
   in process, on the same seeded random-normal normalized float32 vectors
   (cosine) and ids; Chroma gets the chitchat texts as documents too (memdb's
   vector API stores vectors only), and once without documents. Add
   throughput in batches, single-query top-10 p50, recall@10 against exact
   NumPy brute force.

Prints a Markdown table and writes every figure as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime

import numpy as np

import memdb
from memdb.types import SearchResults, build, format_time

STOP = set(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can did do does doing don down during each few
    for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with you your
    yours yourself yourselves im its dont thats""".split()
)


def pct(sorted_vals, q):
    i = round((len(sorted_vals) - 1) * q)
    return sorted_vals[min(i, len(sorted_vals) - 1)]


def summary_us(samples_ns):
    s = sorted(x / 1000.0 for x in samples_ns)
    return {
        "n": len(s),
        "p50_us": pct(s, 0.5),
        "p90_us": pct(s, 0.9),
        "p99_us": pct(s, 0.99),
        "mean_us": sum(s) / len(s),
    }


# ----- corpus ---------------------------------------------------------------


def load_corpus(path, n_messages):
    """The first chitchat conversations (key order, as benches/src/corpus.rs
    reads them) up to ``n_messages`` messages, the last one cut short:
    ``[(label, folder, [(role, text, datetime)])]``."""
    raw = json.load(open(path))
    convs, total = [], 0
    for key in sorted(raw):
        conv = raw[key]
        first, msgs = None, []
        for turn in conv["messages"]:
            for m in turn:
                if not m["text"].strip():
                    continue
                if first is None:
                    first = m["sender"]
                role = "user" if m["sender"] == first else "assistant"
                ts = m.get("timestamp")
                ts = datetime.fromisoformat(ts.replace("Z", "+00:00")) if ts else None
                msgs.append((role, m["text"], ts))
        if not msgs:
            continue
        prompt = conv.get("prompt")
        prompt = re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", prompt) if prompt else None
        if prompt and prompt.strip():
            label = prompt.strip()
            while len(label.encode()) > 500:
                label = label[:-1]
        else:
            label = f"chitchat {key[:8]}"
        msgs = msgs[: n_messages - total]
        convs.append((label, "/chitchat", msgs))
        total += len(msgs)
        if total >= n_messages:
            break
    return convs, total


def engine_dicts(convs):
    """What ``db.sekha.create_conversation`` hands the engine, as JSON."""
    return [
        {
            "label": label,
            "folder": folder,
            "messages": [
                {"role": r, "content": t, **({"timestamp": format_time(ts)} if ts else {})}
                for r, t, ts in msgs
            ],
        }
        for label, folder, msgs in convs
    ]


def make_queries(convs, n, seed):
    """Seeded keyword queries drawn from the corpus: two thirds one word,
    one third two words of one message (OR)."""
    rng = random.Random(seed)
    texts = [t for _, _, msgs in convs for _, t, _ in msgs]
    out = []
    while len(out) < n:
        words = [
            w.lower()
            for w in re.findall(r"[A-Za-z]+", rng.choice(texts))
            if len(w) >= 3 and w.lower() not in STOP
        ]
        if not words:
            continue
        if len(out) % 3 == 2 and len(words) >= 2:
            out.append(" ".join(rng.sample(words, 2)))
        else:
            out.append(rng.choice(words))
    return out


# ----- 1 and 2: search overhead and bulk insert -------------------------------


def rust(baseline, *args):
    r = subprocess.run([baseline, *args], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def py_insert(path, embedder, convs):
    db = memdb.open(path, embedder=embedder)
    gc.collect()
    t = time.perf_counter()
    for label, folder, msgs in convs:
        db.sekha.create_conversation(label, msgs, folder=folder)
    return _settle(db, t, "python", embedder)


def _settle(db, t, side, embedder):
    """Drains the embedding queue, flushes and closes ``db``: the insert
    figures, timed from ``t``."""
    create_s = time.perf_counter() - t
    if db.has_embedder:
        db.embed_pending()
    db.flush()
    total_s = time.perf_counter() - t
    db.close()
    return {"side": side, "embedder": embedder, "create_s": create_s, "total_s": total_s}


def py_insert_native(path, embedder, dicts):
    """The native call alone: ``Store.create_conversation`` with the dicts
    the Python layer would build (built before the clock starts), its
    result (the stored conversation as plain dicts) not turned into
    dataclasses."""
    dicts = json.loads(json.dumps(dicts))
    db = memdb.open(path, embedder=embedder)
    store = db._store
    gc.collect()
    t = time.perf_counter()
    for d in dicts:
        store.create_conversation(d)
    return _settle(db, t, "native", embedder)


def py_search(path, embedder, queries, modes, repeat):
    db = memdb.open(path, embedder=embedder)
    store = db._store
    out = {}
    for mode in modes:
        for q in queries:  # warm-up, as the Rust side
            db.sekha.search(q, mode=mode, limit=10)
        full, native = [], []
        clock = time.perf_counter_ns
        for _ in range(repeat):
            for q in queries:
                t = clock()
                db.sekha.search(q, mode=mode, limit=10)
                full.append(clock() - t)
        # The native call alone: the dict the Python layer builds, the
        # engine's result as plain dicts and lists.
        reqs = [
            {"query": q, "mode": mode, "limit": 10, "offset": 0, "explain": False, "filter": {}}
            for q in queries
        ]
        for _ in range(repeat):
            for r in reqs:
                t = clock()
                store.search(r)
                native.append(clock() - t)
        # The Python layer alone: the native results turned into dataclasses.
        raw = [store.search(r) for r in reqs]
        layer = []
        for _ in range(repeat):
            for r in raw:
                t = clock()
                build(SearchResults, r)
                layer.append(clock() - t)
        out[mode] = {
            "full": summary_us(full),
            "native": summary_us(native),
            "layer": summary_us(layer),
            "hits_per_query": sum(len(r["hits"]) for r in raw) / len(raw),
        }
    db.close()
    return out


# ----- 3: memdb vs ChromaDB -------------------------------------------------


def unit_rows(rng, n, dim):
    v = rng.standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def clustered_rows(rng, n, dim, centers, spread):
    """Unit vectors around ``centers`` random unit centers: each is a
    center plus Gaussian noise of norm about ``spread``."""
    c = unit_rows(rng, centers, dim)
    v = c[rng.integers(0, centers, n)] + rng.standard_normal((n, dim), dtype=np.float32) * (
        spread / np.sqrt(dim)
    )
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32)


def recall(found, truth):
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)]))


def bench_memdb_vectors(work, ids, vecs, queries, batch, ef_values):
    path = os.path.join(work, "memdb-vectors")
    db = memdb.open(path, embedder="none")
    index = {uuid.UUID(i): n for n, i in enumerate(ids)}
    db.vectors.create_space("bench", vecs.shape[1], "cosine")
    t = time.perf_counter()
    for i in range(0, len(ids), batch):
        db.vectors.upsert("bench", ids[i : i + batch], vecs[i : i + batch])
    add_s = time.perf_counter() - t
    t = time.perf_counter()
    db.vectors.search("bench", queries[0], k=10)
    first_s = time.perf_counter() - t
    out = {
        "add_s": add_s,
        "items_per_s": len(ids) / add_s,
        "first_query_s": first_s,
        "numpy_path": hasattr(db._store, "upsert_vector_array"),
    }
    for ef in ef_values:
        for q in queries[:50]:
            db.vectors.search("bench", q, k=10, ef=ef)
        lat, found = [], []
        for q in queries:
            t = time.perf_counter_ns()
            hits = db.vectors.search("bench", q, k=10, ef=ef)
            lat.append(time.perf_counter_ns() - t)
            found.append([index[h.id] for h in hits])
        out["default" if ef is None else f"ef={ef}"] = {"query": summary_us(lat), "found": found}
    db.close()
    return out


def bench_chroma(work, ids, vecs, queries, docs, batch):
    import chromadb
    from chromadb.config import Settings

    path = os.path.join(work, "chroma-" + ("docs" if docs else "vectors"))
    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    col = client.create_collection(
        "bench", metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    index = {i: n for n, i in enumerate(ids)}
    t = time.perf_counter()
    for i in range(0, len(ids), batch):
        kw = {"documents": docs[i : i + batch]} if docs else {}
        col.add(ids=ids[i : i + batch], embeddings=vecs[i : i + batch], **kw)
    add_s = time.perf_counter() - t
    assert col.count() == len(ids), col.count()
    t = time.perf_counter()
    col.query(query_embeddings=[queries[0]], n_results=10, include=["distances"])
    first_s = time.perf_counter() - t
    for q in queries[:50]:
        col.query(query_embeddings=[q], n_results=10, include=["distances"])
    lat, found = [], []
    for q in queries:
        t = time.perf_counter_ns()
        r = col.query(query_embeddings=[q], n_results=10, include=["distances"])
        lat.append(time.perf_counter_ns() - t)
        found.append([index[i] for i in r["ids"][0]])
    del col, client
    return {
        "add_s": add_s,
        "items_per_s": len(ids) / add_s,
        "first_query_s": first_s,
        "default": {"query": summary_us(lat), "found": found},
    }


# ----- main -----------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="the bench_baseline binary")
    ap.add_argument("--data", required=True, help="chitchat dataset.json")
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200, help="search queries")
    ap.add_argument("--repeat", type=int, default=10, help="timed passes over the queries")
    ap.add_argument("--rounds", type=int, default=3, help="search rounds (Rust, Python)")
    ap.add_argument("--modes", default="keyword,hybrid,semantic")
    ap.add_argument("--vectors", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--vector-queries", type=int, default=500)
    ap.add_argument("--batch", type=int, default=1000, help="vectors per add/upsert")
    ap.add_argument("--vector-sets", default="normal,clustered")
    ap.add_argument("--ef", default="", help="extra memdb ef values, comma-separated")
    ap.add_argument("--skip", default="", help="comma-separated: insert,search,vectors")
    ap.add_argument("--wheel-bytes", type=int, default=0)
    ap.add_argument("--build-s", type=float, default=0.0)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    modes = a.modes.split(",")
    work = tempfile.mkdtemp(prefix="memdb-pybench-")
    res = {
        "memdb": memdb.__version__,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "loadavg_start": os.getloadavg(),
    }
    try:
        convs, total = load_corpus(a.data, a.messages)
        print(f"corpus: {len(convs)} conversations, {total} messages", file=sys.stderr)
        convs_json = os.path.join(work, "convs.json")
        dicts = engine_dicts(convs)
        json.dump(dicts, open(convs_json, "w"))
        queries = make_queries(convs, a.queries, seed=58)
        queries_json = os.path.join(work, "queries.json")
        json.dump(queries, open(queries_json, "w"))
        res["corpus"] = {"conversations": len(convs), "messages": total}

        # 2. Bulk insert (first: the Python-written hashing store is the
        # search store of 1).
        search_store = os.path.join(work, "py-hashing")
        if "insert" not in skip:
            res["insert"] = {}
            for emb in ("none", "hashing"):
                r = rust(a.baseline, "insert", "--dir", os.path.join(work, f"rust-{emb}"),
                         "--embedder", emb, "--input", convs_json)
                print(f"insert {emb} rust: {r}", file=sys.stderr)
                p = py_insert(os.path.join(work, f"py-{emb}"), emb, convs)
                print(f"insert {emb} python: {p}", file=sys.stderr)
                nat = py_insert_native(os.path.join(work, f"native-{emb}"), emb, dicts)
                print(f"insert {emb} native: {nat}", file=sys.stderr)
                res["insert"][emb] = {"rust": r, "python": p, "native": nat}
                for side in ("rust", "native"):
                    shutil.rmtree(os.path.join(work, f"{side}-{emb}"), ignore_errors=True)
                if emb == "none":
                    shutil.rmtree(os.path.join(work, f"py-{emb}"), ignore_errors=True)
        else:
            p = py_insert(search_store, "hashing", convs)

        # 1. Search overhead, on the same store, rounds alternating.
        if "search" not in skip:
            res["search"] = []
            for r in range(a.rounds):
                rs = rust(a.baseline, "search", "--dir", search_store, "--embedder", "hashing",
                          "--queries", queries_json, "--modes", ",".join(modes),
                          "--repeat", str(a.repeat))
                ps = py_search(search_store, "hashing", queries, modes, a.repeat)
                res["search"].append({"rust": rs, "python": ps})
                print(f"search round {r + 1}: " + ", ".join(
                    f"{m} rust {rs[m]['p50_us']:.1f} us / python {ps[m]['full']['p50_us']:.1f} us"
                    for m in modes), file=sys.stderr)
        shutil.rmtree(search_store, ignore_errors=True)

        # 3. memdb vs ChromaDB, on each vector set.
        res["vectors"] = {}
        for vset in filter(None, a.vector_sets.split(",")):
            if "vectors" in skip:
                break
            rng = np.random.default_rng(58)
            if vset == "normal":
                # Random normal, normalized: no structure (HNSW's hard case).
                vecs = unit_rows(rng, a.vectors, a.dim)
                qv = unit_rows(rng, a.vector_queries, a.dim)
            else:
                # Clustered: both data and queries drawn around the same
                # centers (200 centers x 100 vectors at 20K; noise ~ 0.7).
                both = clustered_rows(
                    rng, a.vectors + a.vector_queries, a.dim, max(a.vectors // 100, 1), 0.7
                )
                vecs, qv = both[: a.vectors], both[a.vectors :]
            id_rng = random.Random(58)
            ids = [str(uuid.UUID(int=id_rng.getrandbits(128), version=4)) for _ in range(a.vectors)]
            texts = [t for _, _, msgs in convs for _, t, _ in msgs]
            docs = [texts[i % len(texts)] for i in range(a.vectors)]
            truth = np.argsort(-(qv @ vecs.T), axis=1)[:, :10].tolist()
            efs = [None] + [int(e) for e in a.ef.split(",") if e]
            sub = os.path.join(work, vset)
            os.makedirs(sub)
            m = bench_memdb_vectors(sub, ids, vecs, qv, a.batch, efs)
            print(f"{vset}: memdb vectors add {m['items_per_s']:.0f}/s", file=sys.stderr)
            c_docs = bench_chroma(sub, ids, vecs, qv, docs, a.batch)
            print(f"{vset}: chroma (docs) add {c_docs['items_per_s']:.0f}/s", file=sys.stderr)
            c_vec = bench_chroma(sub, ids, vecs, qv, None, a.batch)
            print(f"{vset}: chroma (vectors) add {c_vec['items_per_s']:.0f}/s", file=sys.stderr)
            for side in (m, c_docs, c_vec):
                for k, v in side.items():
                    if isinstance(v, dict) and "found" in v:
                        v["recall_at_10"] = recall(v.pop("found"), truth)
            res["vectors"][vset] = {
                "n": a.vectors, "dim": a.dim, "queries": a.vector_queries, "batch": a.batch,
                "memdb": m, "chroma_docs": c_docs, "chroma_vectors": c_vec,
            }
            shutil.rmtree(sub, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["loadavg_end"] = os.getloadavg()
    res["wheel_bytes"] = a.wheel_bytes
    res["build_s"] = a.build_s
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)
    print(table(res, modes))


def table(res, modes):
    L = []
    add = L.append
    add(f"memdb {res['memdb']}, Python {res['python']}, NumPy {res['numpy']}; "
        f"load average {res['loadavg_start'][0]:.2f} at start, {res['loadavg_end'][0]:.2f} at end")
    add("")
    add("| measure | Rust | Python | Python - Rust / ratio | target | met |")
    add("|---|---|---|---|---|---|")
    if "search" in res:
        rounds = res["search"]
        for mode in modes:
            rust50 = statistics.median(r["rust"][mode]["p50_us"] for r in rounds)
            rust90 = statistics.median(r["rust"][mode]["p90_us"] for r in rounds)
            py50 = statistics.median(r["python"][mode]["full"]["p50_us"] for r in rounds)
            py90 = statistics.median(r["python"][mode]["full"]["p90_us"] for r in rounds)
            nat50 = statistics.median(r["python"][mode]["native"]["p50_us"] for r in rounds)
            over = py50 - rust50
            each = ", ".join(
                f"{r['python'][mode]['full']['p50_us'] - r['rust'][mode]['p50_us']:.1f}"
                for r in rounds)
            tgt = "< 20 us" if mode == "keyword" else "(info)"
            met = ("yes" if over < 20 else "no") if mode == "keyword" else ""
            add(f"| search {mode} p50 (us), median of {len(rounds)} rounds | {rust50:.1f} | "
                f"{py50:.1f} | {over:+.1f} us (rounds: {each}) | {tgt} | {met} |")
            add(f"| search {mode} p90 (us) | {rust90:.1f} | {py90:.1f} | {py90 - rust90:+.1f} us | | |")
            add(f"| search {mode} p50, native `Store.search` only (us) | {rust50:.1f} | "
                f"{nat50:.1f} | {nat50 - rust50:+.1f} us | | |")
            lay50 = statistics.median(r["python"][mode]["layer"]["p50_us"] for r in rounds)
            hits = rounds[0]["python"][mode]["hits_per_query"]
            add(f"| search {mode} p50, Python layer only (`build` of {hits:.1f} hits, us) | | "
                f"{lay50:.1f} | | | |")
    if "insert" in res:
        for emb, r in res["insert"].items():
            n = r["rust"]["messages"]
            rr, pp = n / r["rust"]["total_s"], n / r["python"]["total_s"]
            rc, pc = n / r["rust"]["create_s"], n / r["python"]["create_s"]
            add(f"| bulk insert {n} msgs, embedder {emb}: msgs/s (total) | {rr:,.0f} | {pp:,.0f} | "
                f"{pp / rr:.2f}x | >= 0.9x | {'yes' if pp / rr >= 0.9 else 'no'} |")
            add(f"| ... create calls only: msgs/s | {rc:,.0f} | {pc:,.0f} | {pc / rc:.2f}x | | |")
            if "native" in r:
                nr = n / r["native"]["total_s"]
                nc = n / r["native"]["create_s"]
                add(f"| ... native `Store.create_conversation` only: msgs/s (total / create) | "
                    f"{rr:,.0f} / {rc:,.0f} | {nr:,.0f} / {nc:,.0f} | {nr / rr:.2f}x / {nc / rc:.2f}x | | |")
    for vset, v in res.get("vectors", {}).items():
        m, cd, cv = v["memdb"], v["chroma_docs"], v["chroma_vectors"]
        add("")
        add(f"memdb vs ChromaDB, {vset} set: {v['n']} vectors of {v['dim']} (cosine), batches of {v['batch']}, "
            f"{v['queries']} queries top-10 (numpy fast path in memdb: {m['numpy_path']})")
        add("")
        add("| | memdb | Chroma (+docs) | Chroma (vectors only) | memdb / Chroma(+docs) | target | met |")
        add("|---|---|---|---|---|---|---|")
        ar = m["items_per_s"] / cd["items_per_s"]
        add(f"| add items/s | {m['items_per_s']:,.0f} | {cd['items_per_s']:,.0f} | "
            f"{cv['items_per_s']:,.0f} | {ar:.2f}x | faster | {'yes' if ar > 1 else 'no'} |")
        add(f"| first query after add (ms) | {m['first_query_s'] * 1e3:.1f} | "
            f"{cd['first_query_s'] * 1e3:.1f} | {cv['first_query_s'] * 1e3:.1f} | | | |")
        for key in [k for k in m if k == "default" or k.startswith("ef=")]:
            mq = m[key]["query"]
            qr = cd["default"]["query"]["p50_us"] / mq["p50_us"]
            tgt, met = ("faster", "yes" if qr > 1 else "no") if key == "default" else ("", "")
            add(f"| query p50 (us), memdb {key} | {mq['p50_us']:.0f} | "
                f"{cd['default']['query']['p50_us']:.0f} | {cv['default']['query']['p50_us']:.0f} | "
                f"{qr:.2f}x faster | {tgt} | {met} |")
            add(f"| query p90 (us), memdb {key} | {mq['p90_us']:.0f} | "
                f"{cd['default']['query']['p90_us']:.0f} | {cv['default']['query']['p90_us']:.0f} | | | |")
            add(f"| recall@10, memdb {key} | {m[key]['recall_at_10']:.3f} | "
                f"{cd['default']['recall_at_10']:.3f} | {cv['default']['recall_at_10']:.3f} | | | |")
    if res.get("wheel_bytes"):
        add("")
        add(f"wheel: {res['wheel_bytes'] / 2**20:.1f} MiB; release build: {res['build_s']:.0f} s")
    return "\n".join(L)


if __name__ == "__main__":
    main()
