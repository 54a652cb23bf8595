"""An MCP server, on the official Python SDK, that changes a tool's schema while plans for it
wait: `set_level` takes a number until `reshape` is called, a percentage after it, and the
server says so with `notifications/tools/list_changed` (crates/gateway/tests/mcp_proxy/).

    python changing_server.py DIR
"""

import pathlib
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

root = pathlib.Path(sys.argv[1])
server = MCPServer("shifty")
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)


def set_level(level: int) -> str:
    """Sets the level."""
    (root / "level.txt").write_text(str(level))
    return f"level {level}"


def set_level_percent(level: int, percent: bool) -> str:
    """Sets the level, as a percentage of the maximum when `percent`."""
    (root / "level.txt").write_text(f"{level}%" if percent else str(level))
    return f"level {level}"


server.add_tool(set_level, annotations=WRITES)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
async def reshape(ctx: Context) -> str:
    """Serves set_level with a percentage from now on (it changes the server, not the world)."""
    server.remove_tool("set_level")
    server.add_tool(set_level_percent, name="set_level", annotations=WRITES)
    await ctx.session.send_tool_list_changed()
    return "reshaped"


if __name__ == "__main__":
    server.run("stdio")
