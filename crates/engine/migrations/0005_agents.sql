-- What agents may do, what they may keep stored, and approvals that can be withdrawn.

-- An agent's scopes: the capabilities it may preview and invoke, each on every resource ('*') or
-- on one. An agent with no rows at all keeps full access (the set-ups made before scopes).
CREATE TABLE agent_scopes (
    agent_id       TEXT NOT NULL REFERENCES agents (id),
    capability_id  TEXT NOT NULL,
    resource       TEXT NOT NULL,
    PRIMARY KEY (agent_id, capability_id, resource)
) WITHOUT ROWID;

-- Subject rows a plan still holds, so a per-agent cap is a sum over plans rather than a count
-- over millions of rows; a closed plan's rows are swept in bounded passes after its lifetime.
ALTER TABLE plans ADD COLUMN subject_rows INTEGER NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN subjects_swept_at TEXT;
UPDATE plans SET subject_rows = (SELECT COUNT(*) FROM plan_subjects s WHERE s.plan_id = plans.id);
CREATE INDEX plans_holding_subjects ON plans (agent_id, subject_rows) WHERE subject_rows > 0;
CREATE INDEX plans_to_sweep ON plans (status, expires_at) WHERE subject_rows > 0;
-- An agent's live plans, counted on every preview against its cap.
CREATE INDEX plans_by_agent ON plans (agent_id, status, expires_at);

-- Decisions become a log: an approval withdrawn by its approver's later rejection stays on file
-- (`withdrawn_at`), and each approver has at most one standing decision per plan.
CREATE TABLE decisions_log (
    id            INTEGER PRIMARY KEY,
    plan_id       TEXT NOT NULL REFERENCES plans (id),
    approver_id   TEXT NOT NULL REFERENCES approvers (id),
    key_id        TEXT NOT NULL,
    decision      TEXT NOT NULL,
    reason        TEXT,
    nonce         TEXT NOT NULL UNIQUE,
    envelope      TEXT NOT NULL,
    decided_at    TEXT NOT NULL,
    withdrawn_at  TEXT
);
INSERT INTO decisions_log (id, plan_id, approver_id, key_id, decision, reason, nonce, envelope,
                           decided_at)
    SELECT id, plan_id, approver_id, key_id, decision, reason, nonce, envelope, decided_at
    FROM decisions;
DROP TABLE decisions;
ALTER TABLE decisions_log RENAME TO decisions;
CREATE UNIQUE INDEX decisions_standing ON decisions (plan_id, approver_id)
    WHERE withdrawn_at IS NULL;
CREATE INDEX decisions_by_plan ON decisions (plan_id, approver_id);
