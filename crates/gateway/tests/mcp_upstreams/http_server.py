"""An MCP server on the official Python SDK served over streamable HTTP that answers only a
request bearing its token: the remote upstream (`NAME=URL`, crates/gateway/tests/mcp_proxy/).

    python http_server.py DIR TOKEN PORT_FILE

It listens on a port of 127.0.0.1 the system picks, and writes the port to PORT_FILE once it
listens.
"""

import pathlib
import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from starlette.responses import JSONResponse

root, token, port_file = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
server = MCPServer("remote")


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=True))
def post_note(text: str) -> str:
    """Posts a note to the team's board."""
    with open(root / "board.log", "a") as board:
        board.write(text + "\n")
    return "posted"


app = server.streamable_http_app()
expected = f"Bearer {token}".encode()


async def guarded(scope, receive, send):
    if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
        await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
        return
    await app(scope, receive, send)


if __name__ == "__main__":
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    # Listening before the port is told: a client that comes early waits in the backlog.
    listener.listen(16)
    port_file.write_text(str(listener.getsockname()[1]))
    uvicorn.Server(uvicorn.Config(guarded, log_level="warning")).run(sockets=[listener])
