-- An agent's MCP task on a plan (issue 48, docs/mcp.md): when a task was answered for the plan
-- (only such a plan is a task), and when the agent cancelled it. Cancelling ends the agent's
-- wait, not the plan: a person may still decide it. NULL for every plan stored before.
ALTER TABLE plans ADD COLUMN task_opened_at TEXT;
ALTER TABLE plans ADD COLUMN task_cancelled_at TEXT;
