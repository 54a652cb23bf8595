-- A plan's changes of status, counted for /metrics (issue 51) without reading the plan again.
-- Statuses are written in several places before a plan is published; `counted_status` is the
-- status as last published, which the publishing UPDATE replaces, and `previous_status` keeps
-- the value it replaced, which that UPDATE returns (every SET reads the row as it was).
ALTER TABLE plans ADD COLUMN counted_status TEXT;
ALTER TABLE plans ADD COLUMN previous_status TEXT;
UPDATE plans SET counted_status = status;
