-- Encrypted payloads (issue 10). A cluster's policy may require them: its
-- jobs are handed to its agent as a JWE to the cluster's public_key (a JWK,
-- the column that already exists), and stored sealed.
ALTER TABLE clusters ADD COLUMN require_encrypted_payloads BOOLEAN NOT NULL DEFAULT false;
-- payload_sealed: payload holds the payload sealed by the key file (bound to
-- the job's id), not the payload itself.
ALTER TABLE jobs ADD COLUMN payload_sealed BOOLEAN NOT NULL DEFAULT false;
-- A column added to jobs joins the feed trigger's list (migration 0012).
DROP TRIGGER jobs_feed ON jobs;
CREATE TRIGGER jobs_feed AFTER INSERT OR UPDATE OF
    id, cluster_id, kind, intent, target_kind, target_namespace,
    target_name, payload, idempotency_key, state, attempt, created_at,
    updated_at, expires_at, submitted_by, claim_id, claimed_at, claimed_by,
    lease_seconds, lease_expires_at, last_activity_at, phase, outcome,
    error, result, finished_at, retry_of, payload_sealed
ON jobs FOR EACH ROW EXECUTE FUNCTION jobs_feed();
