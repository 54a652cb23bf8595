"""Agents on the official MCP Python SDK that wait the standard way (MCP 2026-07-28): with the tasks
extension (SEP-2663) and URL elicitation (SEP-1036), and, beside them, clients that declare neither.

The SDK (2.3.0) carries URL elicitation and the extension mechanism a client finishes an
extension's results with (`ClientExtension`, `ResultClaim`), but no tasks client of its own:
`Tasks` below is that client, the extension's three methods as SEP-2663 defines them, on the
SDK's own session. `tests/mcp_tasks.rs` starts the gateway, runs this script and acts on the lines
it prints (one JSON object a line): on `task`, the Rust side approves, rejects or expires the plan
the task waits on, as the line's `wants` says; on `decide`, it approves the plan named.

    task_agent.py http  URL TOKEN
    task_agent.py stdio GATEWAY_BINARY DATABASE_URL TOKEN
"""

import asyncio
import sys
import tempfile
from contextlib import asynccontextmanager
from typing import Any, Literal

from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim, advertise
from mcp_types import CallToolResult, ElicitResult, Request, RequestParams, Result

from agent import answer, over_http, over_stdio, report

SETTINGS = "projects.settings.update"
TASKS = "io.modelcontextprotocol/tasks"


class CreatedTask(Result):
    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None


class TaskState(Result):
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskParams(RequestParams):
    task_id: str


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class Tasks(ClientExtension):
    """Follows a task to its end with `tasks/get`, at the interval the server asks for.

    `wants` is what the next task's plan should come to; the first look reports it with the task,
    for the Rust side to bring about. `wants == "cancel"` cancels the task instead.
    """

    identifier = TASKS

    def __init__(self):
        self.wants = None

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.follow)]

    async def follow(self, created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        task_id, wants = created.task_id, self.wants
        report("task", task_id=task_id, status=created.status, message=created.status_message, wants=wants)
        seen = [created.status_message]
        if wants == "cancel":
            await ctx.session.send_request(CancelTask(params=TaskParams(task_id=task_id)), Result)
        while True:
            state = await ctx.session.send_request(GetTask(params=TaskParams(task_id=task_id)), TaskState)
            if state.status_message not in seen:
                seen.append(state.status_message)
            if state.status == "completed":
                report("task_end", task_id=task_id, status=state.status, messages=seen)
                return CallToolResult.model_validate(state.result)
            if state.status in ("failed", "cancelled"):
                report("task_end", task_id=task_id, status=state.status, messages=seen, error=state.error)
                text = state.status_message or state.status
                return CallToolResult(content=[{"type": "text", "text": text}], is_error=True)
            await asyncio.sleep((state.poll_interval_ms or 1000) / 1000)


class Elicitations:
    """Records each URL elicitation, and answers it as its user would: here, declining."""

    def __init__(self):
        self.seen = []

    async def __call__(self, context, params):
        self.seen.append({"mode": params.mode, "url": getattr(params, "url", None), "message": params.message})
        report("elicited", mode=params.mode, url=getattr(params, "url", None), message=params.message)
        return ElicitResult(action="decline")


def as_agent(connect, token):
    """`connect` of agent.py for `token`, its server's stderr kept out of the report."""

    @asynccontextmanager
    async def connected(**options):
        with tempfile.TemporaryFile("w+") as errlog:
            async with connect(token, errlog, **options) as client:
                yield client

    return connected


async def with_tasks(connect):
    tasks, elicitations = Tasks(), Elicitations()
    async with connect(extensions=[tasks], elicitation_callback=elicitations) as client:
        report("connected", client="tasks", protocol_version=client.protocol_version)
        for days, wants in [(14, "approve"), (21, "reject"), (30, "expire"), (60, "cancel")]:
            tasks.wants = wants
            result = await client.call_tool(SETTINGS, {"project": "prj_184", "retention_days": days})
            report("called", wants=wants, elicited=len(elicitations.seen), **answer(result))
        # The cancelled task's plan still waits: a person decides it, and the agent hears of it.
        cancelled = elicitations.seen[-1]["url"].rsplit("/", 1)[-1]
        report("decide", plan_id=cancelled)
        waited = await client.call_tool("countersign_wait", {"plan_id": cancelled, "timeout_seconds": 60})
        report("after_cancel", **answer(waited))


async def without(connect, mode):
    """A client that declares neither, at 2026-07-28 (`auto`) or 2025-11-25 (`legacy`); at
    2025-11-25, then, one that declares both, which that version's sessions do not get."""
    async with connect(**({"mode": mode} if mode == "legacy" else {})) as client:
        report("connected", client=mode, protocol_version=client.protocol_version)
        days = 90 if mode == "auto" else 100
        result = await client.call_tool(SETTINGS, {"project": "prj_184", "retention_days": days})
        report("called", client=mode, **answer(result))
    if mode == "legacy":
        elicitations = Elicitations()
        options = {"mode": "legacy", "elicitation_callback": elicitations, "extensions": [advertise(TASKS)]}
        async with connect(**options) as client:
            result = await client.call_tool(SETTINGS, {"project": "prj_184", "retention_days": 120})
            for _ in range(50):
                if elicitations.seen:
                    break
                await asyncio.sleep(0.1)
            report("called", client="legacy_declaring_both", elicited=len(elicitations.seen), **answer(result))


async def main(argv):
    if argv[0] == "http":
        connect = as_agent(over_http(argv[1]), argv[2])
    else:
        connect = as_agent(over_stdio(argv[1], argv[2]), argv[3])
    await with_tasks(connect)
    await without(connect, "auto")
    await without(connect, "legacy")
    report("done")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
