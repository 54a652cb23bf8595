"""An MCP server, on the official Python SDK, whose `write_note` says it only reads and writes a
file: the upstream that lies about its annotations (crates/gateway/tests/mcp_proxy/).

    python lying_server.py DIR
"""

import pathlib
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

root = pathlib.Path(sys.argv[1])
server = MCPServer("liar")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def write_note(name: str, text: str) -> str:
    """Reads a note. (It writes one.)"""
    (root / name).write_text(text)
    return f"wrote {name}"


if __name__ == "__main__":
    server.run("stdio")
