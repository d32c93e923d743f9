-- Outcome webhooks (issue 9); see the SQLite schema for the comments. The
-- triggers write no change-feed rows, so they take no feed lock.
CREATE TABLE webhooks (
    id            TEXT COLLATE "C" PRIMARY KEY,
    name          TEXT COLLATE "C" NOT NULL,
    url           TEXT COLLATE "C" NOT NULL,
    events        TEXT COLLATE "C" NOT NULL,
    organization  TEXT COLLATE "C" NOT NULL DEFAULT '',
    sealed_secret BYTEA NOT NULL,
    created_at    BIGINT NOT NULL,
    created_by    TEXT COLLATE "C" NOT NULL
);
CREATE UNIQUE INDEX webhooks_name ON webhooks (name);

CREATE TABLE webhook_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    webhook_id      TEXT COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event           TEXT COLLATE "C" NOT NULL,
    cluster_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    subject_id      TEXT COLLATE "C" NOT NULL,
    data            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    state           TEXT COLLATE "C" NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    finished_at     BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook_id, id);

CREATE FUNCTION tether_iso(ms BIGINT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(to_timestamp(ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

CREATE FUNCTION webhooks_enqueue(p_event TEXT, p_org TEXT, p_cluster TEXT, p_subject TEXT, p_data TEXT, p_at BIGINT)
RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
    INSERT INTO webhook_deliveries (webhook_id, event, cluster_id, subject_id, data, created_at, next_attempt_at)
    SELECT w.id, p_event, p_cluster, p_subject, p_data, p_at, p_at
    FROM webhooks w
    WHERE w.events::jsonb ? p_event AND (w.organization = '' OR w.organization = p_org)
$$;

CREATE FUNCTION webhooks_job_finished() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF OLD.state IN ('queued', 'in_progress') AND NEW.state NOT IN ('queued', 'in_progress') AND EXISTS (SELECT 1 FROM webhooks) THEN
        PERFORM webhooks_enqueue('job.finished', (SELECT organization FROM clusters WHERE id = NEW.cluster_id), NEW.cluster_id, NEW.id,
            json_build_object('id', NEW.id, 'clusterId', NEW.cluster_id, 'kind', NEW.kind, 'state', NEW.state,
                'outcome', NEW.outcome, 'error', NEW.error, 'attempt', NEW.attempt, 'idempotencyKey', NEW.idempotency_key,
                'target', json_build_object('kind', NEW.target_kind, 'namespace', NEW.target_namespace, 'name', NEW.target_name),
                'finishedAt', tether_iso(COALESCE(NEW.finished_at, NEW.updated_at)))::text,
            NEW.updated_at);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER webhooks_job_finished AFTER UPDATE OF state ON jobs
    FOR EACH ROW EXECUTE FUNCTION webhooks_job_finished();

CREATE FUNCTION webhooks_credential_revoked() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL AND EXISTS (SELECT 1 FROM webhooks) THEN
        PERFORM webhooks_enqueue('credential.revoked', (SELECT organization FROM clusters WHERE id = NEW.cluster_id), NEW.cluster_id, NEW.id,
            json_build_object('id', NEW.id, 'clusterId', NEW.cluster_id, 'reason', NEW.revoke_reason,
                'revokedAt', tether_iso(NEW.revoked_at))::text,
            NEW.revoked_at);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER webhooks_credential_revoked AFTER UPDATE OF revoked_at ON credentials
    FOR EACH ROW EXECUTE FUNCTION webhooks_credential_revoked();

CREATE FUNCTION webhooks_rollout_ended() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.state <> OLD.state AND NEW.state IN ('halted', 'completed') AND EXISTS (SELECT 1 FROM webhooks) THEN
        PERFORM webhooks_enqueue('rollout.' || NEW.state, NEW.organization, '', NEW.id,
            json_build_object('id', NEW.id, 'name', NEW.name, 'state', NEW.state, 'selector', NEW.selector,
                'targets', (SELECT json_object_agg(state, n) FROM (SELECT state, count(*) AS n FROM rollout_targets WHERE rollout_id = NEW.id GROUP BY state) t))::text,
            NEW.updated_at);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER webhooks_rollout_ended AFTER UPDATE OF state ON rollouts
    FOR EACH ROW EXECUTE FUNCTION webhooks_rollout_ended();
