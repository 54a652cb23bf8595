-- Gateway bookkeeping: identities, plans, decisions and the two audits.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE agents (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    on_behalf_of  TEXT,
    token_hash    TEXT NOT NULL UNIQUE,
    created_at    TEXT NOT NULL
);

CREATE TABLE enrollment_codes (
    code_hash     TEXT PRIMARY KEY,
    display_name  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    used_at       TEXT
);

CREATE TABLE approvers (
    id            TEXT PRIMARY KEY,
    display_name  TEXT NOT NULL,
    token_hash    TEXT NOT NULL UNIQUE,
    created_at    TEXT NOT NULL
);

CREATE TABLE approver_keys (
    id            TEXT PRIMARY KEY,
    approver_id   TEXT NOT NULL REFERENCES approvers (id),
    public_key    TEXT NOT NULL,
    active        INTEGER NOT NULL,
    created_at    TEXT NOT NULL
);

CREATE TABLE plans (
    id                  TEXT PRIMARY KEY,
    capability_id       TEXT NOT NULL,
    agent_id            TEXT NOT NULL REFERENCES agents (id),
    plan_digest         TEXT NOT NULL,
    preview             TEXT NOT NULL,
    status              TEXT NOT NULL,
    required_approvals  INTEGER NOT NULL,
    created_at          TEXT NOT NULL,
    expires_at          TEXT NOT NULL,
    execution           TEXT
);
CREATE INDEX plans_by_status ON plans (status, expires_at);

-- Subjects live here, not inside the preview, so a plan may name a million of them.
CREATE TABLE plan_subjects (
    plan_id     TEXT NOT NULL REFERENCES plans (id),
    effect_id   TEXT NOT NULL,
    subject_id  TEXT NOT NULL,
    label       TEXT NOT NULL,
    PRIMARY KEY (plan_id, effect_id, subject_id)
) WITHOUT ROWID;

CREATE TABLE decisions (
    id            INTEGER PRIMARY KEY,
    plan_id       TEXT NOT NULL REFERENCES plans (id),
    approver_id   TEXT NOT NULL REFERENCES approvers (id),
    key_id        TEXT NOT NULL,
    decision      TEXT NOT NULL,
    reason        TEXT,
    nonce         TEXT NOT NULL UNIQUE,
    envelope      TEXT NOT NULL,
    decided_at    TEXT NOT NULL,
    UNIQUE (plan_id, approver_id)
);

CREATE TABLE invocations (
    agent_id         TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL,
    request_digest   TEXT NOT NULL,
    response         TEXT NOT NULL,
    PRIMARY KEY (agent_id, idempotency_key)
);

CREATE TABLE preview_audit (
    id             TEXT PRIMARY KEY,
    capability_id  TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    plan_id        TEXT,
    valid          INTEGER NOT NULL,
    request        TEXT NOT NULL,
    at             TEXT NOT NULL
);

CREATE TABLE execution_audit (
    id             TEXT PRIMARY KEY,
    plan_id        TEXT,
    capability_id  TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    journal        TEXT NOT NULL,
    at             TEXT NOT NULL
);

-- The demo world's domain tables.
CREATE TABLE projects (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    revision        INTEGER NOT NULL,
    retention_days  INTEGER NOT NULL,
    retention_note  TEXT NOT NULL
);

CREATE TABLE project_items (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects (id),
    title       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    legal_hold  INTEGER NOT NULL
);
