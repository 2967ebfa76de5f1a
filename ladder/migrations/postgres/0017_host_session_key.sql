-- A host's session keeps a fingerprint of the admin token it was opened with
-- (a SHA-256 of it, salted with what it is for): once the host changes the
-- token, the fingerprint differs and every session opened before ends. Authors'
-- sessions have none (their tokens are revoked one by one). A host session of
-- before this has none either, and ends.
ALTER TABLE web_sessions ADD COLUMN host_key TEXT;
CREATE INDEX web_sessions_author ON web_sessions (author_id, created_ms);
