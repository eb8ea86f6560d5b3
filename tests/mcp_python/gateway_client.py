"""Two users of an MCP gateway, driven with the official MCP Python SDK; prints what each saw as
JSON.

    python gateway_client.py [--version V] URL ALICE_TOKEN BOB_TOKEN TOOL ARGS_JSON
    python gateway_client.py --listen URL TOKEN

Alice and Bob connect at once (each with `Authorization: Bearer TOKEN`), list their tools and
call TOOL with ARGS_JSON. Both wait for `notifications/tools/list_changed` (through
`subscriptions/listen` on 2026-07-28); Alice switches TOOL off with the gateway's
`set_tool_enabled`, and the report tells whose stream was told, what each lists and what a call
of TOOL answers each of them, and Alice switches it on again. The Rust test `mcp_gateway`
checks the report; this script asserts nothing itself.

With --listen, one user opens a `subscriptions/listen` stream (2026-07-28), prints `ready`,
waits for one `notifications/tools/list_changed` (at most 20 s) and prints
`{"notified": bool, "tools": [names]}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

import anyio
import mcp.client.session as client_session
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import listen
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"
WAIT_SECONDS = 10
QUIET_SECONDS = 1.5


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as error:
        return {"error_code": error.code, "message": error.message}
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    return {"is_error": bool(result.is_error), "text": "\n".join(texts)}


async def names(session: ClientSession) -> list[str]:
    return sorted(tool.name for tool in (await session.list_tools()).tools)


class User:
    def __init__(self, stack: contextlib.AsyncExitStack, url: str, token: str, version: str | None):
        self.stack, self.url, self.token, self.version = stack, url, token, version
        self.changed = anyio.Event()
        self.subscription: Any = None

    async def open(self) -> ClientSession:
        async def on_message(message: Any) -> None:
            inner = getattr(message, "root", message)
            if getattr(inner, "method", None) == "notifications/tools/list_changed":
                self.changed.set()

        http = await self.stack.enter_async_context(
            create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        )
        read, write = await self.stack.enter_async_context(streamable_http_client(self.url, http_client=http))
        session = await self.stack.enter_async_context(ClientSession(read, write, message_handler=on_message))
        if self.version == MODERN:
            await session.discover()
            self.subscription = await self.stack.enter_async_context(listen(session, tools_list_changed=True))
        else:
            if self.version is not None:
                client_session.LATEST_HANDSHAKE_VERSION = self.version
            await session.initialize()
        self.session = session
        return session

    async def notified(self, seconds: float) -> bool:
        try:
            with anyio.fail_after(seconds):
                if self.subscription is not None:
                    await self.subscription.__anext__()
                else:
                    await self.changed.wait()
            return True
        except TimeoutError:
            return False


async def report(url: str, alice_token: str, bob_token: str, tool: str, arguments: dict[str, Any], version: str | None) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        alice = User(stack, url, alice_token, version)
        bob = User(stack, url, bob_token, version)
        a = await alice.open()
        b = await bob.open()
        out: dict[str, Any] = {
            "protocol_version": a.protocol_version,
            "alice_tools": await names(a),
            "bob_tools": await names(b),
            "alice_call": await call(a, tool, arguments),
            "bob_call": await call(b, tool, arguments),
        }
        out["switch_off"] = await call(a, "set_tool_enabled", {"name": tool, "enabled": False})
        out["alice_notified"] = await alice.notified(WAIT_SECONDS)
        out["bob_notified"] = await bob.notified(QUIET_SECONDS)
        out["alice_tools_off"] = await names(a)
        out["bob_tools_off"] = await names(b)
        out["alice_call_off"] = await call(a, tool, arguments)
        out["bob_call_off"] = await call(b, tool, arguments)
        out["switch_on"] = await call(a, "set_tool_enabled", {"name": tool, "enabled": True})
        out["alice_tools_on"] = await names(a)
        return out


async def listen_once(url: str, token: str) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        user = User(stack, url, token, MODERN)
        session = await user.open()
        print("ready", flush=True)
        notified = await user.notified(20)
        return {"notified": notified, "tools": await names(session)}


async def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--listen":
        print(json.dumps(await listen_once(argv[1], argv[2])))
        return 0
    version: str | None = None
    if len(argv) >= 2 and argv[0] == "--version":
        version, argv = argv[1], argv[2:]
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    url, alice, bob, tool, arguments = argv
    print(json.dumps(await report(url, alice, bob, tool, json.loads(arguments), version)))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
