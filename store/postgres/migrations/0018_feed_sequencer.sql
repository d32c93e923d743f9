-- Writers no longer run one at a time.
--
-- Until now tether_feed took a transaction-level advisory lock ('tetherfe',
-- the feed lock) before inserting a feed row, so that positions were handed
-- out in commit order (see 0001). With it every writing transaction of every
-- replica ran alone from its first feed row to its commit, and a store's
-- writes went at the pace of one connection, however many replicas shared it.
--
-- Now a feed row is inserted with an insertion number (id) and no position
-- (seq is NULL). tether_sequence() takes the feed lock for a short
-- transaction of its own and gives positions, in insertion order, to every
-- committed row that has none; feed_position holds the last one given. Each
-- replica calls it after its writers' commits (one call for all the commits
-- made while the previous one ran), before it reads the feed's end or prunes
-- it, and every second. A statement sees only committed rows, and one holder
-- of the lock at a time gives positions, each after the previous one's
-- commit, so positions only grow: a watcher that read position N never finds
-- a smaller one later, which is what the watch's "no lost change" needs. Two
-- changes of one entity keep their order: the second's transaction waits for
-- the first's row lock, so its feed row is inserted, and numbered, after the
-- first committed.
--
-- Per-state counts: updated in place by parallel transitions, the rows of
-- job_counts would deadlock (an ack and a reclaim of one cluster lock the
-- same two rows in opposite orders). Transitions insert delta rows instead,
-- which tether_fold_counts, run every second, folds into job_counts; counts
-- are read as job_counts plus the deltas, in one statement.
--
-- pg_notify moves from tether_feed to tether_sequence: PostgreSQL commits
-- the transactions that notified one at a time (a lock taken at pre-commit),
-- which would put the writers back in single file.
--
-- What 0001 says of the feed lock and of job_counts describes the schema
-- before this migration.

ALTER TABLE changes ALTER COLUMN seq DROP IDENTITY;
ALTER TABLE changes DROP CONSTRAINT changes_pkey;
ALTER TABLE changes ALTER COLUMN seq DROP NOT NULL;
ALTER TABLE changes ADD COLUMN id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
CREATE UNIQUE INDEX changes_seq ON changes (seq);
CREATE INDEX changes_unsequenced ON changes (id) WHERE seq IS NULL;

CREATE TABLE feed_position (
    one  BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    last BIGINT NOT NULL
);
INSERT INTO feed_position (last)
    SELECT GREATEST(COALESCE((SELECT max(seq) FROM changes), 0), (SELECT through FROM changes_pruned));

CREATE TABLE job_count_deltas (
    cluster_id TEXT COLLATE "C" NOT NULL,
    state      TEXT COLLATE "C" NOT NULL,
    n          BIGINT NOT NULL
);

CREATE OR REPLACE FUNCTION tether_feed(p_kind TEXT, p_id TEXT, p_cluster TEXT, p_op TEXT, p_job_state TEXT, p_at BIGINT)
RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at)
        VALUES (p_kind, p_id, COALESCE(p_cluster, ''), p_op, COALESCE(p_job_state, ''), p_at);
END
$$;

-- tether_sequence positions the committed feed rows that have none and
-- notifies when it positioned any; it returns how many. It is VOLATILE, so
-- in READ COMMITTED each statement below reads a snapshot taken after the
-- lock was granted: everything the previous holder committed is visible.
-- Its statement is planned at every call (EXECUTE): a plan cached while
-- changes was small scans the whole table to find the rows it positions,
-- until the table is analyzed again.
CREATE FUNCTION tether_sequence() RETURNS BIGINT LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    positioned BIGINT;
BEGIN
    -- 8387237872774833765 = 'tetherfe' (tether feed) as a big-endian int64.
    PERFORM pg_advisory_xact_lock(8387237872774833765);
    EXECUTE $q$
        WITH ready AS (
            SELECT id, row_number() OVER (ORDER BY id) AS k FROM changes WHERE seq IS NULL
        ), n AS (
            SELECT count(*) AS c FROM ready
        ), base AS (
            UPDATE feed_position SET last = last + n.c FROM n WHERE n.c > 0 RETURNING last - n.c AS b
        )
        UPDATE changes c SET seq = base.b + ready.k FROM ready, base WHERE c.id = ready.id
    $q$;
    GET DIAGNOSTICS positioned = ROW_COUNT;
    IF positioned > 0 THEN
        PERFORM pg_notify('tether_changes', '');
    END IF;
    RETURN positioned;
END
$$;

-- tether_fold_counts moves the committed count deltas into job_counts, under
-- the feed lock (see clusters_feed).
CREATE FUNCTION tether_fold_counts() RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(8387237872774833765);
    WITH d AS (DELETE FROM job_count_deltas RETURNING cluster_id, state, n),
         s AS (SELECT cluster_id, state, sum(n) AS n FROM d GROUP BY cluster_id, state)
    INSERT INTO job_counts (cluster_id, state, n) SELECT cluster_id, state, n FROM s
        ON CONFLICT (cluster_id, state) DO UPDATE SET n = job_counts.n + EXCLUDED.n;
END
$$;

CREATE OR REPLACE FUNCTION jobs_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM tether_feed('job', NEW.id, NEW.cluster_id, 'upsert', NEW.state, NEW.updated_at);
    IF TG_OP = 'INSERT' THEN
        INSERT INTO job_count_deltas (cluster_id, state, n) VALUES (NEW.cluster_id, NEW.state, 1);
    ELSIF OLD.state IS DISTINCT FROM NEW.state THEN
        INSERT INTO job_count_deltas (cluster_id, state, n)
            VALUES (OLD.cluster_id, OLD.state, -1), (NEW.cluster_id, NEW.state, 1);
    END IF;
    RETURN NEW;
END
$$;

-- A cluster's delete drops its counts under the feed lock, so that no fold
-- of its last deltas runs meanwhile and writes them back (the delete holds
-- no lock a fold waits for before it takes this one).
CREATE OR REPLACE FUNCTION clusters_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Only the cluster's delete is fed: its cascade (jobs, events...) is implied.
        PERFORM tether_feed('cluster', OLD.id, OLD.id, 'delete', '', tether_now_ms());
        PERFORM pg_advisory_xact_lock(8387237872774833765);
        DELETE FROM job_counts WHERE cluster_id = OLD.id;
        DELETE FROM job_count_deltas WHERE cluster_id = OLD.id;
        RETURN OLD;
    END IF;
    PERFORM tether_feed('cluster', NEW.id, NEW.id, 'upsert', '', NEW.updated_at);
    RETURN NEW;
END
$$;

-- Hooks are read FOR KEY SHARE: a hook deleted while a job finishes is
-- skipped, instead of failing the job's result on the delivery's foreign key.
CREATE OR REPLACE FUNCTION webhooks_enqueue(p_event TEXT, p_org TEXT, p_cluster TEXT, p_subject TEXT, p_data TEXT, p_at BIGINT)
RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
    INSERT INTO webhook_deliveries (webhook_id, event, cluster_id, subject_id, data, created_at, next_attempt_at)
    SELECT w.id, p_event, p_cluster, p_subject, p_data, p_at, p_at
    FROM webhooks w
    WHERE w.events::jsonb ? p_event AND (w.organization = '' OR w.organization = p_org)
    FOR KEY SHARE OF w
$$;
