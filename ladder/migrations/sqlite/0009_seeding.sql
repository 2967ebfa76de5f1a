-- How a competition's groups are dealt: `mirrored` (every rotation of a group plays
-- the group's seed, seats rotated) or `independent` (each rotation its own seed,
-- for bots that cannot be held apart across a group's games).
ALTER TABLE competitions ADD COLUMN seeding TEXT NOT NULL DEFAULT 'mirrored';
