-- A job's lease lives in a narrow row of its own, the job's claim (issue 15,
-- seed 004's job_claim). Lease heartbeats are a fleet's most frequent write:
-- every leased job, every interval. The job's row is wide (its payload and
-- result), was in eight indexes and has the feed trigger; a heartbeat moved
-- lease_expires_at, an indexed column, so it could not be a HOT update: each
-- one wrote the whole row anew, an entry into every index, a feed row, and
-- left as much to vacuum.
-- A heartbeat now updates only job_claim, whose one secondary index (the
-- reaper's) is all it touches besides its key.
--
-- A job has a claim exactly while it is in_progress with a lease. heard_at
-- is when the lease's last heartbeat came (NULL: none since the claim): a
-- job's last activity is the later of it and jobs.last_activity_at.
CREATE TABLE job_claim (
    job_id           TEXT COLLATE "C" PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    lease_seconds    INTEGER NOT NULL,
    lease_expires_at BIGINT NOT NULL,
    heard_at         BIGINT
);
-- The reaper: expired leases, oldest first.
CREATE INDEX job_claim_lease ON job_claim (lease_expires_at);
INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at)
    SELECT id, lease_seconds, lease_expires_at FROM jobs WHERE state = 'in_progress' AND lease_expires_at IS NOT NULL;
-- The column leaves the feed trigger's list (migration 0014's) before it
-- leaves the table: a claim's changes are fed by the job updates that make
-- them, and a heartbeat is no change anyone watches.
DROP TRIGGER jobs_feed ON jobs;
CREATE TRIGGER jobs_feed AFTER INSERT OR UPDATE OF
    id, cluster_id, kind, intent, target_kind, target_namespace,
    target_name, payload, idempotency_key, state, attempt, created_at,
    updated_at, expires_at, submitted_by, claim_id, claimed_at, claimed_by,
    lease_seconds, last_activity_at, phase, outcome,
    error, result, finished_at, retry_of, payload_sealed
ON jobs FOR EACH ROW EXECUTE FUNCTION jobs_feed();
DROP INDEX jobs_lease;
ALTER TABLE jobs DROP COLUMN lease_expires_at;
-- Room in each page for HOT updates: an agent's status report now changes
-- no indexed column, so its new row version can stay in the page, with no
-- index entries of its own, when the page has room.
ALTER TABLE jobs SET (fillfactor = 85);
