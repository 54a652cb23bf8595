"""An agent on the official MCP Python SDK using a published MCP server's tools through a live
Countersign gateway (`tests/mcp.rs`): it reads a file at once, asks to write it, waits for the
approval the test signs, and runs the write. One JSON object a line on stdout, as agent.py.

    proxied_agent.py URL TOKEN FILE
"""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent import answer, report


async def main(url, token, path):
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30, read=120)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            listed = await client.list_tools()
            report(
                "tools",
                tools={
                    tool.name: tool.annotations.model_dump(by_alias=True, exclude_none=True)
                    if tool.annotations
                    else None
                    for tool in listed.tools
                },
            )
            report("read", **answer(await client.call_tool("files.read_text_file", {"path": path})))
            # The server's own names lead nowhere: only its tools as the gateway serves them do.
            try:
                around = answer(await client.call_tool("write_file", {"path": path, "content": "around\n"}))
            except Exception as error:  # a protocol error is as good a no as an error result
                around = {"is_error": True, "structured": None, "text": str(error)}
            report("around", **around)
            write = answer(await client.call_tool("files.write_file", {"path": path, "content": "as signed\n"}))
            # The test approves the plan when it reads this line.
            report("planned", write=write)
            plan_id = write["structured"]["plan_id"]
            waited = await client.call_tool("countersign_wait", {"plan_id": plan_id, "timeout_seconds": 60})
            report("waited", **answer(waited))
            report("executed", **answer(await client.call_tool("countersign_execute", {"plan_id": plan_id})))
    report("done")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
