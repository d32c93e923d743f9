-- The feed costs the database less per change; what it does is unchanged.
--
-- Measured with pg_stat_statements over 10,000 lifecycles (docs/performance.md,
-- "The feed positioned by the writers' groups"), two things cost more than
-- the work they do:
--
-- 1. The hot triggers (jobs, audit, events, cluster status) called
--    tether_feed with PERFORM: a nested PL/pgSQL call, whose SELECT cost
--    more than the INSERT it wraps. They now insert the feed row
--    themselves, with the same values (tether_feed's COALESCEs included).
--    tether_feed stays for the others (clusters, tokens, credentials,
--    rollouts, a job's delete), which are rare.
--
-- 2. tether_position's statement was planned at every call (EXECUTE; see
--    tether_sequence in 0018), an eighth of its time, and what it was
--    planned from, on a database never analyzed (autovacuum off), read the
--    unpositioned rows with a bitmap scan of changes_unsequenced. A bitmap
--    scan never marks an index entry dead, and each positioning leaves one
--    (a row's positioned version is not in that partial index, but its
--    unpositioned one stays there until a vacuum): without a vacuum every
--    call read every row positioned so far.
--
--    Its statements are now static, planned once per session, and the
--    function runs with seq scans and bitmap scans off, generic plans and
--    no JIT (the SET clauses below), so that what they read does not depend
--    on the statistics, nor on how big changes was when a session first
--    planned them:
--    - the unpositioned rows' ids, in insertion order, come from a plain
--      index scan of changes_unsequenced, which marks the entries of rows
--      positioned before dead as it passes them (an entry marked dead is
--      skipped, and dropped when its page would split): the index stays
--      about as small as the rows it serves;
--    - each of them is updated by its key (id = ANY, an index scan), and
--      its position is its rank among them (width_bucket, a binary search
--      of the sorted ids), after the last position given. The statement
--      had a join instead, which a plan made while changes was small runs
--      as a nested loop that reads every unpositioned row for each one (a
--      backlog of 20,000 took 36 s; now 0.16 s).
--
-- Positions are given as before: by one holder of the feed lock at a time
-- (the callers take it, 0028), in insertion order, to the rows its snapshot
-- holds, taken after the lock was granted (the function is VOLATILE, so in
-- READ COMMITTED each statement takes one). The statements that read and
-- update are two now: a row committed between them is left for the next
-- holder, as if it had committed after the first; no one else gives or
-- takes away positions meanwhile (a prune, which deletes positioned rows,
-- holds the lock). So positions only grow: a watcher that read position N
-- never finds a smaller one later.

CREATE OR REPLACE FUNCTION tether_position() RETURNS BIGINT LANGUAGE plpgsql
SET search_path FROM CURRENT SET enable_seqscan = off SET enable_bitmapscan = off SET jit = off
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    ids BIGINT[];
    b BIGINT;
    positioned BIGINT;
BEGIN
    SELECT array_agg(id ORDER BY id) INTO ids FROM changes WHERE seq IS NULL;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    UPDATE feed_position SET last = last + cardinality(ids) WHERE one RETURNING last - cardinality(ids) INTO b;
    UPDATE changes SET seq = b + width_bucket(id, ids) WHERE id = ANY (ids) AND seq IS NULL;
    GET DIAGNOSTICS positioned = ROW_COUNT;
    IF positioned > 0 THEN
        PERFORM pg_notify('tether_changes', '');
    END IF;
    RETURN positioned;
END
$$;

CREATE OR REPLACE FUNCTION jobs_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at)
        VALUES ('job', NEW.id, COALESCE(NEW.cluster_id, ''), 'upsert', COALESCE(NEW.state, ''), NEW.updated_at);
    IF TG_OP = 'INSERT' THEN
        INSERT INTO job_count_deltas (cluster_id, state, n) VALUES (NEW.cluster_id, NEW.state, 1);
    ELSIF OLD.state IS DISTINCT FROM NEW.state THEN
        INSERT INTO job_count_deltas (cluster_id, state, n)
            VALUES (OLD.cluster_id, OLD.state, -1), (NEW.cluster_id, NEW.state, 1);
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION events_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at)
        VALUES ('event', NEW.id::TEXT, COALESCE(NEW.cluster_id, ''), 'upsert', '', NEW.received_at);
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION audit_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at)
        VALUES ('audit', NEW.id::TEXT, COALESCE(NEW.cluster_id, ''), 'upsert', '', NEW.at);
    RETURN NEW;
END
$$;

-- As in 0030: a heartbeat that leaves the capabilities as they were feeds
-- 'status', anything else 'upsert'.
CREATE OR REPLACE FUNCTION cluster_status_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at)
        VALUES ('cluster', NEW.cluster_id, COALESCE(NEW.cluster_id, ''),
            CASE WHEN TG_OP = 'UPDATE' AND OLD.capabilities IS NOT DISTINCT FROM NEW.capabilities THEN 'status' ELSE 'upsert' END,
            '', COALESCE(NEW.updated_at, 0));
    RETURN NEW;
END
$$;
