-- tether schema, version 1, on PostgreSQL. The same tables and meaning as
-- store/sqlite's 0001_init.sql: times are Unix milliseconds (UTC) in BIGINT,
-- lists and conditions are JSON text, so the registry sees the same values
-- from either backend. Text columns use the "C" collation, as SQLite compares
-- bytes (BINARY): ordering and prefix ranges do not depend on the database's
-- locale, and lower() folds ASCII only, as SQLite's NOCASE does.
--
-- Everything is created in the first schema of the search_path, so that
-- several tether installations (or tests) can share one database.

CREATE TABLE clusters (
    id                          TEXT COLLATE "C" PRIMARY KEY,
    name                        TEXT COLLATE "C" NOT NULL,
    organization                TEXT COLLATE "C" NOT NULL DEFAULT '',
    public_key                  TEXT COLLATE "C" NOT NULL DEFAULT '',
    allowed_namespaces          TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    allowed_catalog_entries     TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    allowed_operation_templates TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    mode                        TEXT COLLATE "C" NOT NULL,
    state                       TEXT COLLATE "C" NOT NULL,
    lease_seconds               INTEGER NOT NULL,
    max_attempts                INTEGER NOT NULL,
    required_capabilities       TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    version                     BIGINT NOT NULL,
    created_at                  BIGINT NOT NULL,
    updated_at                  BIGINT NOT NULL,
    registered_at               BIGINT
);
-- Names are unique ignoring ASCII case (SQLite: COLLATE NOCASE).
CREATE UNIQUE INDEX clusters_name ON clusters (lower(name));

-- Observed status, apart from the record so that heartbeats never bump the
-- record's version (and never make an admin's edit conflict).
CREATE TABLE cluster_status (
    cluster_id        TEXT COLLATE "C" PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
    last_heartbeat_at BIGINT,
    capabilities      TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    conditions        TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    updated_at        BIGINT
);

CREATE TABLE registration_tokens (
    id            TEXT COLLATE "C" PRIMARY KEY,
    cluster_id    TEXT COLLATE "C" NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    hash          BYTEA NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    created_by    TEXT COLLATE "C" NOT NULL DEFAULT '',
    used_at       BIGINT,
    credential_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    revoked_at    BIGINT,
    revoke_reason TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX registration_tokens_cluster ON registration_tokens (cluster_id, created_at);

CREATE TABLE credentials (
    id            TEXT COLLATE "C" PRIMARY KEY,
    cluster_id    TEXT COLLATE "C" NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    hash          BYTEA NOT NULL,
    sealed_hmac   BYTEA,
    capabilities  TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    rotate_after  BIGINT NOT NULL,
    rotate_until  BIGINT NOT NULL,
    rotated_from  TEXT COLLATE "C" NOT NULL DEFAULT '',
    superseded_at BIGINT,
    revoked_at    BIGINT,
    revoke_reason TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX credentials_cluster ON credentials (cluster_id, created_at);

CREATE TABLE jobs (
    id               TEXT COLLATE "C" PRIMARY KEY,
    cluster_id       TEXT COLLATE "C" NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    kind             TEXT COLLATE "C" NOT NULL,
    intent           TEXT COLLATE "C" NOT NULL DEFAULT '',
    target_kind      TEXT COLLATE "C" NOT NULL DEFAULT '',
    target_namespace TEXT COLLATE "C" NOT NULL DEFAULT '',
    target_name      TEXT COLLATE "C" NOT NULL DEFAULT '',
    payload          BYTEA NOT NULL,
    idempotency_key  TEXT COLLATE "C" NOT NULL DEFAULT '',
    state            TEXT COLLATE "C" NOT NULL,
    attempt          INTEGER NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    expires_at       BIGINT,
    submitted_by     TEXT COLLATE "C" NOT NULL DEFAULT '',
    claim_id         TEXT COLLATE "C",
    claimed_at       BIGINT,
    claimed_by       TEXT COLLATE "C",
    lease_seconds    INTEGER NOT NULL DEFAULT 0,
    lease_expires_at BIGINT,
    last_activity_at BIGINT,
    phase            TEXT COLLATE "C" NOT NULL DEFAULT '',
    outcome          TEXT COLLATE "C" NOT NULL DEFAULT '',
    error            TEXT COLLATE "C" NOT NULL DEFAULT '',
    result           BYTEA,
    finished_at      BIGINT
);
-- Polls: a cluster's queued jobs, oldest first.
CREATE INDEX jobs_cluster_state ON jobs (cluster_id, state, created_at, id);
-- The console's state tabs, newest first.
CREATE INDEX jobs_state ON jobs (state, created_at, id);
CREATE INDEX jobs_created ON jobs (created_at, id);
-- The reaper.
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'in_progress' AND lease_expires_at IS NOT NULL;
CREATE INDEX jobs_expiry ON jobs (expires_at) WHERE state = 'queued' AND expires_at IS NOT NULL;
-- At most one open job per cluster and idempotency key.
CREATE UNIQUE INDEX jobs_idempotency ON jobs (cluster_id, idempotency_key)
    WHERE idempotency_key <> '' AND state IN ('queued', 'in_progress');

CREATE TABLE job_history (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      TEXT COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    at          BIGINT NOT NULL,
    type        TEXT COLLATE "C" NOT NULL,
    actor       TEXT COLLATE "C" NOT NULL DEFAULT '',
    attempt     INTEGER NOT NULL,
    state       TEXT COLLATE "C" NOT NULL,
    phase       TEXT COLLATE "C" NOT NULL DEFAULT '',
    message     TEXT COLLATE "C" NOT NULL DEFAULT '',
    conditions  TEXT COLLATE "C",
    reported_at BIGINT
);
CREATE INDEX job_history_job ON job_history (job_id, seq);

-- Jobs per cluster and state, kept by triggers so that counts cost nothing to
-- read however many jobs there are. Only feed-writing trigger functions touch
-- it, after taking the feed lock (below), so its rows never see contention.
CREATE TABLE job_counts (
    cluster_id TEXT COLLATE "C" NOT NULL,
    state      TEXT COLLATE "C" NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (cluster_id, state)
);

CREATE TABLE events (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster_id   TEXT COLLATE "C" NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    kind         TEXT COLLATE "C" NOT NULL,
    event_key    TEXT COLLATE "C" NOT NULL DEFAULT '',
    resource_ref TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    conditions   TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    message      TEXT COLLATE "C" NOT NULL DEFAULT '',
    has_false    BOOLEAN NOT NULL DEFAULT false,
    timestamp    BIGINT,
    received_at  BIGINT NOT NULL,
    body         BYTEA
);
CREATE INDEX events_cluster ON events (cluster_id, id);
CREATE INDEX events_kind ON events (kind, id);
CREATE INDEX events_received ON events (received_at);

-- eventKey de-duplication inside the replay window.
CREATE TABLE event_keys (
    cluster_id TEXT COLLATE "C" NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    event_key  TEXT COLLATE "C" NOT NULL,
    seen_at    BIGINT NOT NULL,
    PRIMARY KEY (cluster_id, event_key)
);
CREATE INDEX event_keys_seen ON event_keys (seen_at);

-- The audit trail outlives what it talks about: no foreign keys.
CREATE TABLE audit (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          BIGINT NOT NULL,
    actor       TEXT COLLATE "C" NOT NULL,
    action      TEXT COLLATE "C" NOT NULL,
    cluster_id  TEXT COLLATE "C" NOT NULL DEFAULT '',
    target_kind TEXT COLLATE "C" NOT NULL DEFAULT '',
    target_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    reason      TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX audit_cluster ON audit (cluster_id, id);
CREATE INDEX audit_action ON audit (action, id);

-- The change feed: one row per change, written by the triggers below in the
-- transaction that made the change. A sequence number is never reused, even
-- after pruning (an identity column never goes back).
CREATE TABLE changes (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       TEXT COLLATE "C" NOT NULL,
    entity_id  TEXT COLLATE "C" NOT NULL,
    cluster_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    op         TEXT COLLATE "C" NOT NULL,
    job_state  TEXT COLLATE "C" NOT NULL DEFAULT '',
    at         BIGINT NOT NULL
);

-- The highest seq ChangesPrune ever deleted. With it the feed's end survives
-- pruning every row (the newest change is then through), and a watcher knows
-- it missed entries exactly when its position is below through; sequence
-- numbers skipped by rolled-back transactions are never mistaken for pruned
-- ones.
CREATE TABLE changes_pruned (
    one     BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    through BIGINT NOT NULL
);
INSERT INTO changes_pruned (through) VALUES (0);

-- Feed order is commit order.
--
-- A watcher follows the feed by reading "seq > the last seq I saw". In
-- PostgreSQL a sequence value is taken when the row is inserted, but
-- transactions commit in their own order: if transaction A takes seq 10 and
-- B takes seq 11, and B commits first, a watcher can read 11, move its
-- position to 11, and never see 10 once A commits. SQLite cannot do this (it
-- has one writer at a time); here we make it impossible too.
--
-- tether_feed, the one function that inserts into changes, first takes a
-- transaction-level advisory lock on a fixed key. The lock is held until the
-- transaction commits or rolls back, so feed-writing transactions are
-- serialized from their first feed row to their commit: seq values are handed
-- out in commit order, and whenever a reader sees seq N committed, every
-- smaller seq is either committed too or belongs to a transaction that rolled
-- back. (PostgreSQL makes a commit visible before it releases its locks, so
-- the next holder's rows come strictly after.) Only the feed-writing part of
-- a transaction is serialized; reads, and work done before the first feed
-- row, run concurrently. The store keeps that part short: most writes are a
-- single statement, whose triggers fire at its end.
--
-- Lock order, which keeps this free of deadlocks: a transaction takes the row
-- locks it needs before it writes its first feed row, and after that waits for
-- no row another transaction may hold. The trigger functions take the feed
-- lock before anything else they touch (job_counts), and they are named in
-- lower case so that they fire after PostgreSQL's foreign-key triggers
-- ("RI_ConstraintTrigger_..."; triggers fire in name order): a cluster's
-- cascading delete locks what it deletes before its feed row takes the lock.
--
-- pg_notify is delivered at commit, once per transaction (duplicates are
-- folded), to every process that LISTENs on tether_changes: the other
-- replicas' watchers wake without polling.
CREATE FUNCTION tether_feed(p_kind TEXT, p_id TEXT, p_cluster TEXT, p_op TEXT, p_job_state TEXT, p_at BIGINT)
RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    -- 8387237872774833765 = 'tetherfe' (tether feed) as a big-endian int64.
    PERFORM pg_advisory_xact_lock(8387237872774833765);
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at)
        VALUES (p_kind, p_id, COALESCE(p_cluster, ''), p_op, COALESCE(p_job_state, ''), p_at);
    PERFORM pg_notify('tether_changes', '');
END
$$;

CREATE FUNCTION tether_now_ms() RETURNS BIGINT LANGUAGE sql AS $$
    SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::BIGINT
$$;

CREATE FUNCTION clusters_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Only the cluster's delete is fed: its cascade (jobs, events...) is implied.
        PERFORM tether_feed('cluster', OLD.id, OLD.id, 'delete', '', tether_now_ms());
        DELETE FROM job_counts WHERE cluster_id = OLD.id;
        RETURN OLD;
    END IF;
    PERFORM tether_feed('cluster', NEW.id, NEW.id, 'upsert', '', NEW.updated_at);
    RETURN NEW;
END
$$;
CREATE TRIGGER clusters_feed AFTER INSERT OR UPDATE OR DELETE ON clusters
    FOR EACH ROW EXECUTE FUNCTION clusters_feed();

CREATE FUNCTION cluster_status_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM tether_feed('cluster', NEW.cluster_id, NEW.cluster_id, 'upsert', '', COALESCE(NEW.updated_at, 0));
    RETURN NEW;
END
$$;
CREATE TRIGGER cluster_status_feed AFTER INSERT OR UPDATE ON cluster_status
    FOR EACH ROW EXECUTE FUNCTION cluster_status_feed();

CREATE FUNCTION tokens_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM tether_feed('token', NEW.id, NEW.cluster_id, 'upsert', '', NEW.created_at);
    ELSE
        PERFORM tether_feed('token', NEW.id, NEW.cluster_id, 'upsert', '', COALESCE(NEW.used_at, NEW.revoked_at, NEW.created_at));
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER tokens_feed AFTER INSERT OR UPDATE ON registration_tokens
    FOR EACH ROW EXECUTE FUNCTION tokens_feed();

CREATE FUNCTION credentials_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM tether_feed('credential', NEW.id, NEW.cluster_id, 'upsert', '', NEW.created_at);
    ELSE
        PERFORM tether_feed('credential', NEW.id, NEW.cluster_id, 'upsert', '', COALESCE(NEW.revoked_at, NEW.superseded_at, NEW.created_at));
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER credentials_feed AFTER INSERT OR UPDATE ON credentials
    FOR EACH ROW EXECUTE FUNCTION credentials_feed();

-- Jobs feed their state, and keep job_counts (after tether_feed took the lock).
CREATE FUNCTION jobs_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM tether_feed('job', NEW.id, NEW.cluster_id, 'upsert', NEW.state, NEW.updated_at);
    IF TG_OP = 'INSERT' THEN
        INSERT INTO job_counts (cluster_id, state, n) VALUES (NEW.cluster_id, NEW.state, 1)
            ON CONFLICT (cluster_id, state) DO UPDATE SET n = job_counts.n + 1;
    ELSIF OLD.state IS DISTINCT FROM NEW.state THEN
        UPDATE job_counts SET n = n - 1 WHERE cluster_id = OLD.cluster_id AND state = OLD.state;
        INSERT INTO job_counts (cluster_id, state, n) VALUES (NEW.cluster_id, NEW.state, 1)
            ON CONFLICT (cluster_id, state) DO UPDATE SET n = job_counts.n + 1;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER jobs_feed AFTER INSERT OR UPDATE ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_feed();

CREATE FUNCTION events_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM tether_feed('event', NEW.id::TEXT, NEW.cluster_id, 'upsert', '', NEW.received_at);
    RETURN NEW;
END
$$;
CREATE TRIGGER events_feed AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_feed();

CREATE FUNCTION audit_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM tether_feed('audit', NEW.id::TEXT, NEW.cluster_id, 'upsert', '', NEW.at);
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_feed AFTER INSERT ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_feed();

-- The feed's first entry: positions start at 1, so zero always means "no
-- position yet" to a watcher (which then asks for a snapshot), never "the
-- position of an empty feed".
INSERT INTO changes (kind, entity_id, op, at) VALUES ('feed', 'start', 'upsert', 0);
