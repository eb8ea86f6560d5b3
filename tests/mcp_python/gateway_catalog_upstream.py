"""An upstream MCP server for the gateway's catalog and fault tests, written with the official
MCP Python SDK.

    python gateway_catalog_upstream.py [--down FILE] [--tools NAME,NAME,...]

With --down FILE, the server exits at once with status 3 while FILE exists (a server that is
down), so a test can keep the gateway's reconnection off and then let it through. With
--tools, the server also offers a tool under each NAME (in that order), answering "NAME here".

Tools:
    echo(text)          the text
    weather(city)       "sunny in CITY"
    pid()               the process id
    freeze()            stops this process (SIGSTOP): alive, it answers nothing from then on
    add_tool(name)      offers one more tool under `name` (answering "NAME here"), list_changed
"""

from __future__ import annotations

import os
import signal
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("gateway-catalog-upstream", version="1.0.0")


@server.tool(description="Repeat the text.")
def echo(text: str) -> str:
    return text


@server.tool(description="The weather in a city.")
def weather(city: str) -> str:
    return f"sunny in {city}"


@server.tool(description="The process id.")
def pid() -> str:
    return str(os.getpid())


@server.tool(description="Stop answering anything, for good.")
def freeze() -> str:
    os.kill(os.getpid(), signal.SIGSTOP)
    return "thawed"


def offer(name: str) -> None:
    def here() -> str:
        return f"{name} here"

    server.add_tool(here, name=name, description=f"The tool named {name}.")


@server.tool(description="Offer one more tool under a name.")
async def add_tool(name: str, ctx: Context) -> str:
    offer(name)
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


def main(argv: list[str]) -> int:
    while argv:
        option, value, argv = argv[0], argv[1], argv[2:]
        if option == "--down" and os.path.exists(value):
            print("down by the test", file=sys.stderr, flush=True)
            return 3
        if option == "--tools":
            for name in value.split(","):
                offer(name)
    server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
