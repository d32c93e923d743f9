-- A job's retries (the jobs whose retry_of names it) are read with the job
-- itself, so that whoever opens a failed job sees it was retried already,
-- and by which job. Only retries are indexed (most jobs are none), ordered
-- as they are shown (oldest first), so the read never scans or sorts jobs.
-- A query must say retry_of <> '' for SQLite to use a partial index.
CREATE INDEX jobs_retry_of ON jobs (retry_of, created_at, id) WHERE retry_of <> '';
