-- A lease's last moment, whatever its renewals: a few times the longest its
-- group can legally take. Past it the lease runs out and the group goes to
-- another worker with a new seed (a worker that renews without playing cannot
-- hold a group, and its seed, for ever). NULL: leased before this column.
ALTER TABLE match_groups ADD COLUMN lease_deadline_ms BIGINT;
-- What each worker was leased, and how many of those leases ran out in its
-- hands (the group then went to another worker): the workers' audit compares
-- each worker's rate with the others'.
ALTER TABLE workers ADD COLUMN groups_leased BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN leases_expired BIGINT NOT NULL DEFAULT 0;
