-- Remedies for held and failed emails (issue 50, seed 004): an approver's signed release, resend
-- or cancellation of one message, kept verbatim as the audit of what was done about it.

-- A cancelled message is a state of its own, which the CHECK of 0009 does not allow: SQLite
-- changes a CHECK only by building the table again. Two columns join it: where a release sends
-- a held message (its recipient's address as the hold found it), and what the agent was charged
-- for the message (credits), refunded when it is cancelled.
CREATE TABLE email_outbox_next (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id          TEXT NOT NULL,
    recipient        TEXT NOT NULL,
    subject          TEXT NOT NULL,
    body             TEXT NOT NULL,
    plan_id          TEXT,
    created_at       TEXT NOT NULL,
    state            TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'sent', 'held', 'failed', 'cancelled')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT,
    last_error       TEXT,
    sent_at          TEXT,
    release_to       TEXT,
    charge           TEXT NOT NULL DEFAULT '0.00'
);
INSERT INTO email_outbox_next (id, user_id, recipient, subject, body, plan_id, created_at, state,
                               attempts, next_attempt_at, last_error, sent_at)
    SELECT id, user_id, recipient, subject, body, plan_id, created_at, state, attempts,
           next_attempt_at, last_error, sent_at
    FROM email_outbox;
DROP TABLE email_outbox;
ALTER TABLE email_outbox_next RENAME TO email_outbox;
CREATE INDEX email_outbox_pending ON email_outbox (id) WHERE state = 'pending';
CREATE INDEX email_outbox_by_plan ON email_outbox (plan_id, state);

CREATE TABLE mail_remedies (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id   INTEGER NOT NULL REFERENCES email_outbox (id),
    plan_id      TEXT,
    approver_id  TEXT NOT NULL REFERENCES approvers (id),
    key_id       TEXT NOT NULL,
    remedy       TEXT NOT NULL,
    mail_digest  TEXT NOT NULL,
    nonce        TEXT NOT NULL UNIQUE,
    envelope     TEXT NOT NULL,
    refunded     TEXT NOT NULL,
    decided_at   TEXT NOT NULL
);
CREATE INDEX mail_remedies_by_message ON mail_remedies (message_id);
