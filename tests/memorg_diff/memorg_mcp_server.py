#!/usr/bin/env python3
"""Launch memorg 0.1.2's MCP server (``app.mcp.server.MemorgMCP``) on a working transport.

memorg 0.1.2 as published cannot start its MCP server by any shipped route
(see CONTRACT.md, "memorg-mcp as shipped"):
  * the wheel declares no ``memorg-mcp`` console script (only ``memorg``);
  * ``app/mcp/cli.py:20`` is a SyntaxError (escaped triple quotes);
  * ``MemorgMCP.run`` (``app/mcp/server.py:187``) calls ``FastMCP.run(host=, port=)``
    but fastmcp 0.1.0's ``run`` only takes ``transport`` -> TypeError;
  * fastmcp 0.1.0 needs ``mcp<2`` (with mcp 2.x ``Server.list_tools`` is gone).
This launcher builds the very same ``MemorgMCP`` object (same six tools, same
lazy ``MemorgSystem``) and runs its FastMCP instance the way fastmcp 0.1.0
itself does (``run_stdio_async`` / ``run_sse_async``).

``MemorgSystem.search_context`` ``print()``s its results to stdout
(``app/main.py:206``), which corrupts the stdio JSON-RPC stream. By default
this launcher keeps the protocol on the real stdout and points ``sys.stdout``
at stderr; ``--raw-stdout`` disables that to demonstrate the defect.

Usage:
  memorg_mcp_server.py --db-path /tmp/x.db                     # stdio
  memorg_mcp_server.py --db-path /tmp/x.db --transport sse --host 127.0.0.1 --port 8765
Environment: OPENAI_API_KEY, OPENAI_BASE_URL (the AsyncOpenAI client reads both),
TIKTOKEN_CACHE_DIR (o200k_base BPE file, see run_memorg.py).
"""
from __future__ import annotations

import argparse
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db-path", required=True)
    ap.add_argument("--transport", choices=["stdio", "sse"], default="stdio")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--raw-stdout", action="store_true",
                    help="leave sys.stdout on the protocol stream (shows the print() defect)")
    args = ap.parse_args()

    if args.transport == "sse":
        # fastmcp 0.1.0 reads host/port from its Settings (env prefix FASTMCP_).
        os.environ["FASTMCP_HOST"] = args.host
        os.environ["FASTMCP_PORT"] = str(args.port)

    # app.main configures logging with FileHandler('memorg.log') in the CWD.
    from app.mcp.server import MemorgMCP  # noqa: E402

    server = MemorgMCP(db_path=args.db_path)

    if args.transport == "sse":
        sys.stdout = sys.stderr
        server.mcp.run("sse")
        return 0

    import anyio
    from io import TextIOWrapper
    from mcp.server.stdio import stdio_server

    proto_out = anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    if not args.raw_stdout:
        sys.stdout = sys.stderr

    async def run() -> None:
        low = server.mcp._mcp_server
        async with stdio_server(stdout=proto_out) as (read_stream, write_stream):
            await low.run(read_stream, write_stream, low.create_initialization_options())

    anyio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
