"""An MCP server written with the official MCP Python SDK (`MCPServer`), for the client tests.

    python server.py stdio [--block FILE]     speak MCP on stdin and stdout
    python server.py http --token TOKEN       streamable HTTP on a free 127.0.0.1 port; the first
                                              stdout line is "listening on URL"; requests without
                                              "authorization: Bearer TOKEN" get 401

With --block FILE, the server exits at once with status 3 while FILE exists (a server that is
down), so a test can hold a client's reconnection off and then let it through.

Tools:
    page_00 .. page_24     numbered tools; tools/list answers 10 per page with nextCursor
    echo(text)             the text
    fail(message)          a result with isError and the message
    cwd()                  the working directory
    pid()                  the process id
    env(name)              an environment variable
    add_tool(name)         registers a tool `name` that answers "NAME called" (list_changed)
    remove_tool(name)      removes it again (list_changed)
    files.read(path)       a dotted name, answers "read PATH"
    a_very_long_...        a 70-character name, answers "long"
    progress(steps)        reports progress `steps` times, answers "done"
    exit()                 answers "bye" and exits the process
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListToolsResult

import loopback

PAGE_SIZE = 10
LONG_NAME = "a_very_long_tool_name_" + "x" * 48


class PagedServer(MCPServer):
    """MCPServer answers tools/list in one page; this one pages it, as big servers do."""

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        tools = await self.list_tools()
        cursor = getattr(params, "cursor", None) if params is not None else None
        start = int(cursor) if cursor else 0
        end = start + PAGE_SIZE
        next_cursor = str(end) if end < len(tools) else None
        return ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)


server = PagedServer("tool-core-test-server", version="1.0.0")


def numbered(n: int):
    def tool() -> str:
        return f"page tool {n}"

    return tool


for n in range(25):
    server.add_tool(numbered(n), name=f"page_{n:02}", description=f"Numbered tool {n}.")


@server.tool(description="Repeat the text.")
def echo(text: str) -> str:
    return text


@server.tool(description="Fail with the message.")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="The working directory.")
def cwd() -> str:
    return os.getcwd()


@server.tool(description="The process id.")
def pid() -> str:
    return str(os.getpid())


@server.tool(description="An environment variable.")
def env(name: str) -> str:
    return os.environ.get(name, "<unset>")


@server.tool(description="Register a tool at run time.")
async def add_tool(name: str, ctx: Context) -> str:
    def added() -> str:
        return f"{name} called"

    server.add_tool(added, name=name, description=f"The {name} tool, added at run time.")
    await ctx.session.send_tool_list_changed()
    return f"{name} added"


@server.tool(description="Remove a tool at run time.")
async def remove_tool(name: str, ctx: Context) -> str:
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"{name} removed"


def read(path: str) -> str:
    return f"read {path}"


server.add_tool(read, name="files.read", description="A tool with a dotted name.")


def long() -> str:
    return "long"


server.add_tool(long, name=LONG_NAME, description="A tool with a 70-character name.")


@server.tool(description="Report progress, then answer.")
async def progress(steps: int, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return "done"


@server.tool(description="Answer, then exit the process.")
async def exit() -> str:
    asyncio.get_running_loop().call_later(0.1, os._exit, 0)
    return "bye"


def serve_http(token: str) -> None:
    app = server.streamable_http_app(host="127.0.0.1")
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
            return
        await app(scope, receive, send)

    loopback.serve(guarded)


def main(argv: list[str]) -> int:
    if argv[:1] == ["stdio"]:
        if len(argv) == 3 and argv[1] == "--block" and os.path.exists(argv[2]):
            print("blocked by the test", file=sys.stderr, flush=True)
            return 3
        server.run("stdio")
        return 0
    if len(argv) == 3 and argv[:2] == ["http", "--token"]:
        serve_http(argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
