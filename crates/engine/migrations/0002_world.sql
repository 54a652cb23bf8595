-- The rest of the demo world, and the bookkeeping that refresh, events, idempotent previews and
-- self-approval checks need.

ALTER TABLE plans ADD COLUMN supersedes TEXT;
ALTER TABLE plans ADD COLUMN superseded_by TEXT;

-- Which resources each plan read, so a write finds the plans it made stale without a scan.
CREATE TABLE plan_reads (
    resource  TEXT NOT NULL,
    plan_id   TEXT NOT NULL REFERENCES plans (id),
    PRIMARY KEY (resource, plan_id)
) WITHOUT ROWID;

-- The queue's change log: its highest revision is the queue revision, SSE resumes from it.
CREATE TABLE plan_events (
    revision  INTEGER PRIMARY KEY,
    plan_id   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    at        TEXT NOT NULL
);

ALTER TABLE preview_audit ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX preview_audit_by_key ON preview_audit (agent_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

ALTER TABLE enrollment_codes ADD COLUMN user_id TEXT;
ALTER TABLE approvers ADD COLUMN user_id TEXT;

CREATE TABLE wallets (
    agent_id       TEXT PRIMARY KEY REFERENCES agents (id),
    limit_credits  TEXT NOT NULL,
    spent_credits  TEXT NOT NULL
);

-- Demo world: people, groups and what membership brings.
CREATE TABLE users (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    email       TEXT NOT NULL,
    employment  TEXT NOT NULL,
    suspended   INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE groups (
    id        TEXT PRIMARY KEY,
    name      TEXT NOT NULL,
    revision  INTEGER NOT NULL
);

CREATE TABLE group_members (
    group_id  TEXT NOT NULL REFERENCES groups (id),
    user_id   TEXT NOT NULL REFERENCES users (id),
    PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;
CREATE INDEX group_members_by_user ON group_members (user_id);

-- Members of `child_id` have the access of `parent_id` as well.
CREATE TABLE group_nesting (
    parent_id  TEXT NOT NULL REFERENCES groups (id),
    child_id   TEXT NOT NULL REFERENCES groups (id),
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;

CREATE TABLE entitlements (
    id        TEXT PRIMARY KEY,
    name      TEXT NOT NULL,
    group_id  TEXT REFERENCES groups (id),
    revision  INTEGER NOT NULL
);

CREATE TABLE entitlement_holders (
    entitlement_id  TEXT NOT NULL REFERENCES entitlements (id),
    user_id         TEXT NOT NULL REFERENCES users (id),
    PRIMARY KEY (entitlement_id, user_id)
) WITHOUT ROWID;

-- Project roles, drawing on one seat pool.
CREATE TABLE project_members (
    project_id  TEXT NOT NULL REFERENCES projects (id),
    user_id     TEXT NOT NULL REFERENCES users (id),
    role        TEXT NOT NULL,
    PRIMARY KEY (project_id, user_id)
) WITHOUT ROWID;

CREATE TABLE seat_pools (
    id        TEXT PRIMARY KEY,
    total     INTEGER NOT NULL,
    used      INTEGER NOT NULL,
    revision  INTEGER NOT NULL
);

-- Storage: a quota caps every project of a team; a project over it takes no uploads.
CREATE TABLE storage_quotas (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    quota_bytes  INTEGER NOT NULL,
    revision     INTEGER NOT NULL
);
ALTER TABLE projects ADD COLUMN quota_id TEXT REFERENCES storage_quotas (id);
ALTER TABLE projects ADD COLUMN uploads_blocked INTEGER NOT NULL DEFAULT 0;

CREATE TABLE documents (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects (id),
    filename    TEXT NOT NULL,
    mime_type   TEXT NOT NULL,
    size_bytes  INTEGER NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX documents_by_project ON documents (project_id);

-- Mail leaves only through this outbox, written in the transaction that executes a plan.
CREATE TABLE email_outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     TEXT NOT NULL,
    recipient   TEXT NOT NULL,
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    plan_id     TEXT,
    created_at  TEXT NOT NULL
);
