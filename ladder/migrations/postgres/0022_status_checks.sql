-- Each status column takes only the words its enum stores (store/mod.rs:
-- CompetitionStatus, GroupStatus, BotStatus, StatusBy; a test holds these lists
-- and the enums to each other). Adding a CHECK validates the rows already
-- there: a row with another word stops the migration, and nothing changes.
ALTER TABLE competitions ADD CONSTRAINT competitions_status_known
    CHECK (status IN ('open', 'closed'));
ALTER TABLE match_groups ADD CONSTRAINT match_groups_status_known
    CHECK (status IN ('scheduled', 'leased', 'done', 'withdrawn'));
ALTER TABLE bots ADD CONSTRAINT bots_status_known
    CHECK (status IN ('building', 'build-failed', 'rejected', 'active', 'disabled', 'suspended', 'superseded', 'removed'));
ALTER TABLE bots ADD CONSTRAINT bots_status_by_known
    CHECK (status_by IN ('admin', 'author', 'server'));
