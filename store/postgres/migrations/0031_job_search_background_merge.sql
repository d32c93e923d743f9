-- Nothing changes on PostgreSQL. SQLite's migration 0031 turns its search
-- index's automatic merging off, for tether serve to merge it in the
-- background; PostgreSQL's pg_trgm index (0023) is a GIN index that keeps
-- itself. This migration keeps the two stores' schema versions in step.
SELECT 1;
