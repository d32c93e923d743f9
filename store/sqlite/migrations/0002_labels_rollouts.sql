-- Cluster labels and fleet rollouts (issue 14).

-- Labels: a JSON object of Kubernetes-syntax key/value pairs, part of the
-- identity record (an edit bumps the version like any other field).
ALTER TABLE clusters ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';

-- A rollout: one job kind and payload rolled across the clusters a selector
-- picked when it was created. Every change compare-and-swaps on version, so
-- two replicas advancing the same rollout never both start a wave.
CREATE TABLE rollouts (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    organization      TEXT NOT NULL DEFAULT '',
    selector          TEXT NOT NULL,
    kind              TEXT NOT NULL,
    payload           BLOB NOT NULL,
    max_parallel      INTEGER NOT NULL,
    max_failures      INTEGER NOT NULL,
    pause_between_ms  INTEGER NOT NULL DEFAULT 0,
    order_by          TEXT NOT NULL,
    state             TEXT NOT NULL,
    failure_base      INTEGER NOT NULL DEFAULT 0,
    next_wave_at      INTEGER,
    version           INTEGER NOT NULL,
    created_by        TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    finished_at       INTEGER
);
CREATE UNIQUE INDEX rollouts_name ON rollouts (name COLLATE NOCASE);
CREATE INDEX rollouts_created ON rollouts (created_at, id);

-- Its targets, frozen at creation, in the order they are reached. A target
-- keeps the cluster's name as it was: the cluster may be renamed or deleted.
-- No foreign key to jobs: retention may delete a finished job, and the
-- target keeps what it recorded.
CREATE TABLE rollout_targets (
    rollout_id   TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    cluster_id   TEXT NOT NULL,
    cluster_name TEXT NOT NULL,
    state        TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    job_id       TEXT NOT NULL DEFAULT '',
    attempts     INTEGER NOT NULL DEFAULT 0,
    started_at   INTEGER,
    finished_at  INTEGER,
    PRIMARY KEY (rollout_id, position)
);
-- What the rollouts service looks at every second: targets whose job is open.
CREATE INDEX rollout_targets_running ON rollout_targets (rollout_id) WHERE state = 'running';

CREATE TRIGGER rollouts_ins AFTER INSERT ON rollouts BEGIN
    INSERT INTO changes (kind, entity_id, op, at) VALUES ('rollout', NEW.id, 'upsert', NEW.updated_at);
END;
CREATE TRIGGER rollouts_upd AFTER UPDATE ON rollouts BEGIN
    INSERT INTO changes (kind, entity_id, op, at) VALUES ('rollout', NEW.id, 'upsert', NEW.updated_at);
END;
