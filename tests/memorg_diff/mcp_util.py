"""Small helpers around the official ``mcp`` client SDK, working with 1.x and 2.x.

SDK 2.x renamed fields (``Tool.input_schema``, ``CallToolResult.is_error``,
``structured_content``); 1.x uses ``inputSchema``, ``isError``,
``structuredContent``. Everything here reads both spellings.
"""
from __future__ import annotations

import json
from typing import Any


def field(obj: Any, *names: str, default=None):
    """First present attribute/key among ``names`` (None values count as absent)."""
    for n in names:
        if isinstance(obj, dict):
            if obj.get(n) is not None:
                return obj[n]
        else:
            v = getattr(obj, n, None)
            if v is not None:
                return v
    return default


def tool_info(tool: Any) -> dict:
    return {
        "name": field(tool, "name"),
        "description": field(tool, "description"),
        "input_schema": field(tool, "input_schema", "inputSchema"),
        "output_schema": field(tool, "output_schema", "outputSchema"),
    }


def normalize_result(res: Any) -> dict:
    """CallToolResult -> plain dict: is_error, texts, json (parsed first text), structured."""
    is_error = bool(field(res, "is_error", "isError", default=False))
    texts = []
    content_types = []
    for item in field(res, "content", default=[]) or []:
        content_types.append(field(item, "type"))
        t = field(item, "text")
        if t is not None:
            texts.append(t)
    structured = field(res, "structured_content", "structuredContent")
    parsed = None
    parse_error = None
    if texts:
        try:
            parsed = json.loads(texts[0])
        except Exception as e:  # not JSON (e.g. an error message)
            parse_error = f"{type(e).__name__}: {e}"
    value = structured if isinstance(structured, dict) else parsed
    return {
        "is_error": is_error,
        "content_types": content_types,
        "texts": texts,
        "json": parsed,
        "json_parse_error": parse_error,
        "structured": structured,
        "value": value,  # structured content if present, else parsed JSON text
    }


async def call(session, name: str, args: dict, timeout: float = 120.0) -> dict:
    """Call a tool; never raises (client-side exceptions are recorded)."""
    import anyio

    try:
        with anyio.fail_after(timeout):
            res = await session.call_tool(name, args)
        out = normalize_result(res)
    except Exception as e:  # protocol error, timeout, SDK validation...
        out = {
            "is_error": True,
            "client_exception": f"{type(e).__name__}: {e}",
            "content_types": [],
            "texts": [],
            "json": None,
            "json_parse_error": None,
            "structured": None,
            "value": None,
        }
    out["tool"] = name
    return out


def stdio_params(command: str, args: list[str], env: dict, cwd: str | None = None):
    from mcp import StdioServerParameters

    kw = {"command": command, "args": args, "env": env}
    if cwd is not None:
        kw["cwd"] = cwd
    return StdioServerParameters(**kw)


def sdk_version() -> str:
    try:
        from importlib.metadata import version

        return version("mcp")
    except Exception:
        return "unknown"


def value_types(d: Any) -> Any:
    """Describe a JSON value's type structure (for the contract / key-set checks)."""
    if isinstance(d, dict):
        return {k: value_types(v) for k, v in d.items()}
    if isinstance(d, list):
        return [value_types(d[0])] if d else []
    if isinstance(d, bool):
        return "bool"
    if isinstance(d, int):
        return "int"
    if isinstance(d, float):
        return "float"
    if isinstance(d, str):
        return "str"
    if d is None:
        return "null"
    return type(d).__name__
