-- Every decision this console signed: written before it is sent, settled by the gateway's answer.
CREATE TABLE decisions (
    id           INTEGER PRIMARY KEY,
    gateway_id   TEXT NOT NULL,
    plan_id      TEXT NOT NULL,
    decision     TEXT NOT NULL,
    envelope     TEXT NOT NULL,
    public_key   TEXT NOT NULL,
    recorded_at  TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    state        TEXT NOT NULL,
    answer       TEXT,
    answered_at  TEXT
);
CREATE INDEX decisions_pending ON decisions (gateway_id, state);

-- Plans a notification was already shown for (or that were in the queue before we looked).
CREATE TABLE seen_plans (
    gateway_id  TEXT NOT NULL,
    plan_id     TEXT NOT NULL,
    PRIMARY KEY (gateway_id, plan_id)
) WITHOUT ROWID;
