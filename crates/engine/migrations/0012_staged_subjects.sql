-- A large plan's subject rows are written before the plan itself, in short transactions of their
-- own, so that storing 100,000 of them never holds the write lock for long (engine `staging`).
-- They name a plan id no plan holds yet: the reference to `plans` goes. SQLite drops a foreign
-- key only by building the table again.
CREATE TABLE plan_subjects_staged (
    plan_id     TEXT NOT NULL,
    effect_id   TEXT NOT NULL,
    subject_id  TEXT NOT NULL,
    label       TEXT NOT NULL,
    detail      TEXT,
    PRIMARY KEY (plan_id, effect_id, subject_id)
) WITHOUT ROWID;
INSERT INTO plan_subjects_staged (plan_id, effect_id, subject_id, label, detail)
    SELECT plan_id, effect_id, subject_id, label, detail FROM plan_subjects;
DROP TABLE plan_subjects;
ALTER TABLE plan_subjects_staged RENAME TO plan_subjects;

-- Subject rows written for a plan that is not stored yet: deleted with the plan's insert, and by
-- the sweep when the preview failed or was abandoned before it.
CREATE TABLE subject_staging (
    plan_id     TEXT PRIMARY KEY,
    started_at  TEXT NOT NULL
);
CREATE INDEX subject_staging_by_age ON subject_staging (started_at);
