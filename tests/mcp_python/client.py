"""Drives an MCP server with the official MCP Python SDK and prints what it saw as JSON.

    python client.py [--version V] [--toggle] stdio COMMAND [ARG...]   start COMMAND, speak MCP over its stdio
    python client.py [--version V] [--toggle] http URL                 speak streamable HTTP to URL

--version picks the protocol: 2026-07-28 connects with `server/discover` (self-contained
requests), any older version with `initialize` asking for exactly that version (default: the
SDK's newest handshake version). --toggle also switches the tool `add` off and on again with
the server's `set_tool_enabled` tool, waiting for `notifications/tools/list_changed` (through
`subscriptions/listen` on 2026-07-28), and reports the list and a call in between.

The session: connect, tools/list, then tools/call with good arguments, bad arguments, a failing
call, a structured result and an unknown tool. The Rust test `mcp_python` checks the printed
report; this script asserts nothing itself, so a wrong answer shows up as a readable test
failure there.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import anyio
import mcp.client.session as client_session
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import listen
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"
WAIT_SECONDS = 10

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("add_ok", "add", {"a": 2, "b": 3}),
    ("add_bad_type", "add", {"a": "two", "b": 3}),
    ("add_missing", "add", {"a": 2}),
    ("divide_by_zero", "divide", {"dividend": 1, "divisor": 0}),
    ("divide_integers", "divide_integers", {"dividend": 7, "divisor": 2}),
    ("now", "now", {}),
    ("unknown_tool", "no_such_tool", {}),
]


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as error:
        return {"error_code": error.code, "message": error.message}
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    outcome: dict[str, Any] = {"is_error": bool(result.is_error), "text": "\n".join(texts)}
    if result.structured_content is not None:
        outcome["structured"] = result.structured_content
    return outcome


async def tool_names(session: ClientSession) -> list[str]:
    return [tool.name for tool in (await session.list_tools()).tools]


async def toggle(session: ClientSession, changed: anyio.Event | None) -> dict[str, Any]:
    """Switches `add` off, waits for list_changed, lists and calls it, and switches it on."""
    report: dict[str, Any] = {}
    if changed is None:
        async with listen(session, tools_list_changed=True) as subscription:
            report["switch_off"] = await call(session, "set_tool_enabled", {"name": "add", "enabled": False})
            with anyio.fail_after(WAIT_SECONDS):
                event = await subscription.__anext__()
            report["notified"] = type(event).__name__
    else:
        report["switch_off"] = await call(session, "set_tool_enabled", {"name": "add", "enabled": False})
        with anyio.fail_after(WAIT_SECONDS):
            await changed.wait()
        report["notified"] = "ToolsListChanged"
    report["tools_while_off"] = await tool_names(session)
    report["call_while_off"] = await call(session, "add", {"a": 1, "b": 1})
    report["switch_on"] = await call(session, "set_tool_enabled", {"name": "add", "enabled": True})
    report["tools_after"] = await tool_names(session)
    return report


async def session_report(read: Any, write: Any, version: str | None, do_toggle: bool) -> dict[str, Any]:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with ClientSession(read, write, message_handler=on_message) as session:
        if version == MODERN:
            await session.discover()
        else:
            if version is not None:
                # The SDK asks for its newest handshake version; ask for this one instead.
                client_session.LATEST_HANDSHAKE_VERSION = version
            await session.initialize()
        capabilities = session.server_capabilities
        server_info = session.server_info
        tools = await session.list_tools()
        report: dict[str, Any] = {
            "protocol_version": session.protocol_version,
            "server_name": server_info.name if server_info else None,
            "tools_list_changed": bool(capabilities and capabilities.tools and capabilities.tools.list_changed),
            "tools": [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools.tools],
            "calls": {},
        }
        for label, name, arguments in CALLS:
            report["calls"][label] = await call(session, name, arguments)
        if do_toggle:
            report["toggle"] = await toggle(session, None if version == MODERN else changed)
        return report


async def main(argv: list[str]) -> int:
    version: str | None = None
    do_toggle = False
    while argv and argv[0].startswith("--"):
        if argv[0] == "--version" and len(argv) >= 2:
            version, argv = argv[1], argv[2:]
        elif argv[0] == "--toggle":
            do_toggle, argv = True, argv[1:]
        else:
            print(__doc__, file=sys.stderr)
            return 2
    if len(argv) >= 2 and argv[0] == "stdio":
        params = StdioServerParameters(command=argv[1], args=argv[2:])
        async with stdio_client(params) as (read, write):
            report = await session_report(read, write, version, do_toggle)
    elif len(argv) == 2 and argv[0] == "http":
        async with streamable_http_client(argv[1]) as (read, write):
            report = await session_report(read, write, version, do_toggle)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
