-- When each author's last build and check was leased: the next build goes to
-- the author whose last one started longest ago (never: first), so one
-- author's queued versions never delay another author's first.
ALTER TABLE authors ADD COLUMN last_build_ms BIGINT;
