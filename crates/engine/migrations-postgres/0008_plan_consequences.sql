-- What a plan's record and summary say beyond its preview, fixed when the plan is stored.

-- The distinct subjects a plan touches across all its effects: the queue's `subjects_total`,
-- counted once at insert (a subject in several effects is one subject), never per listing.
ALTER TABLE plans ADD COLUMN subjects_distinct BIGINT;
UPDATE plans SET subjects_distinct =
    (SELECT count(DISTINCT subject_id) FROM plan_subjects s WHERE s.plan_id = plans.id)
    WHERE subject_rows > 0 AND subjects_swept_at IS NULL;

-- The items a validation entry counts, by name (JSON, `ValidationSubjects` list).
ALTER TABLE plans ADD COLUMN validation_subjects TEXT COLLATE "C";

-- What happens to one subject, for subject pages (JSON object), e.g. an item's expiry before
-- and after.
ALTER TABLE plan_subjects ADD COLUMN detail TEXT COLLATE "C";
