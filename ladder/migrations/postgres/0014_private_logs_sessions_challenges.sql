-- What only a seat's author (and the host) may read of a game: the end of the
-- bot's stderr, its info lines and its faults in full, as one JSON text per seat
-- that had something to say (`store::SeatLogEntry`). Apart from `games.record`,
-- which is public; keyed as the game is (group, rotation), so a report writes it
-- without reading the game's key back.
CREATE TABLE seat_logs (
    group_id BIGINT NOT NULL,
    rotation BIGINT NOT NULL,
    seat BIGINT NOT NULL,
    bot_id BIGINT NOT NULL,
    log TEXT NOT NULL,
    PRIMARY KEY (group_id, rotation, seat)
);
-- A signed-in browser: the SHA-256 of its session cookie (the cookie itself is
-- never kept), whose it is (an author; NULL: the host), the token its forms must
-- carry (CSRF), and when it ends.
CREATE TABLE web_sessions (
    token_hash TEXT PRIMARY KEY,
    author_id BIGINT REFERENCES authors(id),
    csrf TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
);
-- An author's challenge: unrated games between their bot and another, played as
-- a competition of its own (format 'challenge') whose entrants are the two bots
-- alone. Kept to count what an author asked for in a day, and to list it.
CREATE TABLE challenges (
    competition_id BIGINT PRIMARY KEY REFERENCES competitions(id),
    author_id BIGINT NOT NULL REFERENCES authors(id),
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    opponent_id BIGINT NOT NULL REFERENCES bots(id),
    games BIGINT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE INDEX challenges_by_author ON challenges (author_id, created_ms);
