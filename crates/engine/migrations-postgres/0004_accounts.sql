-- Accounts: revocation, expiring enrollment codes, codes named by id for bound enrollment.

-- Revoked rows stay: old decisions keep their key, and an id is never reused.
ALTER TABLE agents ADD COLUMN revoked_at TEXT COLLATE "C";
ALTER TABLE approvers ADD COLUMN revoked_at TEXT COLLATE "C";
ALTER TABLE approver_keys ADD COLUMN revoked_at TEXT COLLATE "C";

ALTER TABLE enrollment_codes ADD COLUMN expires_at TEXT COLLATE "C";
-- Codes made before expiry existed get the default lifetime from when they were made.
-- Same text as SQLite's strftime('%Y-%m-%dT%H:%M:%SZ', created_at, '+72 hours'): UTC, whole
-- seconds, e.g. 2026-12-01T13:10:02Z. A time without an offset is read as UTC (as SQLite reads
-- it; hence the transaction-local time zone), fractional seconds are rounded to the millisecond
-- as SQLite does and then dropped, not rounded, by the seconds field.
SET LOCAL TIME ZONE 'UTC';
UPDATE enrollment_codes
   SET expires_at = to_char(
           date_trunc('milliseconds',
                      (created_at::timestamptz AT TIME ZONE 'UTC') + interval '0.5 milliseconds')
               + interval '72 hours',
           'YYYY-MM-DD"T"HH24:MI:SS"Z"')
 WHERE expires_at IS NULL;

-- What the console sends instead of the code (countersign_proto::enrollment::code_id).
ALTER TABLE enrollment_codes ADD COLUMN code_id TEXT COLLATE "C";
CREATE UNIQUE INDEX enrollment_codes_by_id ON enrollment_codes (code_id)
    WHERE code_id IS NOT NULL;
