-- The visibility window (issue 11); see the SQLite schema.
ALTER TABLE jobs ADD COLUMN visible_after BIGINT;
