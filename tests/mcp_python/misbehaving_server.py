"""An MCP server written with the official MCP Python SDK (`MCPServer`) that misbehaves on
purpose, for the client's limits and error tests.

    python misbehaving_server.py stdio [--garbage]   speak MCP on stdin and stdout; with
                                                     --garbage, a stray JSON-RPC response goes
                                                     out on stdout before anything else
    python misbehaving_server.py http                streamable HTTP on a free 127.0.0.1 port;
                                                     the first stdout line is "listening on URL"

Its tools/list names `dup` twice, with two different input schemas.

Tools:
    echo(text)              the text
    dup(a)                  "dup a=A" (listed a second time as dup(b: integer))
    big(size)               a text result of `size` bytes ("x" repeated)
    silent()                never answers
    list_requests()         how many tools/list requests the server has answered
    endless()               from now on, tools/list answers pages with no tools and a
                            nextCursor that never ends (list_changed)
    many(count)             from now on, tools/list adds `count` numbered tools t_000, t_001, ...
                            (list_changed)
    describe(text)          sets the description of `echo` (list_changed)
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ListToolsResult
from mcp_types import Tool as MCPTool

import loopback

state: dict[str, Any] = {"list_requests": 0, "endless": False, "many": 0}


class MisbehavingServer(MCPServer):
    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        state["list_requests"] += 1
        cursor = getattr(params, "cursor", None) if params is not None else None
        if state["endless"] and cursor is not None:
            return ListToolsResult(tools=[], next_cursor=str(int(cursor) + 1))
        tools = await self.list_tools()
        # `dup` a second time, with another schema.
        tools.append(
            MCPTool(
                name="dup",
                description="The same name again, with another schema.",
                input_schema={
                    "type": "object",
                    "properties": {"b": {"type": "integer"}},
                    "required": ["b"],
                },
            )
        )
        tools.extend(
            MCPTool(
                name=f"t_{n:03}",
                description=f"Numbered tool {n}.",
                input_schema={"type": "object", "properties": {}},
            )
            for n in range(state["many"])
        )
        next_cursor = "1" if state["endless"] else None
        return ListToolsResult(tools=tools, next_cursor=next_cursor)


server = MisbehavingServer("tool-core-misbehaving-server", version="1.0.0")


@server.tool(description="Repeat the text.")
def echo(text: str) -> str:
    return text


@server.tool(description="A tool whose name the list repeats.")
def dup(a: str) -> str:
    return f"dup a={a}"


@server.tool(description="A text result of `size` bytes.")
def big(size: int) -> str:
    return "x" * size


@server.tool(description="Never answer.")
async def silent() -> str:
    await asyncio.Event().wait()
    return "unreachable"


@server.tool(description="How many tools/list requests were answered.")
def list_requests() -> str:
    return str(state["list_requests"])


@server.tool(description="Make the tool list's cursor endless.")
async def endless(ctx: Context) -> str:
    state["endless"] = True
    await ctx.session.send_tool_list_changed()
    return "endless"


@server.tool(description="List `count` more tools.")
async def many(count: int, ctx: Context) -> str:
    state["many"] = count
    await ctx.session.send_tool_list_changed()
    return f"{count} tools"


@server.tool(description="Set the description of `echo`.")
async def describe(text: str, ctx: Context) -> str:
    server.remove_tool("echo")
    server.add_tool(echo, name="echo", description=text)
    await ctx.session.send_tool_list_changed()
    return "described"


def serve_http() -> None:
    loopback.serve(server.streamable_http_app(host="127.0.0.1"))


def main(argv: list[str]) -> int:
    if argv[:1] == ["stdio"]:
        if argv[1:] == ["--garbage"]:
            # A response to a request nobody sent, before the handshake.
            sys.stdout.write('{"jsonrpc":"2.0","id":"stray","result":{"stray":true}}\n')
            sys.stdout.flush()
        server.run("stdio")
        return 0
    if argv == ["http"]:
        serve_http()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
