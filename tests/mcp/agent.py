"""An agent on the official MCP Python SDK, pointed at a live Countersign gateway.

`tests/mcp.rs` starts the gateway, runs this script and approves, with the console core, the plans
this script announces. The script reports what it saw, one JSON object a line on stdout; the Rust
side asserts on those lines and on the gateway's audit.

    agent.py http  URL TOKEN WRONG_TOKEN
    agent.py stdio GATEWAY_BINARY DATABASE_URL TOKEN WRONG_TOKEN
"""

import asyncio
import json
import sys
import tempfile
from contextlib import asynccontextmanager

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

SETTINGS = "projects.settings.update"
GUARD = "wallet.agent_budget.guard.check"


def report(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def answer(result):
    text = "\n".join(block.text for block in result.content if block.type == "text")
    return {"is_error": bool(result.is_error), "structured": result.structured_content, "text": text}


def over_http(url):
    @asynccontextmanager
    async def connect(token, errlog, **options):
        headers = {"Authorization": f"Bearer {token}"}
        # countersign_wait holds a request open for up to a minute.
        timeout = httpx2.Timeout(30, read=120)
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            async with Client(streamable_http_client(url, http_client=http), **options) as client:
                yield client

    return connect


def over_stdio(binary, database):
    @asynccontextmanager
    async def connect(token, errlog, **options):
        server = StdioServerParameters(
            command=binary,
            args=["mcp", "--database", database],
            env={"COUNTERSIGN_AGENT_TOKEN": token, "RUST_LOG": "warn"},
        )
        async with Client(stdio_client(server, errlog=errlog), **options) as client:
            yield client

    return connect


async def scenario(connect, token):
    with tempfile.TemporaryFile("w+") as errlog:
        async with connect(token, errlog) as client:
            listed = await client.list_tools()
            report(
                "tools",
                tools=[
                    {
                        "name": tool.name,
                        "input_schema": tool.input_schema,
                        "annotations": tool.annotations.model_dump(by_alias=True, exclude_none=True)
                        if tool.annotations
                        else None,
                    }
                    for tool in listed.tools
                ],
            )
            report("guard", **answer(await client.call_tool(GUARD, {"estimated_cost_credits": 0.37})))
            report(
                "invalid",
                **answer(await client.call_tool(SETTINGS, {"project": "prj_184", "retention_days": "soon"})),
            )
            first = answer(await client.call_tool(SETTINGS, {"project": "prj_184", "retention_days": 14}))
            second = answer(await client.call_tool(SETTINGS, {"project": "prj_184", "retention_days": 21}))
            plans = [first["structured"]["plan_id"], second["structured"]["plan_id"]]
            early = await client.call_tool("countersign_execute", {"plan_id": plans[0]})
            report("early", **answer(early))
            # The test approves both plans when it reads this line.
            report("planned", first=first, second=second)
            for plan_id in plans:
                waited = await client.call_tool("countersign_wait", {"plan_id": plan_id, "timeout_seconds": 60})
                report("waited", **answer(waited))
            report("executed", **answer(await client.call_tool("countersign_execute", {"plan_id": plans[0]})))
            report("stale", **answer(await client.call_tool("countersign_execute", {"plan_id": plans[1]})))
            report("unknown_tool", **answer(await client.call_tool("no.such.tool", {})))


async def refused(connect, wrong_token):
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with connect(wrong_token, errlog) as client:
                listed = await client.list_tools()
                report("wrong_token", refused=False, tools=len(listed.tools))
        except Exception as error:  # the SDK raises whatever its transport met; the report says which
            errlog.seek(0)
            report("wrong_token", refused=True, error=f"{type(error).__name__}: {error!r}", stderr=errlog.read())


async def main(argv):
    if argv[0] == "http":
        connect, token, wrong = over_http(argv[1]), argv[2], argv[3]
    else:
        connect, token, wrong = over_stdio(argv[1], argv[2]), argv[3], argv[4]
    await scenario(connect, token)
    await refused(connect, wrong)
    report("done")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
