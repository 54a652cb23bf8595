-- Accounts: revocation, expiring enrollment codes, codes named by id for bound enrollment.

-- Revoked rows stay: old decisions keep their key, and an id is never reused.
ALTER TABLE agents ADD COLUMN revoked_at TEXT;
ALTER TABLE approvers ADD COLUMN revoked_at TEXT;
ALTER TABLE approver_keys ADD COLUMN revoked_at TEXT;

ALTER TABLE enrollment_codes ADD COLUMN expires_at TEXT;
-- Codes made before expiry existed get the default lifetime from when they were made.
UPDATE enrollment_codes
   SET expires_at = strftime('%Y-%m-%dT%H:%M:%SZ', created_at, '+72 hours')
 WHERE expires_at IS NULL;

-- What the console sends instead of the code (countersign_proto::enrollment::code_id).
ALTER TABLE enrollment_codes ADD COLUMN code_id TEXT;
CREATE UNIQUE INDEX enrollment_codes_by_id ON enrollment_codes (code_id)
    WHERE code_id IS NOT NULL;
