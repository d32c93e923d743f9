-- An idempotency key answers its job for a retention window from the job's
-- creation (serve --idempotency-retention, 24 h by default), whatever the
-- job's state: until now only an open job held its key (jobs_idempotency,
-- which still keeps two open jobs from sharing one), and a producer's retry
-- after the job finished queued it a second time. A key's row says which job
-- it answers until when; it outlives a deleted job, so that the key is not
-- given to a second job before it expires. Retention deletes expired rows.
CREATE TABLE idempotency_keys (
    cluster_id TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    job_id     TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- The keys of open jobs and of the jobs created in the last 24 hours (the
-- default window: the configured one is not known here) carry over, each
-- answering its newest job, an open one first. An open job's key may be
-- expired already: it is held while the job is open all the same.
INSERT INTO idempotency_keys (cluster_id, key, job_id, expires_at)
SELECT cluster_id, idempotency_key, id, created_at + 86400000 FROM (
    SELECT cluster_id, idempotency_key, id, created_at, row_number() OVER (
        PARTITION BY cluster_id, idempotency_key
        ORDER BY state IN ('queued', 'in_progress') DESC, created_at DESC, id DESC) AS n
    FROM jobs
    WHERE idempotency_key != ''
      AND (state IN ('queued', 'in_progress') OR created_at > CAST(strftime('%s', 'now') AS INTEGER) * 1000 - 86400000)
) WHERE n = 1;
