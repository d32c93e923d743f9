-- A poll hides the jobs it hands out from the cluster's other polls by
-- setting visible_after (migration 0005). That is no change anyone watches:
-- a feed row for it cost a write per delivered job and woke every watcher
-- and every held poll of the cluster for nothing. The job's feed trigger now
-- fires on inserts, and on updates of any other column. (A migration that
-- adds a column to jobs adds it to this list.)
DROP TRIGGER jobs_feed ON jobs;
CREATE TRIGGER jobs_feed AFTER INSERT OR UPDATE OF
    id, cluster_id, kind, intent, target_kind, target_namespace,
    target_name, payload, idempotency_key, state, attempt, created_at,
    updated_at, expires_at, submitted_by, claim_id, claimed_at, claimed_by,
    lease_seconds, lease_expires_at, last_activity_at, phase, outcome,
    error, result, finished_at, retry_of
ON jobs FOR EACH ROW EXECUTE FUNCTION jobs_feed();
