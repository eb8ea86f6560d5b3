"""Serving an ASGI app over HTTP on a free loopback port, for the test servers here.

The first line printed is `listening on http://127.0.0.1:PORT/mcp`; the socket listens before
that line is printed, so a client that connects while uvicorn is still starting waits in the
backlog instead of being refused.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any


def serve(app: Any) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.listen(128)
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
