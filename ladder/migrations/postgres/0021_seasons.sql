-- A season: a ladder competition with a deadline, after which each author's
-- entry is fixed and finals among the top entries decide the winners
-- (ladder::season). The phase only moves forward.
CREATE TABLE seasons (
    competition_id BIGINT PRIMARY KEY REFERENCES competitions(id),
    deadline_ms BIGINT NOT NULL,
    -- The finals' plan: every set of the top `finals_top` entries plays
    -- `finals_groups` groups a round; with `finals_until_separated` another
    -- round follows until the top places' intervals separate or
    -- `finals_max_games` (0: no cap) would be passed.
    finals_top BIGINT NOT NULL,
    finals_groups BIGINT NOT NULL,
    finals_until_separated BIGINT NOT NULL,
    finals_max_games BIGINT NOT NULL,
    phase TEXT NOT NULL CHECK (phase IN ('open', 'frozen', 'finals', 'closed')),
    finals_id BIGINT REFERENCES competitions(id),
    -- The finals' master seed (hex), secret until the phase is 'closed'; its
    -- commitment and the entries' digest are public from the finals' start.
    master_seed TEXT,
    commitment TEXT,
    entries_digest TEXT,
    frozen_ms BIGINT,
    closed_ms BIGINT,
    -- The final standings as published (JSON), fixed at the close.
    final_standings TEXT
);
CREATE UNIQUE INDEX seasons_finals ON seasons (finals_id);
-- The version an author chose as their entry before the deadline.
CREATE TABLE season_choices (
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    author_id BIGINT NOT NULL REFERENCES authors(id),
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    PRIMARY KEY (competition_id, author_id)
);
-- Entries fixed at the freeze: one per author (and each host bot alone);
-- `finalist` is a finalist's seed (1 = best in the ladder at the freeze), 0 for
-- the others.
CREATE TABLE season_entries (
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    finalist BIGINT NOT NULL,
    PRIMARY KEY (competition_id, bot_id)
);
-- How many times a group was dealt again (a lease that ran out or was given
-- back): a finals group's seed derives from its number and this.
ALTER TABLE match_groups ADD COLUMN deal BIGINT NOT NULL DEFAULT 0;
