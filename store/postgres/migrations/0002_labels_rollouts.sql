-- Cluster labels and fleet rollouts (issue 14). The same tables and meaning
-- as the SQLite schema; see there for the comments.

ALTER TABLE clusters ADD COLUMN labels TEXT COLLATE "C" NOT NULL DEFAULT '{}';

CREATE TABLE rollouts (
    id                TEXT COLLATE "C" PRIMARY KEY,
    name              TEXT COLLATE "C" NOT NULL,
    organization      TEXT COLLATE "C" NOT NULL DEFAULT '',
    selector          TEXT COLLATE "C" NOT NULL,
    kind              TEXT COLLATE "C" NOT NULL,
    payload           BYTEA NOT NULL,
    max_parallel      INTEGER NOT NULL,
    max_failures      INTEGER NOT NULL,
    pause_between_ms  BIGINT NOT NULL DEFAULT 0,
    order_by          TEXT COLLATE "C" NOT NULL,
    state             TEXT COLLATE "C" NOT NULL,
    failure_base      INTEGER NOT NULL DEFAULT 0,
    next_wave_at      BIGINT,
    version           BIGINT NOT NULL,
    created_by        TEXT COLLATE "C" NOT NULL,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    finished_at       BIGINT
);
CREATE UNIQUE INDEX rollouts_name ON rollouts (lower(name));
CREATE INDEX rollouts_created ON rollouts (created_at, id);

CREATE TABLE rollout_targets (
    rollout_id   TEXT COLLATE "C" NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    cluster_id   TEXT COLLATE "C" NOT NULL,
    cluster_name TEXT COLLATE "C" NOT NULL,
    state        TEXT COLLATE "C" NOT NULL,
    reason       TEXT COLLATE "C" NOT NULL DEFAULT '',
    job_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
    attempts     INTEGER NOT NULL DEFAULT 0,
    started_at   BIGINT,
    finished_at  BIGINT,
    PRIMARY KEY (rollout_id, position)
);
-- What the rollouts service looks at every second: targets whose job is open.
CREATE INDEX rollout_targets_running ON rollout_targets (rollout_id) WHERE state = 'running';

CREATE FUNCTION rollouts_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM tether_feed('rollout', NEW.id, '', 'upsert', '', NEW.updated_at);
    RETURN NEW;
END
$$;
CREATE TRIGGER rollouts_feed AFTER INSERT OR UPDATE ON rollouts
    FOR EACH ROW EXECUTE FUNCTION rollouts_feed();
