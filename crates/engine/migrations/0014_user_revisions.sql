-- Users carry a revision, and every write to a person moves it, whoever writes: no capability
-- writes users, a directory sync or an operator does. A grant reads its subject's revision, so
-- a changed address or suspension makes the plan stale for its approvers, not only at invoke.
ALTER TABLE users ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
CREATE TRIGGER users_revision AFTER UPDATE OF name, email, employment, suspended ON users
    WHEN OLD.name IS NOT NEW.name OR OLD.email IS NOT NEW.email
        OR OLD.employment IS NOT NEW.employment OR OLD.suspended IS NOT NEW.suspended
BEGIN
    UPDATE users SET revision = revision + 1 WHERE id = NEW.id;
END;
-- A group's plans read its members' employment (a removal's filter) and addresses (the
-- removal's notices), so a change to a member moves each group they belong to directly.
CREATE TRIGGER users_move_their_groups AFTER UPDATE OF email, employment ON users
    WHEN OLD.email IS NOT NEW.email OR OLD.employment IS NOT NEW.employment
BEGIN
    UPDATE groups SET revision = revision + 1
        WHERE id IN (SELECT group_id FROM group_members WHERE user_id = NEW.id);
END;
