-- Each queued message's delivery, after the execution that queued it commits: `pending` until
-- the relay takes it, `sent`, `held` for a person when its recipient changed since the plan, or
-- `failed` when the relay refused it for good or retries ran out.
ALTER TABLE email_outbox ADD COLUMN state TEXT NOT NULL DEFAULT 'pending'
    CHECK (state IN ('pending', 'sent', 'held', 'failed'));
ALTER TABLE email_outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
-- Not before this time: the next retry, or the lease of a dispatcher sending it now.
ALTER TABLE email_outbox ADD COLUMN next_attempt_at TEXT;
ALTER TABLE email_outbox ADD COLUMN last_error TEXT;
ALTER TABLE email_outbox ADD COLUMN sent_at TEXT;
CREATE INDEX email_outbox_pending ON email_outbox (next_attempt_at) WHERE state = 'pending';
-- A plan's record counts its messages by state on every read.
CREATE INDEX email_outbox_by_plan ON email_outbox (plan_id, state);
-- Messages queued before delivery existed are not sent months late by a first relay: a person
-- looks at them first.
UPDATE email_outbox SET state = 'held', last_error = 'queued_before_delivery';
