-- Standing approvals and amendments (docs/standing.md, docs/amend.md).

-- An approver's signed standing approval: the envelope verbatim, what it names that the gateway
-- looks it up by, and how much of it is used. Uses are counted in the transaction that stores
-- the plan they count for; a decision row (decisions.standing_id) is each use's approval.
CREATE TABLE standing_approvals (
    id             TEXT PRIMARY KEY,
    approver_id    TEXT NOT NULL REFERENCES approvers (id),
    key_id         TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    capability_id  TEXT NOT NULL,
    nonce          TEXT NOT NULL UNIQUE,
    statement      TEXT NOT NULL,
    envelope       TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    plans_used     INTEGER NOT NULL DEFAULT 0,
    credits_used   TEXT NOT NULL DEFAULT '0',
    revoked_at     TEXT,
    revoked_by     TEXT,
    -- Why the policy in force no longer lets it cover what it names; NULL while it does.
    suspended      TEXT
);
CREATE INDEX standing_by_agent ON standing_approvals (agent_id, capability_id);

ALTER TABLE decisions ADD COLUMN standing_id TEXT;
ALTER TABLE decisions ADD COLUMN standing_credits TEXT;
CREATE INDEX decisions_by_standing ON decisions (standing_id);

-- Who changed the request of the plan this one supersedes, and how (JSON).
ALTER TABLE plans ADD COLUMN amendment TEXT;
