-- SQLite's migration 0023 builds an FTS5 trigram index for the console's
-- word filter. PostgreSQL's equivalent is not built yet: a pg_trgm index was
-- tried and its planner kept scanning jobs newest first (docs/console.md).
-- This migration keeps the two stores' schema numbers the same.
SELECT 1;
