-- The ladder's first schema. IF NOT EXISTS: a database made before migrations
-- were files (when they were a list in store.rs) already has these tables. This
-- migration then only records itself, and nothing stored is touched.
CREATE TABLE IF NOT EXISTS bots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    game TEXT NOT NULL,
    spec TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS competitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    game TEXT NOT NULL,
    options TEXT NOT NULL,
    seats BIGINT NOT NULL,
    format TEXT NOT NULL,
    seed BIGINT NOT NULL,
    max_games BIGINT NOT NULL,
    time TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS entrants (
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    PRIMARY KEY (competition_id, bot_id)
);
CREATE TABLE IF NOT EXISTS match_groups (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    group_no BIGINT NOT NULL,
    seed BIGINT NOT NULL,
    bots TEXT NOT NULL,
    status TEXT NOT NULL,
    lease_token TEXT,
    lease_worker TEXT,
    lease_expires_ms BIGINT,
    created_ms BIGINT NOT NULL,
    UNIQUE (competition_id, group_no)
);
CREATE INDEX IF NOT EXISTS match_groups_status ON match_groups (status, id);
CREATE TABLE IF NOT EXISTS games (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    group_id BIGINT NOT NULL REFERENCES match_groups(id),
    rotation BIGINT NOT NULL,
    bots TEXT NOT NULL,
    ranks TEXT NOT NULL,
    termination TEXT NOT NULL,
    record TEXT NOT NULL,
    recorded_ms BIGINT NOT NULL,
    UNIQUE (group_id, rotation)
);
CREATE INDEX IF NOT EXISTS games_competition ON games (competition_id, id);
