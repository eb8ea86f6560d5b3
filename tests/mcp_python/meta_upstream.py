"""An MCP server, written with the official MCP Python SDK, that shows what a request carried.

    python meta_upstream.py     speak MCP on stdin and stdout

Tools:
    meta()      the `params._meta` of this `tools/call` request, as a JSON object
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("meta-upstream", version="1.0.0")


@server.tool(description="The _meta of this request.")
def meta(ctx: Context) -> str:
    return json.dumps(dict(ctx.request_context.meta or {}), default=str, sort_keys=True)


if __name__ == "__main__":
    server.run("stdio")
