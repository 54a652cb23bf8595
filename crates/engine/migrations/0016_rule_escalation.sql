-- When the next rule of a plan widens to its escalation: the sweep publishes the plan again
-- then, so the people it now asks see it wait on them (docs/policy.md).
ALTER TABLE plans ADD COLUMN escalates_at TEXT;
CREATE INDEX plans_escalating ON plans (escalates_at) WHERE escalates_at IS NOT NULL;
