-- Nothing changes on PostgreSQL. SQLite's migration 0029 fills its search
-- index once per writer batch instead of by a trigger per job; PostgreSQL's
-- pg_trgm index (0023) is maintained by the index itself. This migration
-- keeps the two stores' schema versions in step.
SELECT 1;
