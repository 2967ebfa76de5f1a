-- Leasing looks for unfinished groups, oldest first. Once most groups are done, an
-- index of all statuses still walks past them; a partial index holds only the
-- groups a lease can take, so a lease costs the same at a million games as at ten.
CREATE INDEX match_groups_unfinished ON match_groups (id) WHERE status <> 'done';
-- The rating fit reads every game's result, never its record: an index holding the
-- result columns answers it without reading the records' pages.
CREATE INDEX games_results ON games (competition_id, id, group_id, rotation, bots, ranks, termination);
-- games_results begins with games_competition's columns: one index to keep up, not two.
DROP INDEX IF EXISTS games_competition;
-- The scheduler reads the groups it has not seen yet: by competition and key.
CREATE INDEX match_groups_competition ON match_groups (competition_id, id);
