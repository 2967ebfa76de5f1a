-- A bot is 'active' (scheduled), 'disabled' by the admin, 'suspended' by the server
-- (it could not start or shake hands in too many reported games in a row),
-- 'superseded' by a newer version, or 'removed' (never scheduled again). Its games
-- always stay. status_reason says why, in words.
ALTER TABLE bots ADD COLUMN status TEXT NOT NULL DEFAULT 'active';
ALTER TABLE bots ADD COLUMN status_reason TEXT NOT NULL DEFAULT '';
-- Reported games in a row in which it could not start or shake hands.
ALTER TABLE bots ADD COLUMN start_failures BIGINT NOT NULL DEFAULT 0;
-- An updated bot is a new row (its own rating row) linked to the one it replaces.
ALTER TABLE bots ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE bots ADD COLUMN previous_id BIGINT REFERENCES bots(id);
-- A bot taken out of play withdraws the groups it was scheduled in that no worker
-- holds yet (status 'withdrawn': never leased, no games). A lease takes expired
-- leases, then scheduled groups, each through its own partial index, so it never
-- walks past finished, withdrawn or currently held groups.
DROP INDEX IF EXISTS match_groups_unfinished;
CREATE INDEX match_groups_scheduled ON match_groups (id) WHERE status = 'scheduled';
CREATE INDEX match_groups_leased ON match_groups (lease_expires_ms) WHERE status = 'leased';
