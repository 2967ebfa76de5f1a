-- Each status column takes only the words its enum stores (store/mod.rs:
-- CompetitionStatus, GroupStatus, BotStatus, StatusBy; a test holds these lists
-- and the enums to each other). SQLite cannot add a CHECK to a table that
-- exists without rebuilding it and every foreign key that names it, so
-- triggers refuse the same rows a CHECK would, on insert and on update, with
-- a CHECK's words. The updates at the end fire them on any row already there
-- with another word, which stops the migration, and nothing changes.
CREATE TRIGGER competitions_status_known_insert BEFORE INSERT ON competitions
WHEN NEW.status NOT IN ('open', 'closed')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: competitions_status_known'); END;
CREATE TRIGGER competitions_status_known_update BEFORE UPDATE OF status ON competitions
WHEN NEW.status NOT IN ('open', 'closed')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: competitions_status_known'); END;

CREATE TRIGGER match_groups_status_known_insert BEFORE INSERT ON match_groups
WHEN NEW.status NOT IN ('scheduled', 'leased', 'done', 'withdrawn')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: match_groups_status_known'); END;
CREATE TRIGGER match_groups_status_known_update BEFORE UPDATE OF status ON match_groups
WHEN NEW.status NOT IN ('scheduled', 'leased', 'done', 'withdrawn')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: match_groups_status_known'); END;

CREATE TRIGGER bots_status_known_insert BEFORE INSERT ON bots
WHEN NEW.status NOT IN ('building', 'build-failed', 'rejected', 'active', 'disabled', 'suspended', 'superseded', 'removed')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: bots_status_known'); END;
CREATE TRIGGER bots_status_known_update BEFORE UPDATE OF status ON bots
WHEN NEW.status NOT IN ('building', 'build-failed', 'rejected', 'active', 'disabled', 'suspended', 'superseded', 'removed')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: bots_status_known'); END;

CREATE TRIGGER bots_status_by_known_insert BEFORE INSERT ON bots
WHEN NEW.status_by NOT IN ('admin', 'author', 'server')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: bots_status_by_known'); END;
CREATE TRIGGER bots_status_by_known_update BEFORE UPDATE OF status_by ON bots
WHEN NEW.status_by NOT IN ('admin', 'author', 'server')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: bots_status_by_known'); END;

-- The rows already there (only those with another word are touched).
UPDATE competitions SET status = status WHERE status NOT IN ('open', 'closed');
UPDATE match_groups SET status = status WHERE status NOT IN ('scheduled', 'leased', 'done', 'withdrawn');
UPDATE bots SET status = status
WHERE status NOT IN ('building', 'build-failed', 'rejected', 'active', 'disabled', 'suspended', 'superseded', 'removed');
UPDATE bots SET status_by = status_by WHERE status_by NOT IN ('admin', 'author', 'server');
