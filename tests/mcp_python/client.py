"""Drives an MCP server with the official MCP Python SDK and prints what it saw as JSON.

    python client.py stdio COMMAND [ARG...]   start COMMAND and speak MCP over its stdio
    python client.py http URL                 speak streamable HTTP to URL

The session: initialize, tools/list, then tools/call with good arguments, bad arguments, a
failing call and an unknown tool. The Rust test `mcp_python` checks the printed report; this
script asserts nothing itself, so a wrong answer shows up as a readable test failure there.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("add_ok", "add", {"a": 2, "b": 3}),
    ("add_bad_type", "add", {"a": "two", "b": 3}),
    ("add_missing", "add", {"a": 2}),
    ("divide_by_zero", "divide", {"dividend": 1, "divisor": 0}),
    ("now", "now", {}),
    ("unknown_tool", "no_such_tool", {}),
]


async def session_report(read: Any, write: Any) -> dict[str, Any]:
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        report: dict[str, Any] = {
            "protocol_version": init.protocol_version,
            "server_name": init.server_info.name,
            "tools_list_changed": bool(init.capabilities.tools and init.capabilities.tools.list_changed),
            "tools": [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools.tools],
            "calls": {},
        }
        for label, name, arguments in CALLS:
            try:
                result = await session.call_tool(name, arguments)
            except MCPError as error:
                report["calls"][label] = {"error_code": error.code, "message": error.message}
                continue
            texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
            report["calls"][label] = {"is_error": bool(result.is_error), "text": "\n".join(texts)}
        return report


async def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "stdio":
        params = StdioServerParameters(command=argv[1], args=argv[2:])
        async with stdio_client(params) as (read, write):
            report = await session_report(read, write)
    elif len(argv) == 2 and argv[0] == "http":
        async with streamable_http_client(argv[1]) as (read, write):
            report = await session_report(read, write)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
