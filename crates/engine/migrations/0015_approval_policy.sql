-- Approval policy as code (docs/policy.md): the directory of teams, agents bound to a team, the
-- rules each plan was stored with, and the policy the store evaluates.

-- A person (a user id, or an approver's id for an approver invited without one) in a team.
CREATE TABLE team_members (
    team    TEXT NOT NULL,
    person  TEXT NOT NULL,
    PRIMARY KEY (team, person)
);
CREATE INDEX team_members_by_person ON team_members (person);

-- An agent of a team: a policy may send its plans to that team, or exclude it.
ALTER TABLE agents ADD COLUMN team TEXT;

-- The rules the policy set when the plan was stored (JSON), and the digest of that policy. A
-- plan stored before policies has neither: it needs its required_approvals from anyone.
ALTER TABLE plans ADD COLUMN rules TEXT;
ALTER TABLE plans ADD COLUMN policy_digest TEXT;

-- The policy in force, so a gateway started with another one re-evaluates the open plans.
CREATE TABLE policy_state (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    digest        TEXT NOT NULL,
    origin        TEXT NOT NULL,
    activated_at  TEXT NOT NULL
);
