-- Outcome webhooks (issue 9): subscriptions and their durable outbox.
--
-- A delivery row is written by a trigger in the transaction that makes the
-- change it reports (a job reaching a terminal state, a credential revoked,
-- a rollout halting or completing), so a committed change always has its
-- deliveries and a rolled-back one never does. With no subscription the
-- trigger's INSERT ... SELECT reads an empty table: nothing on the hot path.
CREATE TABLE webhooks (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    url           TEXT NOT NULL,
    events        TEXT NOT NULL,             -- JSON array of event types
    organization  TEXT NOT NULL DEFAULT '',  -- only that organization's changes
    sealed_secret BLOB NOT NULL,             -- the signing secret, sealed by the key file
    created_at    INTEGER NOT NULL,
    created_by    TEXT NOT NULL
);
CREATE UNIQUE INDEX webhooks_name ON webhooks (name);

CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event           TEXT NOT NULL,
    cluster_id      TEXT NOT NULL DEFAULT '',
    subject_id      TEXT NOT NULL,
    data            TEXT NOT NULL,              -- the JSON the receiver gets under "data"
    created_at      INTEGER NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending', -- pending, delivered, failed
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,           -- also the claim: a sender pushes it past its timeout
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    finished_at     INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook_id, id);

CREATE TRIGGER webhooks_job_finished AFTER UPDATE OF state ON jobs
WHEN OLD.state IN ('queued', 'in_progress') AND NEW.state NOT IN ('queued', 'in_progress')
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, event, cluster_id, subject_id, data, created_at, next_attempt_at)
    SELECT w.id, 'job.finished', NEW.cluster_id, NEW.id,
        json_object('id', NEW.id, 'clusterId', NEW.cluster_id, 'kind', NEW.kind, 'state', NEW.state,
            'outcome', NEW.outcome, 'error', NEW.error, 'attempt', NEW.attempt, 'idempotencyKey', NEW.idempotency_key,
            'target', json_object('kind', NEW.target_kind, 'namespace', NEW.target_namespace, 'name', NEW.target_name),
            'finishedAt', strftime('%Y-%m-%dT%H:%M:%fZ', COALESCE(NEW.finished_at, NEW.updated_at) / 1000.0, 'unixepoch')),
        NEW.updated_at, NEW.updated_at
    FROM webhooks w
    WHERE EXISTS (SELECT 1 FROM json_each(w.events) e WHERE e.value = 'job.finished')
      AND (w.organization = '' OR w.organization = (SELECT organization FROM clusters WHERE id = NEW.cluster_id));
END;

CREATE TRIGGER webhooks_credential_revoked AFTER UPDATE OF revoked_at ON credentials
WHEN OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, event, cluster_id, subject_id, data, created_at, next_attempt_at)
    SELECT w.id, 'credential.revoked', NEW.cluster_id, NEW.id,
        json_object('id', NEW.id, 'clusterId', NEW.cluster_id, 'reason', NEW.revoke_reason,
            'revokedAt', strftime('%Y-%m-%dT%H:%M:%fZ', NEW.revoked_at / 1000.0, 'unixepoch')),
        NEW.revoked_at, NEW.revoked_at
    FROM webhooks w
    WHERE EXISTS (SELECT 1 FROM json_each(w.events) e WHERE e.value = 'credential.revoked')
      AND (w.organization = '' OR w.organization = (SELECT organization FROM clusters WHERE id = NEW.cluster_id));
END;

CREATE TRIGGER webhooks_rollout_ended AFTER UPDATE OF state ON rollouts
WHEN NEW.state != OLD.state AND NEW.state IN ('halted', 'completed')
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, event, subject_id, data, created_at, next_attempt_at)
    SELECT w.id, 'rollout.' || NEW.state, NEW.id,
        json_object('id', NEW.id, 'name', NEW.name, 'state', NEW.state, 'selector', NEW.selector,
            'targets', json((SELECT json_group_object(state, n) FROM (SELECT state, count(*) AS n FROM rollout_targets WHERE rollout_id = NEW.id GROUP BY state)))),
        NEW.updated_at, NEW.updated_at
    FROM webhooks w
    WHERE EXISTS (SELECT 1 FROM json_each(w.events) e WHERE e.value = 'rollout.' || NEW.state)
      AND (w.organization = '' OR w.organization = NEW.organization);
END;
