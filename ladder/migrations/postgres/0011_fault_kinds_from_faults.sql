-- A game's fault kinds are its rows in `faults` (one per seat and kind, through
-- the faults_game index): the comma list kept beside them goes.
ALTER TABLE games DROP COLUMN fault_kinds;
