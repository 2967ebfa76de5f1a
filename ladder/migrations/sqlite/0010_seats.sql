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
) WITHOUT ROWID;
-- By competition first: the rating fit reads a competition's seats as one range.
CREATE TABLE game_seats (
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    game_id BIGINT NOT NULL REFERENCES games(id),
    seat BIGINT NOT NULL,
    bot_id BIGINT NOT NULL REFERENCES bots(id),
    place BIGINT NOT NULL,
    PRIMARY KEY (competition_id, game_id, seat)
) WITHOUT ROWID;
-- The lists, split: each step takes the first id off what is left.
WITH RECURSIVE split(group_id, seat, bot, rest) AS (
    SELECT id, -1, NULL, bots || ',' FROM match_groups
    UNION ALL
    SELECT group_id, seat + 1,
           CAST(substr(rest, 1, instr(rest, ',') - 1) AS INTEGER),
           substr(rest, instr(rest, ',') + 1)
    FROM split WHERE rest <> ''
)
INSERT INTO group_seats (group_id, seat, bot_id)
SELECT group_id, seat, bot FROM split WHERE seat >= 0;
WITH RECURSIVE split(competition_id, game_id, seat, bot, place, bots, places) AS (
    SELECT competition_id, id, -1, NULL, NULL, bots || ',', ranks || ',' FROM games
    UNION ALL
    SELECT competition_id, game_id, seat + 1,
           CAST(substr(bots, 1, instr(bots, ',') - 1) AS INTEGER),
           CAST(substr(places, 1, instr(places, ',') - 1) AS INTEGER),
           substr(bots, instr(bots, ',') + 1),
           substr(places, instr(places, ',') + 1)
    FROM split WHERE bots <> ''
)
INSERT INTO game_seats (competition_id, game_id, seat, bot_id, place)
SELECT competition_id, game_id, seat, bot, place FROM split WHERE seat >= 0;
-- The results index held the lists; it now holds what the fit reads of a game.
DROP INDEX games_results;
CREATE INDEX games_results ON games (competition_id, id, group_id, rotation, termination);
ALTER TABLE match_groups DROP COLUMN bots;
ALTER TABLE games DROP COLUMN bots;
ALTER TABLE games DROP COLUMN ranks;
