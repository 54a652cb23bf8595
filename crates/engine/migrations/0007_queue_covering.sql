-- The queue's index carries the summaries it serves: a listing then reads the index alone and
-- never walks a plan row, whose preview (often kilobytes, stored before the summary) SQLite would
-- otherwise step through to reach the summary.
DROP INDEX plans_queue;
CREATE INDEX plans_queue ON plans (expires_at, id, status, summary)
    WHERE status IN ('pending_approval', 'stale');
