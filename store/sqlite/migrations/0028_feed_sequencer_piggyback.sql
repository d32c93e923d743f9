-- Nothing changes on SQLite. PostgreSQL's migration 0028 lets its writers'
-- groups position the change feed themselves (tether_sequence_try); SQLite's
-- single writer has always given positions in commit order, in the writing
-- transaction. This migration keeps the two stores' schema versions in step.
SELECT 1;
