-- Each build and check that a worker could not finish: its own trouble (which
-- it says), or a lease that ran out. A version that two workers could not
-- finish, or that three leases in all did not, ends `build-failed`: no version
-- is leased for ever.
CREATE TABLE prep_tries (
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    worker_id BIGINT NOT NULL REFERENCES workers(id),
    reason TEXT NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX prep_tries_bot ON prep_tries (bot_id);
