-- Authors: strangers who upload their own bots, each with a token of their own
-- (the server keeps its SHA-256, never the token) and a cap on their bots.
CREATE TABLE authors (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    token_hash TEXT NOT NULL UNIQUE,
    max_bots BIGINT NOT NULL,
    created_ms BIGINT NOT NULL,
    revoked_ms BIGINT
);
-- Bots' files, uploaded or built: a canonical tar in gzip named by its SHA-256.
-- Never changed, and kept while a bot names one, so that any game can be played
-- again with the exact bot that played it. Their bytes are here, or (content
-- NULL) in the object store the server was given (`ladder serve --artifacts`),
-- under their hash.
CREATE TABLE artifacts (
    sha256 TEXT PRIMARY KEY,
    size BIGINT NOT NULL,
    content BYTEA,
    created_ms BIGINT NOT NULL
);
-- An uploaded bot: its author, the manifest it came with (JSON), the upload as
-- sent (source) and what its games run (the built folder; the upload itself when
-- it has no build), the build's log and the qualification's report.
ALTER TABLE bots ADD COLUMN author_id BIGINT REFERENCES authors(id);
ALTER TABLE bots ADD COLUMN manifest TEXT;
ALTER TABLE bots ADD COLUMN source_sha256 TEXT REFERENCES artifacts(sha256);
ALTER TABLE bots ADD COLUMN artifact_sha256 TEXT REFERENCES artifacts(sha256);
ALTER TABLE bots ADD COLUMN build_log TEXT NOT NULL DEFAULT '';
ALTER TABLE bots ADD COLUMN check_report TEXT NOT NULL DEFAULT '';
-- Who set the status last: 'admin', 'author' or 'server'. An author may put back
-- only what they or the server took out, never what the host did.
ALTER TABLE bots ADD COLUMN status_by TEXT NOT NULL DEFAULT 'admin';
CREATE INDEX bots_author ON bots (author_id);
-- The runtime it needs on a worker (from its manifest), and who holds its build
-- and check now: a worker's lease, which runs out if the worker does not report.
ALTER TABLE bots ADD COLUMN runtime TEXT;
ALTER TABLE bots ADD COLUMN prep_lease TEXT;
ALTER TABLE bots ADD COLUMN prep_expires_ms BIGINT;
ALTER TABLE bots ADD COLUMN prepared_by BIGINT REFERENCES workers(id);
