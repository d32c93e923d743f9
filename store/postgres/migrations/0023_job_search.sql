-- The console's word filter (JobListParams.Search) asks, for each word,
-- which jobs hold it anywhere in their id, idempotency key, target
-- namespace or name, error or kind: an ILIKE '%word%' that no B-tree
-- serves, so a rare word read every row. jobs_search is a pg_trgm index of
-- those texts joined by spaces (a word has none, so it matches the joined
-- text exactly when it matches one of them): the store asks it for a word's
-- candidates on exactly this expression (see job_search.go).
--
-- pg_trgm ships with PostgreSQL and is a trusted extension (a database
-- owner may create it), but a managed database may not offer it: then the
-- migration builds no index, says so in a NOTICE, and the word filter reads
-- the jobs newest first as before (docs/operations.md).
DO $$
DECLARE
    trgm TEXT;
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'pg_trgm is not available (%): the jobs word filter is left without an index', SQLERRM;
    END;
    -- The extension may live in a schema outside the search path (it is
    -- one per database): name its operator class by its schema.
    SELECT n.nspname INTO trgm FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF trgm IS NOT NULL THEN
        EXECUTE format('CREATE INDEX jobs_search ON jobs USING gin ((id || '' '' || idempotency_key || '' '' || target_namespace'
            ' || '' '' || target_name || '' '' || error || '' '' || kind) %I.gin_trgm_ops)', trgm);
    END IF;
END $$;
