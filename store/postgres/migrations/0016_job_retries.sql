-- A job's retries, read with the job itself; see the SQLite schema.
CREATE INDEX jobs_retry_of ON jobs (retry_of, created_at, id) WHERE retry_of <> '';
