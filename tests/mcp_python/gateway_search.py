"""A client of the gateway's tool search, written with the official MCP Python SDK.

    python gateway_search.py URL TOKEN QUERY

Connects with `Authorization: Bearer TOKEN`, lists its tools, calls `search_tools` with QUERY
and with `select:py_weather,py_echo`, then calls `py_weather` by name, and prints
`{"tools": [names], "search": answer, "select": answer, "weather": {"is_error", "text"} or
{"error_code", "message"}}`. The Rust test `mcp_gateway` checks the report; this script
asserts nothing itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as error:
        return {"error_code": error.code, "message": error.message}
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    return {"is_error": bool(result.is_error), "text": "\n".join(texts)}


async def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    url, token, query = argv
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        )
        read, write = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        tools = sorted(tool.name for tool in (await session.list_tools()).tools)
        search = await call(session, "search_tools", {"query": query})
        select = await call(session, "search_tools", {"query": "select:py_weather,py_echo"})
        weather = await call(session, "py_weather", {"city": "Oslo"})
    for answer in (search, select):
        if "text" in answer and not answer["is_error"]:
            answer["found"] = json.loads(answer.pop("text"))
    print(json.dumps({"tools": tools, "search": search, "select": select, "weather": weather}))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
