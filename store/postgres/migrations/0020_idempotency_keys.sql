-- Idempotency keys kept for a retention window whatever their job's state;
-- see the SQLite schema's 0020.
CREATE TABLE idempotency_keys (
    cluster_id TEXT COLLATE "C" NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    key        TEXT COLLATE "C" NOT NULL,
    job_id     TEXT COLLATE "C" NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (cluster_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

INSERT INTO idempotency_keys (cluster_id, key, job_id, expires_at)
SELECT DISTINCT ON (cluster_id, idempotency_key) cluster_id, idempotency_key, id, created_at + 86400000
FROM jobs
WHERE idempotency_key <> ''
  AND (state IN ('queued', 'in_progress') OR created_at > (extract(epoch FROM now()) * 1000)::BIGINT - 86400000)
ORDER BY cluster_id, idempotency_key, state IN ('queued', 'in_progress') DESC, created_at DESC, id DESC;
