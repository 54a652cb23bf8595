-- plan_reads holds only the reads of plans that can still go stale (pending, approved, stale):
-- a write looks up the readers of what it moved, and that lookup must not grow with every plan
-- the gateway ever made. Finished plans leave it (queue::publish); this index finds their rows.
CREATE INDEX plan_reads_by_plan ON plan_reads (plan_id);

DELETE FROM plan_reads WHERE plan_id IN (
    SELECT id FROM plans WHERE status IN ('executed', 'rejected', 'superseded', 'expired', 'failed')
);
