-- A standing approval's use is taken when a plan it approved runs, not when the plan is stored
-- (issue 46, docs/standing.md): a preview reserves nothing.

-- What the conditional update that takes a use compares with, and what the scan for a new
-- plan's candidates skips used-up ones by.
ALTER TABLE standing_approvals ADD COLUMN max_plans INTEGER NOT NULL DEFAULT 1;
UPDATE standing_approvals SET max_plans = json_extract(statement, '$.max_plans');
CREATE INDEX standing_by_approver ON standing_approvals (approver_id);

-- The use a standing approval's approval became as its plan ran: its number (1 for the first
-- plan it let run) and when. NULL while the plan it approved has not run.
ALTER TABLE decisions ADD COLUMN standing_use INTEGER;
ALTER TABLE decisions ADD COLUMN standing_used_at TEXT;
-- Uses taken before this migration were taken as their plans were stored: numbered in order.
UPDATE decisions SET standing_used_at = decided_at,
    standing_use = (SELECT COUNT(*) FROM decisions d
                    WHERE d.standing_id = decisions.standing_id AND d.id <= decisions.id)
WHERE standing_id IS NOT NULL;
