-- A job's lease lives in its claim (seed 004's job_claim), apart from the
-- job's row. Lease heartbeats are a fleet's most frequent write (every job in
-- flight, every interval): on the job's row each one rewrote a wide row, an
-- index entry and a change-feed row that woke every watcher for nothing but a
-- later lease end. A heartbeat now rewrites this narrow row only. A job has a
-- claim exactly while it is in_progress with a lease; reads join it back.
CREATE TABLE job_claim (
    job_id           TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    lease_seconds    INTEGER NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    heard_at         INTEGER            -- the last lease heartbeat; NULL: none since the claim
) WITHOUT ROWID;
-- The reaper, oldest lease first.
CREATE INDEX job_claim_lease ON job_claim (lease_expires_at);

INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at)
    SELECT id, lease_seconds, lease_expires_at FROM jobs WHERE state = 'in_progress' AND lease_expires_at IS NOT NULL;

-- The column leaves jobs, its index and the feed trigger's list (0012).
DROP INDEX jobs_lease;
DROP TRIGGER jobs_upd;
CREATE TRIGGER jobs_upd AFTER UPDATE OF
    id, cluster_id, kind, intent, target_kind, target_namespace,
    target_name, payload, idempotency_key, state, attempt, created_at,
    updated_at, expires_at, submitted_by, claim_id, claimed_at, claimed_by,
    lease_seconds, last_activity_at, phase, outcome,
    error, result, finished_at, retry_of, payload_sealed
ON jobs BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at) VALUES ('job', NEW.id, NEW.cluster_id, 'upsert', NEW.state, NEW.updated_at);
END;
ALTER TABLE jobs DROP COLUMN lease_expires_at;
