-- Finished groups counted by the shape of their results (`rating::shape`): a
-- refit reads these counts and the games of unfinished groups, not every game.
-- Append-only: a report adds a row per shape it finished (+n), a voided worker
-- one per shape it loses (-n), and a refit folds the rows of a competition into
-- one per shape when they outnumber the shapes, so reports never wait on each
-- other's rows here.
CREATE TABLE fit_tally (
    competition_id BIGINT NOT NULL REFERENCES competitions(id),
    shape TEXT NOT NULL,
    group_count BIGINT NOT NULL,
    -- Its games (group_count times the shape's games): a competition's count of
    -- games is a sum over its shapes and the games of its unfinished groups.
    game_count BIGINT NOT NULL
);
CREATE INDEX fit_tally_competition ON fit_tally (competition_id, shape, group_count, game_count);
-- Competitions with games from before the tally: the store counts them once
-- when it opens (`Store::tally_pending`).
ALTER TABLE competitions ADD COLUMN tally_pending BIGINT NOT NULL DEFAULT 0;
UPDATE competitions SET tally_pending = 1
WHERE EXISTS (SELECT 1 FROM games WHERE games.competition_id = competitions.id);
-- A refit reads the games of a competition's unfinished groups through this.
CREATE INDEX match_groups_open ON match_groups (competition_id, id) WHERE status <> 'done';
