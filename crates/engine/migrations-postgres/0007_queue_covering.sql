-- The queue's index carries the summaries it serves: a listing then reads the index alone and
-- never walks a plan row, whose preview (often kilobytes, stored before the summary) SQLite would
-- otherwise step through to reach the summary.
-- PostgreSQL: the index keeps its name and partial predicate but does not carry `summary`. A
-- B-tree entry may not exceed about 2.7 kB, and a summary (its approvals list grows with every
-- approver) is not bounded by that, so carrying it could make an insert or a summary rewrite
-- fail. PostgreSQL also moves a long preview out of the row (TOAST), so reading the summary
-- from the plan row does not step through it. `status` is carried as in SQLite (INCLUDE: it is
-- not part of the key order).
DROP INDEX plans_queue;
CREATE INDEX plans_queue ON plans (expires_at, id) INCLUDE (status)
    WHERE status IN ('pending_approval', 'stale');
