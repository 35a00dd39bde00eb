"""Bounded load client for memdb-server: N connections for S seconds of
mixed store / query / context requests on loopback; prints p50/p99 per route
and exits non-zero on any error. Needs httpx (the e2e venv has it).

Usage: python scripts/load.py URL API_KEY [CONNECTIONS] [SECONDS] [STORE_FRACTION]
Start the server with MEMDB_RATE_LIMIT=0 (one client IP would be throttled).
"""

import asyncio
import random
import sys
import time

import httpx

WORDS = ("rust tokio axum index search memory vector embedding budget context "
         "garden kyoto sourdough borrow lifetime summary prune label folder").split()


def sentence(n=12):
    return " ".join(random.choice(WORDS) for _ in range(n))


async def worker(client, deadline, lat, errors, store_fraction):
    while time.monotonic() < deadline:
        r = random.random()
        if r < store_fraction:
            route, method, body = "/api/v1/conversations", "POST", {
                "label": random.choice(WORDS), "folder": "/load/" + random.choice(WORDS),
                "messages": [{"role": "user", "content": sentence()},
                             {"role": "assistant", "content": sentence()}]}
        elif r < store_fraction + (1 - store_fraction) * 0.6:
            route, method, body = "/api/v1/query", "POST", {"query": " ".join(random.sample(WORDS, 2)), "limit": 10}
        else:
            route, method, body = "/api/v1/context/assemble", "POST", {
                "query": " ".join(random.sample(WORDS, 3)), "context_budget": 2000}
        t = time.monotonic()
        try:
            resp = await client.request(method, route, json=body)
            ok = resp.status_code in (200, 201)
        except httpx.HTTPError as e:
            ok, resp = False, e
        lat.setdefault(route, []).append(time.monotonic() - t)
        if not ok:
            errors.append((route, getattr(resp, "status_code", None), str(getattr(resp, "text", resp))[:200]))


async def main():
    url, key = sys.argv[1], sys.argv[2]
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 60
    store_fraction = float(sys.argv[5]) if len(sys.argv) > 5 else 0.2
    limits = httpx.Limits(max_connections=conns, max_keepalive_connections=conns)
    lat, errors = {}, []
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"},
                                 limits=limits, timeout=60) as client:
        deadline = time.monotonic() + secs
        await asyncio.gather(*(worker(client, deadline, lat, errors, store_fraction) for _ in range(conns)))
    total = sum(len(v) for v in lat.values())
    print(f"{conns} connections, {secs:.0f} s, store fraction {store_fraction}: {total} requests ({total / secs:.0f}/s), {len(errors)} errors")
    for route, xs in sorted(lat.items()):
        xs.sort()
        p = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1000
        print(f"  {route:28s} n={len(xs):6d} p50={p(0.5):7.1f} ms p99={p(0.99):7.1f} ms")
    for e in errors[:5]:
        print("  error:", e)
    sys.exit(1 if errors else 0)


asyncio.run(main())
