-- The dispatcher pages pending messages by id (`state = 'pending' AND id > ? ORDER BY id`); an
-- index keyed by retry time was never chosen for that, and every pass walked the whole outbox
-- history. Keyed by id, a pass reads pending rows only.
DROP INDEX email_outbox_pending;
CREATE INDEX email_outbox_pending ON email_outbox (id) WHERE state = 'pending';
