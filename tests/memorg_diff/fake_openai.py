#!/usr/bin/env python3
"""Deterministic, offline, OpenAI-compatible stub server (stdlib only).

Used by the memorg <-> memdb differential test. Both sides point their OpenAI
client at this server, so both see *exactly* the same embedding for the same
text and the comparison is about the systems, not about a model.

Endpoints
---------
POST /v1/embeddings          OpenAI embeddings API (input: str | [str] | [int] | [[int]])
POST /v1/chat/completions    OpenAI chat completions API (non-streaming only)
GET  /v1/models              a tiny model list
GET  /health                 {"ok": true}
GET  /stats                  request counters (for tests: did memdb call us?)

Any bearer key (or none) is accepted. Paths are also accepted without the
``/v1`` prefix (``/embeddings``, ``/chat/completions``).

Embedding function (``embed(text, dim)``) -- exact definition
-------------------------------------------------------------
1. ``words = re.findall(r"[a-z0-9]+", text.lower())``  (ASCII letters/digits runs;
   everything else separates tokens).
2. For every word ``w`` add feature ``"w:" + w`` with weight 1.0, and for every
   character trigram ``g`` of ``"<" + w + ">"`` add feature ``"g:" + g`` with
   weight 0.25 (so "postgres" and "postgresql", "porto" and "portugal" share
   features and get a positive cosine).
3. Each feature ``f`` is hashed with ``h = sha256(f.encode("utf-8")).digest()``;
   bucket ``= int.from_bytes(h[0:8], "little") % dim``; sign ``= +1`` if
   ``h[8] & 1 == 0`` else ``-1``; ``vec[bucket] += sign * weight``.
4. The vector is L2-normalised. A text with no features (empty / only
   punctuation) maps to the unit vector ``e_0`` (never a zero vector).

``dim`` is the request's ``dimensions`` field if present (must be 1..8192),
else ``--dim`` (default 1536, text-embedding-ada-002's size).
``encoding_format: "base64"`` (what openai-python sends by default) returns the
little-endian float32 bytes base64-encoded; anything else returns float lists.

Chat completions (fixed, deterministic content)
----------------------------------------------
* JSON mode (``response_format.type == "json_object"``):
  - entity-extraction prompt (system prompt mentions "entities" without
    "summary") -> ``{"entities": []}``
  - summarization/compression prompt (mentions "summary") ->
    ``{"summary": <first 20 words of the content>, "preserved_entities": []}``
  - anything else -> ``{}``
* Plain text:
  - "Text to optimize:" prompt (memorg TokenOptimizer) with
    "approximately N tokens" -> first ``max(1, N // 2)`` words of the text
  - "Content to summarize:" / "Summaries to combine:" prompts (memorg
    ProgressiveSummarization) -> first 20 words of the text block
  - anything else -> first 20 words of the last user message
"Words" are ``str.split()`` tokens joined by single spaces.

Usage: ``python3 fake_openai.py [--port 0] [--host 127.0.0.1] [--dim 1536]``.
The first line on stdout is the bound port number (then stdout is flushed);
logs go to stderr.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_DIM = 1536
WORD_RE = re.compile(r"[a-z0-9]+")
SUMMARY_WORDS = 20

_STATS_LOCK = threading.Lock()
STATS = {"embeddings_requests": 0, "embeddings_inputs": 0, "chat_requests": 0, "errors": 0}


def _bump(key: str, n: int = 1) -> None:
    with _STATS_LOCK:
        STATS[key] = STATS.get(key, 0) + n


def features(text: str):
    """Yield (feature, weight) pairs for ``text`` (see module docstring)."""
    for w in WORD_RE.findall(text.lower()):
        yield "w:" + w, 1.0
        padded = "<" + w + ">"
        for i in range(len(padded) - 2):
            yield "g:" + padded[i : i + 3], 0.25


def embed(text: str, dim: int = DEFAULT_DIM) -> list[float]:
    """Deterministic feature-hashing embedding, L2-normalised."""
    vec = [0.0] * dim
    any_feature = False
    for feat, weight in features(text):
        h = hashlib.sha256(feat.encode("utf-8")).digest()
        bucket = int.from_bytes(h[0:8], "little") % dim
        sign = 1.0 if (h[8] & 1) == 0 else -1.0
        vec[bucket] += sign * weight
        any_feature = True
    norm = math.sqrt(sum(x * x for x in vec))
    if not any_feature or norm == 0.0:
        out = [0.0] * dim
        out[0] = 1.0
        return out
    return [x / norm for x in vec]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def first_words(text: str, n: int) -> str:
    return " ".join(text.split()[: max(0, n)])


def _between(text: str, start: str, end: str | None) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    i += len(start)
    if end is not None:
        j = text.find(end, i)
        if j >= 0:
            return text[i:j]
    return text[i:]


def _message_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def chat_reply(body: dict) -> str:
    messages = body.get("messages") or []
    system = " ".join(_message_text(m.get("content")) for m in messages if m.get("role") == "system")
    users = [_message_text(m.get("content")) for m in messages if m.get("role") == "user"]
    last_user = users[-1] if users else ""
    rf = body.get("response_format") or {}
    if isinstance(rf, dict) and rf.get("type") == "json_object":
        low = system.lower()
        if "summary" in low or "summariz" in low:
            content = _between(last_user, "Content to summarize:\n", "\n\nImportant entities")
            if content is None:
                content = last_user
            return json.dumps({"summary": first_words(content, SUMMARY_WORDS), "preserved_entities": []})
        if "entit" in low:
            return json.dumps({"entities": []})
        return "{}"
    if "Text to optimize:" in last_user:
        m = re.search(r"approximately (\d+) tokens", last_user)
        n = int(m.group(1)) if m else 40
        text = _between(last_user, "Text to optimize:\n", None) or ""
        return first_words(text, max(1, n // 2))
    for start in ("Content to summarize:\n", "Summaries to combine:\n"):
        block = _between(last_user, start, "\n\nImportant entities")
        if block is not None:
            return first_words(block, SUMMARY_WORDS)
    return first_words(last_user, SUMMARY_WORDS)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-openai/1.0"
    default_dim = DEFAULT_DIM

    def log_message(self, fmt, *args):  # stderr, terse
        sys.stderr.write("fake_openai: " + (fmt % args) + "\n")

    # -- helpers ---------------------------------------------------------
    def _send_json(self, status: int, obj) -> None:
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, etype: str = "invalid_request_error") -> None:
        _bump("errors")
        self._send_json(status, {"error": {"message": message, "type": etype, "param": None, "code": None}})

    def _read_json(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            return json.loads(raw.decode("utf-8") or "{}")
        except Exception:
            return None

    def _route(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.startswith("/v1/"):
            path = path[3:]
        return path

    # -- verbs -----------------------------------------------------------
    def do_GET(self):
        route = self._route()
        if route == "/health":
            return self._send_json(200, {"ok": True})
        if route == "/stats":
            with _STATS_LOCK:
                return self._send_json(200, dict(STATS))
        if route == "/models":
            return self._send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                for m in ("text-embedding-ada-002", "text-embedding-3-small", "gpt-4o-mini")]})
        return self._error(404, f"unknown path {self.path}")

    def do_POST(self):
        route = self._route()
        body = self._read_json()
        if not isinstance(body, dict):
            return self._error(400, "body must be a JSON object")
        if route == "/embeddings":
            return self._embeddings(body)
        if route == "/chat/completions":
            return self._chat(body)
        return self._error(404, f"unknown path {self.path}")

    def _embeddings(self, body: dict):
        inp = body.get("input")
        if isinstance(inp, str):
            texts = [inp]
        elif isinstance(inp, list) and all(isinstance(x, str) for x in inp):
            texts = list(inp)
        elif isinstance(inp, list) and all(isinstance(x, int) for x in inp):
            texts = [" ".join(f"t{x}" for x in inp)]  # token ids: hash them as words
        elif isinstance(inp, list) and all(isinstance(x, list) for x in inp):
            texts = [" ".join(f"t{x}" for x in row) for row in inp]
        else:
            return self._error(400, "'input' must be a string, array of strings, or token arrays")
        if not texts:
            return self._error(400, "'input' must not be empty")
        dim = body.get("dimensions", self.default_dim)
        if not isinstance(dim, int) or not (1 <= dim <= 8192):
            return self._error(400, "'dimensions' must be an integer in 1..8192")
        b64 = body.get("encoding_format") == "base64"
        data = []
        tokens = 0
        for i, t in enumerate(texts):
            v = embed(t, dim)
            tokens += max(1, len(t.split()))
            if b64:
                emb = base64.b64encode(struct.pack("<%df" % dim, *v)).decode("ascii")
            else:
                emb = v
            data.append({"object": "embedding", "index": i, "embedding": emb})
        _bump("embeddings_requests")
        _bump("embeddings_inputs", len(texts))
        return self._send_json(200, {
            "object": "list",
            "data": data,
            "model": body.get("model", "text-embedding-ada-002"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })

    def _chat(self, body: dict):
        if body.get("stream"):
            return self._error(400, "streaming is not supported by the fake server")
        content = chat_reply(body)
        _bump("chat_requests")
        n_prompt = sum(len(_message_text(m.get("content")).split()) for m in body.get("messages") or [])
        n_out = len(content.split())
        return self._send_json(200, {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "gpt-4o-mini"),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out},
        })


def serve(host: str = "127.0.0.1", port: int = 0, dim: int = DEFAULT_DIM, quiet: bool = False):
    """Start the server in a daemon thread; returns (server, port)."""
    attrs = {"default_dim": dim}
    if quiet:
        attrs["log_message"] = lambda self, fmt, *args: None
    handler = type("BoundHandler", (Handler,), attrs)
    srv = ThreadingHTTPServer((host, port), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    return srv, srv.server_address[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 = pick a free port (printed on stdout line 1)")
    ap.add_argument("--dim", type=int, default=DEFAULT_DIM)
    ap.add_argument("--quiet", action="store_true", help="no per-request log lines on stderr")
    args = ap.parse_args(argv)
    attrs = {"default_dim": args.dim}
    if args.quiet:
        attrs["log_message"] = lambda self, fmt, *a: None
    handler = type("BoundHandler", (Handler,), attrs)
    srv = ThreadingHTTPServer((args.host, args.port), handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
