-- The approval queue kept ready to serve: each plan's summary as approvers see it, rewritten by
-- every change that can alter it (created, decided, executed, stale, expired, superseded), so a
-- listing reads summaries instead of re-deriving every plan, and a conditional poll needs only
-- the queue revision.
ALTER TABLE plans ADD COLUMN summary TEXT;

-- The queue in its order, for listing and keyset pages.
CREATE INDEX plans_queue ON plans (expires_at, id) WHERE status IN ('pending_approval', 'stale');
