"""Load client for memdb-server (issue #5 "Done means").

C connections (default 64) on loopback, each sending one request at a time
for S seconds (default 60), mixed routes with bodies drawn from the chitchat
corpus (benches/data/dataset.json).

Closed loop by default: each connection sends its next request as soon as
the previous answer arrives, which measures the most the server can serve;
by Little's law the latency is then C x (service time) / cores, whatever
the server does. With --rate R (open loop), the C connections together send
R requests per second on a fixed schedule (connection i every C/R s, offset
by i/R), and each latency is measured from the request's *scheduled* time,
so a request delayed behind a slow one counts its wait (no coordinated
omission). That measures latency at a given load.

  store     POST /api/v1/conversations   a chitchat conversation (2..8 messages), folder /load
  hybrid    POST /api/v1/query           a chitchat message as the query, mode hybrid, limit 10
  keyword   POST /api/v1/query           1..3 words of a chitchat message, mode keyword, limit 10
  context   POST /api/v1/context/assemble  a chitchat message, budget 2000 or 4000,
                                           half the time a preferred label

Stdlib only (asyncio streams, HTTP/1.1 keep-alive; no httpx), so the client
costs little CPU on a 2-core machine: its own CPU time is reported. Prints
per route: count, errors, p50, p90, p99, max (ms, client-side, from the
first byte sent to the last byte read), the server's own mean per route
(from /metrics before and after), and the load average sampled every 5 s.
Exits 1 on any error (non-2xx or transport failure). --json FILE writes the
figures.

Usage: python3 benches/load/load.py --url http://127.0.0.1:PORT --key KEY
           [--connections 64] [--seconds 60] [--mix store=20,hybrid=30,keyword=20,context=30]
           [--query-pool N] [--rate R]
Start the server with MEMDB_RATE_LIMIT=0 (one client IP would be throttled).
"""

import argparse
import asyncio
import gc
import json
import os
import random
import re
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
WORD = re.compile(r"[A-Za-z]{3,}")


def load_corpus(path):
    with open(path) as f:
        raw = json.load(f)
    convs = []
    for key in sorted(raw):
        c = raw[key]
        msgs = []
        first = None
        for turn in c.get("messages", []):
            for m in turn:
                text = (m.get("text") or "").strip()
                if not text:
                    continue
                first = first or m.get("sender")
                msgs.append({"role": "user" if m.get("sender") == first else "assistant",
                             "content": text})
        if msgs:
            # As benches/src/corpus.rs labels them, so preferred labels match
            # the seeded conversations: control characters blanked, trimmed,
            # cut to memdb's 500-byte limit.
            prompt = re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", c.get("prompt") or "").strip()
            label = clip(prompt) if prompt else f"chitchat {key[:8]}"
            convs.append((label, msgs))
    return convs


def clip(label, limit=500):
    b = label.encode()
    if len(b) <= limit:
        return label
    return b[:limit].decode("utf-8", "ignore").rstrip()


class Bodies:
    def __init__(self, convs, seed, query_pool=0):
        self.convs = convs
        self.rng = random.Random(seed)
        self.texts = [m["content"] for _, ms in convs for m in ms if len(m["content"]) >= 12]
        if query_pool:
            # The first N texts only: after one pass every hybrid/context
            # query is a query-cache hit (isolates the cache-miss cost).
            self.texts = self.texts[:query_pool]
        self.labels = [label for label, _ in convs]

    def make(self, kind):
        r = self.rng
        if kind == "store":
            label, msgs = r.choice(self.convs)
            start = r.randrange(len(msgs))
            part = msgs[start:start + r.randint(2, 8)]
            return "/api/v1/conversations", {"label": clip(label, 490) + " (load)", "folder": "/load",
                                             "messages": part}
        if kind == "hybrid":
            return "/api/v1/query", {"query": r.choice(self.texts)[:500], "limit": 10,
                                     "mode": "hybrid"}
        if kind == "keyword":
            words = []
            while not words:
                words = WORD.findall(r.choice(self.texts))
            k = min(len(words), r.randint(1, 3))
            # Lowercase: AND, OR and NOT in capitals are query operators (§16).
            return "/api/v1/query", {"query": " ".join(r.sample(words, k)).lower(), "limit": 10,
                                     "mode": "keyword"}
        body = {"query": r.choice(self.texts)[:500], "context_budget": r.choice([2000, 4000])}
        if r.random() < 0.5:
            body["preferred_labels"] = [r.choice(self.labels)]
        return "/api/v1/context/assemble", body


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(chunks)
    else:
        body = b""
    return status, body


class Conn:
    def __init__(self, host, port, key):
        self.host, self.port, self.key = host, port, key
        self.reader = self.writer = None

    async def request(self, method, path, body=None):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        data = json.dumps(body).encode() if body is not None else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Authorization: Bearer {self.key}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n").encode()
        self.writer.write(head + data)
        await self.writer.drain()
        return await read_response(self.reader)

    def close(self):
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def worker(conn, bodies, kinds, weights, deadline, lat, errors, when, schedule=None):
    """schedule: (first send time, interval) for open-loop runs, else None."""
    next_at = schedule[0] if schedule else None
    while time.monotonic() < deadline:
        kind = bodies.rng.choices(kinds, weights)[0]
        path, body = bodies.make(kind)
        if schedule:
            now = time.monotonic()
            if next_at > now:
                await asyncio.sleep(next_at - now)
            if next_at >= deadline:
                break
            t = next_at
            next_at += schedule[1]
        else:
            t = time.monotonic()
        try:
            status, resp = await conn.request("POST", path, body)
            ok = status in (200, 201)
            detail = None if ok else (status, resp[:200])
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            ok, detail = False, (None, repr(e))
            conn.close()
        lat[kind].append(time.monotonic() - t)
        when.append((time.monotonic() - t, t, kind))
        if not ok:
            errors.append((kind, *detail))


def parse_metrics(text):
    """{(route, stat): value} of the request-duration histogram: sum, count,
    and the cumulative bucket counts as ("le", bound)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'memdb_http_request_duration_seconds_(sum|count|bucket)\{([^}]*)\} (\S+)', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            stat = m.group(1) if m.group(1) != "bucket" else ("le", labels.get("le"))
            out[(labels.get("route"), stat)] = float(m.group(3))
    return out


async def scrape(conn):
    try:
        status, body = await conn.request("GET", "/metrics")
    except (asyncio.IncompleteReadError, ConnectionError):
        # The side connection sat idle through the run and the server
        # closed it (its keep-alive idle timeout): reconnect once.
        conn.close()
        status, body = await conn.request("GET", "/metrics")
    return parse_metrics(body.decode()) if status == 200 else {}


async def sample_load(samples, stop):
    while not stop.is_set():
        with open("/proc/loadavg") as f:
            samples.append(float(f.read().split()[0]))
        try:
            await asyncio.wait_for(stop.wait(), 5)
        except asyncio.TimeoutError:
            pass


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", default=os.environ.get("MEMDB_API_KEY"))
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--mix", default="store=20,hybrid=30,keyword=20,context=30")
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "dataset.json"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--query-pool", type=int, default=0,
                    help="draw queries from the first N corpus texts only (0: all 218K)")
    ap.add_argument("--rate", type=float, default=0,
                    help="open loop: R requests/s in total on a fixed schedule (0: closed loop)")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    if not a.key:
        sys.exit("--key or MEMDB_API_KEY is required")
    mix = {k: float(v) for k, v in (p.split("=") for p in a.mix.split(","))}
    kinds = [k for k in mix if mix[k] > 0]
    bad = [k for k in kinds if k not in ("store", "hybrid", "keyword", "context")]
    if bad or not kinds:
        sys.exit(f"bad --mix: {a.mix}")
    weights = [mix[k] for k in kinds]
    u = urllib.parse.urlparse(a.url)
    host, port = u.hostname, u.port or 80

    convs = load_corpus(a.data)
    side = Conn(host, port, a.key)
    before = await scrape(side)
    conns = [Conn(host, port, a.key) for _ in range(a.connections)]
    lat = {k: [] for k in kinds}
    errors, loads, stop, when = [], [], asyncio.Event(), []
    sampler = asyncio.create_task(sample_load(loads, stop))
    # Built before the clock starts: each copies the 218K corpus texts, which
    # took ~2 s for 64 connections and made every first request look late.
    bodies = [Bodies(convs, a.seed * 1000 + i, a.query_pool) for i in range(len(conns))]
    # The corpus and the bodies are millions of objects: a full collection
    # over them stalled the event loop ~200 ms, every request in flight
    # looked that much slower while the server's own histogram showed none
    # of it. Freeze them out of the collector.
    gc.collect()
    gc.freeze()
    cpu0, t0 = time.process_time(), time.monotonic()
    deadline = t0 + a.seconds
    interval = a.connections / a.rate if a.rate > 0 else None
    await asyncio.gather(*(worker(c, bodies[i], kinds, weights,
                                  deadline, lat, errors, when,
                                  (t0 + i / a.rate, interval) if interval else None)
                           for i, c in enumerate(conns)))
    wall, client_cpu = time.monotonic() - t0, time.process_time() - cpu0
    stop.set()
    await sampler
    after = await scrape(side)
    for c in conns + [side]:
        c.close()

    total = sum(len(v) for v in lat.values())
    loop = f"open loop at {a.rate:g} req/s" if a.rate > 0 else "closed loop"
    print(f"{a.connections} connections, {loop}, {wall:.1f} s, mix {a.mix}: {total} requests "
          f"({total / wall:.0f}/s), {len(errors)} errors; client CPU {client_cpu:.1f} s "
          f"({100 * client_cpu / wall:.0f}% of one core)")
    print(f"load average (1 min) during the run: min {min(loads):.2f}, max {max(loads):.2f}, "
          f"samples {', '.join(f'{x:.1f}' for x in loads)}")
    route_of = {"store": "/api/v1/conversations", "hybrid": "/api/v1/query",
                "keyword": "/api/v1/query", "context": "/api/v1/context/assemble"}
    server = {}
    for route in set(route_of.values()):
        n = after.get((route, "count"), 0) - before.get((route, "count"), 0)
        s = after.get((route, "sum"), 0) - before.get((route, "sum"), 0)
        server[route] = (n, 1000 * s / n if n else float("nan"))
    print(f"  {'route':8s} {'count':>7s} {'err':>4s} {'p50':>8s} {'p90':>8s} {'p99':>8s} {'max':>8s}  (ms)")
    report = {"connections": a.connections, "rate": a.rate, "seconds": wall, "mix": a.mix, "requests": total,
              "errors": len(errors), "client_cpu_s": client_cpu, "loadavg": loads, "routes": {},
              "server_mean_ms": {r: v[1] for r, v in server.items()}}
    for kind in kinds:
        xs = sorted(lat[kind])
        errs = sum(1 for e in errors if e[0] == kind)
        row = {"count": len(xs), "errors": errs, "p50": pct(xs, .5), "p90": pct(xs, .9),
               "p99": pct(xs, .99), "max": xs[-1] * 1000 if xs else float("nan")}
        report["routes"][kind] = row
        print(f"  {kind:8s} {row['count']:7d} {errs:4d} {row['p50']:8.1f} {row['p90']:8.1f} "
              f"{row['p99']:8.1f} {row['max']:8.1f}")
    for route, (n, mean) in sorted(server.items()):
        def slower(le):
            done = after.get((route, ("le", le)), 0) - before.get((route, ("le", le)), 0)
            return n - done
        print(f"  server-side mean {route}: {mean:.1f} ms over {n:.0f} requests; "
              f"{slower('0.05'):.0f} took over 50 ms, {slower('0.1'):.0f} over 100 ms "
              f"(handler time, from /metrics)")
    slow = sorted(when, reverse=True)[:max(1, len(when) // 100)]
    if slow:
        secs = sorted({int(t - t0) for _, t, _ in slow})
        print(f"  slowest 1% ({len(slow)} requests, >= {slow[-1][0] * 1000:.0f} ms) started at second(s) "
              f"{', '.join(map(str, secs[:20]))}{' ...' if len(secs) > 20 else ''} of the run")
    for e in errors[:5]:
        print("  error:", e)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    sys.exit(1 if errors else 0)


asyncio.run(main())
