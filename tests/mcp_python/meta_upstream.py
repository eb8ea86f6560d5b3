"""An MCP server, written with the official MCP Python SDK, that shows what a request carried.

    python meta_upstream.py         speak MCP on stdin and stdout
    python meta_upstream.py http    serve streamable HTTP on a free loopback port (a session,
                                    answers as SSE streams); the first line printed is
                                    `listening on URL`

Tools:
    meta()      the `params._meta` of this `tools/call` request, as a JSON object
"""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import Context, MCPServer

import loopback

server = MCPServer("meta-upstream", version="1.0.0")


@server.tool(description="The _meta of this request.")
def meta(ctx: Context) -> str:
    return json.dumps(dict(ctx.request_context.meta or {}), default=str, sort_keys=True)


def serve_http() -> None:
    loopback.serve(server.streamable_http_app(host="127.0.0.1"))


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run("stdio")
