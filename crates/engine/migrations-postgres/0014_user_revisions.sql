-- Users carry a revision, and every write to a person moves it, whoever writes: no capability
-- writes users, a directory sync or an operator does. A grant reads its subject's revision, so
-- a changed address or suspension makes the plan stale for its approvers, not only at invoke.
ALTER TABLE users ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;

CREATE FUNCTION users_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.revision := OLD.revision + 1;
    RETURN NEW;
END
$$;
CREATE TRIGGER users_revision BEFORE UPDATE OF name, email, employment, suspended ON users
    FOR EACH ROW
    WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.email IS DISTINCT FROM NEW.email
        OR OLD.employment IS DISTINCT FROM NEW.employment
        OR OLD.suspended IS DISTINCT FROM NEW.suspended)
    EXECUTE FUNCTION users_revision();

-- A group's plans read its members' employment (a removal's filter) and addresses (the
-- removal's notices), so a change to a member moves each group they belong to directly.
CREATE FUNCTION users_move_their_groups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE groups SET revision = revision + 1
        WHERE id IN (SELECT group_id FROM group_members WHERE user_id = NEW.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER users_move_their_groups AFTER UPDATE OF email, employment ON users
    FOR EACH ROW
    WHEN (OLD.email IS DISTINCT FROM NEW.email OR OLD.employment IS DISTINCT FROM NEW.employment)
    EXECUTE FUNCTION users_move_their_groups();
