-- The gateway instance whose task makes a plan's provider call while it is in flight, named so
-- that another instance on the same database can tell a call whose runner died from one still
-- running. NULL when nothing is in flight.
ALTER TABLE plans ADD COLUMN runner TEXT;
-- Every sweep looks for calls whose runner died: only plans with a call in flight are indexed.
CREATE INDEX plans_running ON plans (runner) WHERE runner IS NOT NULL;
