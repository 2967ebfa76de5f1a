-- A bot's registered environment variables, as a JSON array of [key, value] pairs:
-- the only environment its process gets beyond the fixed PATH, LANG and HOME.
ALTER TABLE bots ADD COLUMN env TEXT NOT NULL DEFAULT '[]';
