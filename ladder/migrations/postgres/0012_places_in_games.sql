-- A game's bots follow from its group's seats and its rotation (seat s holds the
-- group's bot (s + rotation) mod n), so a game keeps only its places: packed into
-- one integer, four bits a seat, seat 0 lowest (`store::Places`). Two seat rows
-- per game were most of what the seats cost a report.
ALTER TABLE games ADD COLUMN places BIGINT NOT NULL DEFAULT 0;
UPDATE games SET places = p.places FROM (
    SELECT competition_id, game_id, CAST(SUM(place << CAST(4 * seat AS INTEGER)) AS BIGINT) AS places
    FROM game_seats GROUP BY competition_id, game_id
) p WHERE p.competition_id = games.competition_id AND p.game_id = games.id;
DROP TABLE game_seats;
DROP INDEX games_results;
CREATE INDEX games_results ON games (competition_id, id) INCLUDE (group_id, rotation, termination, places);
