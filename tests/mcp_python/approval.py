"""Calls a tool that needs the user's approval, with the official MCP Python SDK, and prints what
happened as JSON.

    python approval.py [--version V] [--elicit accept|decline|cancel|none] URL TOOL

--version picks the protocol: 2026-07-28 runs without a handshake (the server asks through an
`InputRequiredResult` and the SDK retries the call with the answer); any older version runs
`initialize` asking for exactly that version (the server asks with an `elicitation/create`
request during the call). --elicit is what the client's elicitation callback answers; `none`
(the default) gives the client no callback, so it declares no elicitation capability.

The report: `{"tool": <the tool as listed>, "asked": [<each elicitation's message and
schema>], "result": {"is_error": ..., "text": ...}}` (or `"result": {"error_code": ...,
"message": ...}` for a JSON-RPC error). The Rust test `mcp_server_approval` checks it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import mcp.client.session as client_session
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"


async def run(url: str, tool: str, version: str, answer: str) -> dict[str, Any]:
    asked: list[dict[str, Any]] = []

    async def elicit(_context: Any, params: Any) -> types.ElicitResult:
        asked.append(
            {
                "message": params.message,
                "schema": params.requested_schema,
            }
        )
        content = {} if answer == "accept" else None
        return types.ElicitResult(action=answer, content=content)

    if version == MODERN:
        mode = MODERN
    else:
        mode = "legacy"
        # The SDK asks for its newest handshake version; ask for this one instead.
        client_session.LATEST_HANDSHAKE_VERSION = version
    callback = None if answer == "none" else elicit
    async with Client(streamable_http_client(url), mode=mode, elicitation_callback=callback) as client:
        listed = await client.list_tools()
        report: dict[str, Any] = {
            "tool": next(
                item.model_dump(by_alias=True, mode="json", exclude_none=True)
                for item in listed.tools
                if item.name == tool
            ),
        }
        try:
            result = await client.call_tool(tool, {})
            texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
            report["result"] = {"is_error": bool(result.is_error), "text": "\n".join(texts)}
        except MCPError as error:
            report["result"] = {"error_code": error.code, "message": error.message}
        report["asked"] = asked
        return report


async def main(argv: list[str]) -> int:
    version = "2025-11-25"
    answer = "none"
    while argv and argv[0].startswith("--") and len(argv) >= 2:
        if argv[0] == "--version":
            version = argv[1]
        elif argv[0] == "--elicit" and argv[1] in ("accept", "decline", "cancel", "none"):
            answer = argv[1]
        else:
            break
        argv = argv[2:]
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    report = await asyncio.wait_for(run(argv[0], argv[1], version, answer), timeout=60)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
