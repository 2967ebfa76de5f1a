-- Workers with their own tokens, so that every reported group is someone's: the
-- server keeps the SHA-256 of a token, never the token.
CREATE TABLE workers (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    token_hash TEXT NOT NULL UNIQUE,
    created_ms BIGINT NOT NULL,
    revoked_ms BIGINT
);
-- Which worker reported a group (NULL: played by a local tournament, or reported
-- before workers had names).
ALTER TABLE match_groups ADD COLUMN reported_by BIGINT REFERENCES workers(id);
CREATE INDEX match_groups_reported_by ON match_groups (reported_by);
-- The fault kinds of a game, comma-separated (empty: none), for the workers' audit.
ALTER TABLE games ADD COLUMN fault_kinds TEXT NOT NULL DEFAULT '';
