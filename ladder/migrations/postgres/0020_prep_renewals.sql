-- A build and check's lease is renewed while it runs (a worker that died
-- delays a version by one lease period, not by the build's whole time limit):
-- this is the last moment its renewals may reach.
ALTER TABLE bots ADD COLUMN prep_deadline_ms BIGINT;
