"""An upstream MCP server for the gateway's pin and stream tests, written with the official MCP
Python SDK.

    python gateway_pins_upstream.py [--changed]    speak MCP on stdin and stdout

Tools (each change sends one `notifications/tools/list_changed`):
    forecast(city)     a structured forecast; its description and input schema never change
    reshape()          changes only forecast's output schema
    rehint()           changes only forecast's annotations (now destructive)
    retitle()          changes only forecast's title
    reicon()           changes only forecast's icon (none at start)
    revert()           forecast as at start
    grow(count)        adds tools extra_0 … extra_{count-1} at once
With --changed, forecast starts with reshape()'s output schema.
"""

from __future__ import annotations

import sys
from typing import TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import Icon, ToolAnnotations

server = MCPServer("gateway-pins-upstream", version="1.0.0")


class Forecast(TypedDict):
    sky: str


class DetailedForecast(TypedDict):
    sky: str
    rain_mm: float


def forecast(city: str) -> Forecast:
    return {"sky": f"sunny in {city}"}


def detailed(city: str) -> DetailedForecast:
    return {"sky": f"sunny in {city}", "rain_mm": 0.0}


# The input schema's title comes from the function's name: the same for both.
detailed.__name__ = detailed.__qualname__ = "forecast"


DESCRIPTION = "The forecast for a city."
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False)


def define(
    fn=forecast,
    title: str = "Forecast",
    annotations: ToolAnnotations = READ_ONLY,
    icon: str | None = None,
) -> None:
    server.add_tool(
        fn,
        name="forecast",
        title=title,
        description=DESCRIPTION,
        annotations=annotations,
        icons=[Icon(src=icon)] if icon else None,
        structured_output=True,
    )


async def redefine(ctx: Context, **kwargs) -> str:
    server.remove_tool("forecast")
    define(**kwargs)
    await ctx.session.send_tool_list_changed()
    return "redefined"


@server.tool(description="Change only the forecast's output schema.")
async def reshape(ctx: Context) -> str:
    return await redefine(ctx, fn=detailed)


@server.tool(description="Change only the forecast's annotations.")
async def rehint(ctx: Context) -> str:
    return await redefine(ctx, annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))


@server.tool(description="Change only the forecast's title.")
async def retitle(ctx: Context) -> str:
    return await redefine(ctx, title="Forecast (beta)")


@server.tool(description="Change only the forecast's icon.")
async def reicon(ctx: Context) -> str:
    return await redefine(ctx, icon="https://example.invalid/forecast.png")


@server.tool(description="Define the forecast as at start.")
async def revert(ctx: Context) -> str:
    return await redefine(ctx)


@server.tool(description="Add tools extra_0 to extra_{count-1} at once.")
async def grow(ctx: Context, count: int) -> str:
    for index in range(count):

        def extra(index: int = index) -> str:
            return f"extra {index}"

        server.add_tool(extra, name=f"extra_{index}", description=f"Extra tool number {index}.")
    await ctx.session.send_tool_list_changed()
    return f"grew {count}"


def main(argv: list[str]) -> int:
    define(fn=detailed if argv == ["--changed"] else forecast)
    server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
