-- A large plan's subject rows are written before the plan itself, in short transactions of their
-- own, so that storing 100,000 of them never holds the write lock for long (engine `staging`).
-- They name a plan id no plan holds yet: the reference to `plans` goes.
ALTER TABLE plan_subjects DROP CONSTRAINT plan_subjects_plan_id_fkey;

-- Subject rows written for a plan that is not stored yet: deleted with the plan's insert, and by
-- the sweep when the preview failed or was abandoned before it.
CREATE TABLE subject_staging (
    plan_id     TEXT COLLATE "C" PRIMARY KEY,
    started_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX subject_staging_by_age ON subject_staging (started_at);
