-- What the web pages read, each through its own index, so that a page costs the
-- same at a hundred thousand games as at ten.

-- A game's faults by seat and kind: how many, and the first one's detail. A bot's
-- page tallies its faults by kind and lists the newest, without reading records.
CREATE TABLE faults (
    id BIGSERIAL PRIMARY KEY,
    game_id BIGINT NOT NULL REFERENCES games(id),
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    seat BIGINT NOT NULL,
    kind TEXT NOT NULL,
    count BIGINT NOT NULL,
    detail TEXT NOT NULL,
    at_move BIGINT NOT NULL
);
CREATE INDEX faults_bot ON faults (bot_id, id);
CREATE INDEX faults_game ON faults (game_id);

-- A bot's rating as fit after `games` games of a competition, kept whenever the
-- competition has grown by a twentieth (or an hour has passed) since the last
-- point: the rating chart. ci95 is NULL while the interval is unbounded.
CREATE TABLE rating_points (
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    games BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    elo DOUBLE PRECISION NOT NULL,
    ci95 DOUBLE PRECISION,
    PRIMARY KEY (competition_id, bot_id, games)
);

-- Games per hour on the competition page.
CREATE INDEX games_recorded ON games (competition_id, recorded_ms);
