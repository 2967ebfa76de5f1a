-- Seats as rows, not comma-joined id lists: "the waiting groups bot 7 sits in"
-- is a lookup per waiting group (the lists were matched with LIKE '%,7,%' against
-- every group), and a game's places are numbers the database can check. No index
-- by bot: the few waiting groups are found through their own partial index, and
-- a lease or a report writes one index entry per seat fewer.
CREATE TABLE group_seats (
    group_id BIGINT NOT NULL REFERENCES match_groups(id),
    seat BIGINT NOT NULL,
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    PRIMARY KEY (group_id, seat)
);
-- By competition first, holding what the fit reads: a competition's seats are one
-- index range.
CREATE TABLE game_seats (
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    game_id BIGINT NOT NULL REFERENCES games(id),
    seat BIGINT NOT NULL,
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    place BIGINT NOT NULL,
    PRIMARY KEY (competition_id, game_id, seat) INCLUDE (bot_id, place)
);
INSERT INTO group_seats (group_id, seat, bot_id)
SELECT g.id, s.seat - 1, CAST(s.bot AS BIGINT)
FROM match_groups g, unnest(string_to_array(g.bots, ',')) WITH ORDINALITY AS s(bot, seat);
INSERT INTO game_seats (competition_id, game_id, seat, bot_id, place)
SELECT g.competition_id, g.id, s.seat - 1, CAST(s.bot AS BIGINT), CAST(s.place AS BIGINT)
FROM games g, unnest(string_to_array(g.bots, ','), string_to_array(g.ranks, ',')) WITH ORDINALITY AS s(bot, place, seat);
-- The results index held the lists; it now holds what the fit reads of a game.
DROP INDEX games_results;
CREATE INDEX games_results ON games (competition_id, id) INCLUDE (group_id, rotation, termination);
ALTER TABLE match_groups DROP COLUMN bots;
ALTER TABLE games DROP COLUMN bots, DROP COLUMN ranks;
