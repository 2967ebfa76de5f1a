-- A game's bots follow from its group's seats and its rotation (seat s holds the
-- group's bot (s + rotation) mod n), so a game keeps only its places: packed into
-- one integer, four bits a seat, seat 0 lowest (`store::Places`). Two seat rows
-- per game were most of what the seats cost a report on PostgreSQL.
ALTER TABLE games ADD COLUMN places INTEGER NOT NULL DEFAULT 0;
UPDATE games SET places = (SELECT SUM(s.place << (4 * s.seat)) FROM game_seats s
    WHERE s.competition_id = games.competition_id AND s.game_id = games.id);
DROP TABLE game_seats;
DROP INDEX games_results;
CREATE INDEX games_results ON games (competition_id, id, group_id, rotation, termination, places);
