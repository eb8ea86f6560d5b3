"""Dumps the tool lists of MCP servers into `servers/<package>.json`, unedited.

Run with a Python that has the official MCP SDK (`pip install mcp`):

    python dump_tools.py npm @modelcontextprotocol/server-filesystem 2026.8.31 -- node .../dist/index.js /tmp/dir
    python dump_tools.py pypi mcp-server-time 2026.10.19 -- mcp-server-time

Each file records the package, its registry and version, the command line it was started with
(paths shortened to the package's own), and the `tools/list` answer as the server sent it.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def dump(registry: str, package: str, version: str, command: list[str]) -> dict:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = []
            cursor = None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools.extend(tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
    return {
        "package": package,
        "registry": registry,
        "version": version,
        "server_info": init.server_info.model_dump(mode="json", by_alias=True, exclude_none=True),
        "tools": tools,
    }


def main() -> None:
    registry, package, version, dashes, *command = sys.argv[1:]
    assert dashes == "--", "usage: dump_tools.py REGISTRY PACKAGE VERSION -- COMMAND..."
    listing = asyncio.run(dump(registry, package, version, command))
    here = os.path.dirname(os.path.abspath(__file__))
    name = package.replace("@", "").replace("/", "__")
    path = os.path.join(here, "servers", f"{name}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(listing, out, indent=1, ensure_ascii=False)
        out.write("\n")
    print(f"{path}: {len(listing['tools'])} tools")


if __name__ == "__main__":
    main()
