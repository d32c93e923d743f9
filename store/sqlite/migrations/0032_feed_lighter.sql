-- Nothing changes on SQLite. PostgreSQL's migration 0032 makes its change
-- feed's triggers insert their rows themselves and its positioning run
-- without re-planning; SQLite's feed has no sequencer (one writer at a
-- time gives positions in commit order). This migration keeps the two
-- stores' schema versions in step.
SELECT 1;
