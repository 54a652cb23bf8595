-- When the agent cancelled the MCP task that waited on this plan (issue 48, docs/mcp.md): the
-- task ends, the plan does not, and a person may still decide it. NULL while no task was
-- cancelled, as for every plan stored before.
ALTER TABLE plans ADD COLUMN task_cancelled_at TEXT;
