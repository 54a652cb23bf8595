-- A blocked plan (`executable: false`) reaches no person (PROTOCOL section 2): it keeps no
-- summary, so the queue, which lists summaries, leaves it out. Blocked plans already queued leave.
UPDATE plans SET summary = NULL
    WHERE summary IS NOT NULL AND (preview::jsonb ->> 'executable') = 'false';
DROP INDEX plans_queue;
CREATE INDEX plans_queue ON plans (expires_at, id) INCLUDE (status)
    WHERE status IN ('pending_approval', 'stale') AND summary IS NOT NULL;
