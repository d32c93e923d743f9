-- tether schema, version 1. Times are Unix milliseconds (UTC); lists and
-- conditions are JSON text.

CREATE TABLE clusters (
    id                          TEXT PRIMARY KEY,
    name                        TEXT NOT NULL,
    organization                TEXT NOT NULL DEFAULT '',
    public_key                  TEXT NOT NULL DEFAULT '',
    allowed_namespaces          TEXT NOT NULL DEFAULT '[]',
    allowed_catalog_entries     TEXT NOT NULL DEFAULT '[]',
    allowed_operation_templates TEXT NOT NULL DEFAULT '[]',
    mode                        TEXT NOT NULL,
    state                       TEXT NOT NULL,
    lease_seconds               INTEGER NOT NULL,
    max_attempts                INTEGER NOT NULL,
    required_capabilities       TEXT NOT NULL DEFAULT '[]',
    version                     INTEGER NOT NULL,
    created_at                  INTEGER NOT NULL,
    updated_at                  INTEGER NOT NULL,
    registered_at               INTEGER
);
CREATE UNIQUE INDEX clusters_name ON clusters (name COLLATE NOCASE);

-- Observed status, apart from the record so that heartbeats never bump the
-- record's version (and never make an admin's edit conflict).
CREATE TABLE cluster_status (
    cluster_id        TEXT PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
    last_heartbeat_at INTEGER,
    capabilities      TEXT NOT NULL DEFAULT '[]',
    conditions        TEXT NOT NULL DEFAULT '[]',
    updated_at        INTEGER
);

CREATE TABLE registration_tokens (
    id            TEXT PRIMARY KEY,
    cluster_id    TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    hash          BLOB NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    created_by    TEXT NOT NULL DEFAULT '',
    used_at       INTEGER,
    credential_id TEXT NOT NULL DEFAULT '',
    revoked_at    INTEGER,
    revoke_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX registration_tokens_cluster ON registration_tokens (cluster_id, created_at);

CREATE TABLE credentials (
    id            TEXT PRIMARY KEY,
    cluster_id    TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    hash          BLOB NOT NULL,
    sealed_hmac   BLOB,
    capabilities  TEXT NOT NULL DEFAULT '[]',
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    rotate_after  INTEGER NOT NULL,
    rotate_until  INTEGER NOT NULL,
    rotated_from  TEXT NOT NULL DEFAULT '',
    superseded_at INTEGER,
    revoked_at    INTEGER,
    revoke_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX credentials_cluster ON credentials (cluster_id, created_at);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    cluster_id       TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    kind             TEXT NOT NULL,
    intent           TEXT NOT NULL DEFAULT '',
    target_kind      TEXT NOT NULL DEFAULT '',
    target_namespace TEXT NOT NULL DEFAULT '',
    target_name      TEXT NOT NULL DEFAULT '',
    payload          BLOB NOT NULL,
    idempotency_key  TEXT NOT NULL DEFAULT '',
    state            TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    expires_at       INTEGER,
    submitted_by     TEXT NOT NULL DEFAULT '',
    claim_id         TEXT,
    claimed_at       INTEGER,
    claimed_by       TEXT,
    lease_seconds    INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER,
    last_activity_at INTEGER,
    phase            TEXT NOT NULL DEFAULT '',
    outcome          TEXT NOT NULL DEFAULT '',
    error            TEXT NOT NULL DEFAULT '',
    result           BLOB,
    finished_at      INTEGER
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
    WHERE idempotency_key != '' AND state IN ('queued', 'in_progress');

CREATE TABLE job_history (
    seq         INTEGER PRIMARY KEY,
    job_id      TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    type        TEXT NOT NULL,
    actor       TEXT NOT NULL DEFAULT '',
    attempt     INTEGER NOT NULL,
    state       TEXT NOT NULL,
    phase       TEXT NOT NULL DEFAULT '',
    message     TEXT NOT NULL DEFAULT '',
    conditions  TEXT,
    reported_at INTEGER
);
CREATE INDEX job_history_job ON job_history (job_id, seq);

-- Jobs per cluster and state, kept by triggers so that counts cost nothing to
-- read however many jobs there are.
CREATE TABLE job_counts (
    cluster_id TEXT NOT NULL,
    state      TEXT NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, state)
) WITHOUT ROWID;

CREATE TABLE events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster_id   TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    event_key    TEXT NOT NULL DEFAULT '',
    resource_ref TEXT NOT NULL DEFAULT '{}',
    conditions   TEXT NOT NULL DEFAULT '[]',
    message      TEXT NOT NULL DEFAULT '',
    has_false    INTEGER NOT NULL DEFAULT 0,
    timestamp    INTEGER,
    received_at  INTEGER NOT NULL,
    body         BLOB
);
CREATE INDEX events_cluster ON events (cluster_id, id);
CREATE INDEX events_kind ON events (kind, id);
CREATE INDEX events_received ON events (received_at);

-- eventKey de-duplication inside the replay window.
CREATE TABLE event_keys (
    cluster_id TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    event_key  TEXT NOT NULL,
    seen_at    INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, event_key)
) WITHOUT ROWID;
CREATE INDEX event_keys_seen ON event_keys (seen_at);

-- The audit trail outlives what it talks about: no foreign keys. Nothing
-- deletes audit entries, so the largest id is never reused.
CREATE TABLE audit (
    id          INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    cluster_id  TEXT NOT NULL DEFAULT '',
    target_kind TEXT NOT NULL DEFAULT '',
    target_id   TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_cluster ON audit (cluster_id, id);
CREATE INDEX audit_action ON audit (action, id);

-- The change feed: one row per change, written by the triggers below in the
-- transaction that made the change. A new row's seq is the largest plus one,
-- and pruning always keeps the newest row, so a seq is never reused (without
-- AUTOINCREMENT's bookkeeping write on every change).
CREATE TABLE changes (
    seq        INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    entity_id  TEXT NOT NULL,
    cluster_id TEXT NOT NULL DEFAULT '',
    op         TEXT NOT NULL,
    job_state  TEXT NOT NULL DEFAULT '',
    at         INTEGER NOT NULL
);

CREATE TRIGGER clusters_ins AFTER INSERT ON clusters BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('cluster', NEW.id, NEW.id, 'upsert', NEW.updated_at);
END;
CREATE TRIGGER clusters_upd AFTER UPDATE ON clusters BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('cluster', NEW.id, NEW.id, 'upsert', NEW.updated_at);
END;
-- Only the cluster's delete is fed: its cascade (jobs, events...) is implied.
CREATE TRIGGER clusters_del AFTER DELETE ON clusters BEGIN
    DELETE FROM job_counts WHERE cluster_id = OLD.id;
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('cluster', OLD.id, OLD.id, 'delete', CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;
CREATE TRIGGER cluster_status_ins AFTER INSERT ON cluster_status BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('cluster', NEW.cluster_id, NEW.cluster_id, 'upsert', COALESCE(NEW.updated_at, 0));
END;
CREATE TRIGGER cluster_status_upd AFTER UPDATE ON cluster_status BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('cluster', NEW.cluster_id, NEW.cluster_id, 'upsert', COALESCE(NEW.updated_at, 0));
END;
CREATE TRIGGER tokens_ins AFTER INSERT ON registration_tokens BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('token', NEW.id, NEW.cluster_id, 'upsert', NEW.created_at);
END;
CREATE TRIGGER tokens_upd AFTER UPDATE ON registration_tokens BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('token', NEW.id, NEW.cluster_id, 'upsert', COALESCE(NEW.used_at, NEW.revoked_at, NEW.created_at));
END;
CREATE TRIGGER credentials_ins AFTER INSERT ON credentials BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('credential', NEW.id, NEW.cluster_id, 'upsert', NEW.created_at);
END;
CREATE TRIGGER credentials_upd AFTER UPDATE ON credentials BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('credential', NEW.id, NEW.cluster_id, 'upsert', COALESCE(NEW.revoked_at, NEW.superseded_at, NEW.created_at));
END;
CREATE TRIGGER jobs_ins AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts (cluster_id, state, n) VALUES (NEW.cluster_id, NEW.state, 1)
        ON CONFLICT (cluster_id, state) DO UPDATE SET n = n + 1;
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at) VALUES ('job', NEW.id, NEW.cluster_id, 'upsert', NEW.state, NEW.updated_at);
END;
CREATE TRIGGER jobs_upd AFTER UPDATE ON jobs BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at) VALUES ('job', NEW.id, NEW.cluster_id, 'upsert', NEW.state, NEW.updated_at);
END;
CREATE TRIGGER jobs_upd_state AFTER UPDATE OF state ON jobs WHEN OLD.state != NEW.state BEGIN
    UPDATE job_counts SET n = n - 1 WHERE cluster_id = OLD.cluster_id AND state = OLD.state;
    INSERT INTO job_counts (cluster_id, state, n) VALUES (NEW.cluster_id, NEW.state, 1)
        ON CONFLICT (cluster_id, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER events_ins AFTER INSERT ON events BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('event', CAST(NEW.id AS TEXT), NEW.cluster_id, 'upsert', NEW.received_at);
END;
CREATE TRIGGER audit_ins AFTER INSERT ON audit BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('audit', CAST(NEW.id AS TEXT), NEW.cluster_id, 'upsert', NEW.at);
END;

-- The feed's first entry: positions start at 1, so zero always means "no
-- position yet" to a watcher (which then asks for a snapshot), never "the
-- position of an empty feed".
INSERT INTO changes (kind, entity_id, op, at) VALUES ('feed', 'start', 'upsert', 0);
