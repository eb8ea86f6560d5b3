"""Connects to a streamable HTTP MCP server with the official MCP Python SDK, lists its tools and
calls the first one, and prints what happened as JSON.

    python probe.py [--header "Name: value"]... URL

The report is `{"tools": [names], "call": {"is_error": ..., "text": ...}}`, or `{"error": text}`
when the connection or a request failed. The Rust test `mcp_server_access` checks it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def describe(error: BaseException) -> str:
    """The messages of an exception and of any it groups."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    return f"{type(error).__name__}: {error}"


async def probe(url: str, headers: dict[str, str]) -> dict[str, Any]:
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                result = await session.call_tool(tools[0], {})
                texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
                return {"tools": tools, "call": {"is_error": bool(result.is_error), "text": "\n".join(texts)}}


async def main(argv: list[str]) -> int:
    headers: dict[str, str] = {}
    while len(argv) >= 2 and argv[0] == "--header":
        name, _, value = argv[1].partition(":")
        headers[name.strip()] = value.strip()
        argv = argv[2:]
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with_timeout = asyncio.wait_for(probe(argv[0], headers), timeout=60)
        report = await with_timeout
    except BaseException as error:  # noqa: BLE001 - the report says what went wrong
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        report = {"error": describe(error)}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
