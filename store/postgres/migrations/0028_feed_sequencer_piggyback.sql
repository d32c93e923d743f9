-- The writers' groups position the feed themselves when the feed lock is free.
--
-- Since 0018 feed rows were positioned only by tether_sequence(), which each
-- replica ran as a transaction of its own after its writers' commits: under
-- load a round ran after nearly every group, and each was one more commit,
-- one more WAL flush and a notification (a third of the database's time in a
-- lifecycle, docs/performance.md).
--
-- tether_sequence_try() does what tether_sequence() does, but only if it
-- gets the feed lock at once (pg_try_advisory_xact_lock): it never waits. A
-- writer's group calls it as its last statement, sent with COMMIT, so the
-- group holds the lock only while it commits and waits on nothing meanwhile
-- (a COMMIT waits for no lock: no constraint of the schema is deferred). It
-- positions, in insertion order, the committed rows that have none and the
-- group's own rows, which its transaction sees. Positions still only grow:
-- the lock and feed_position's row are held until the group's commit, so no
-- other position is given before all of the group's become visible at once,
-- and the next holder's statements see them. One entity's changes keep their
-- order as before: a second change of an entity waits for the first one's
-- row lock, so the first's feed row was inserted, and numbered, before it,
-- and committed before the second's group can position anything.
--
-- It returns how many rows it positioned, or -1 when the lock was held by
-- someone else (a round, another group, a cluster's delete, a fold or a
-- prune); the group's rows then wait for the next holder, and the store
-- makes sure there is one (writer.go). It notifies like a round, from inside
-- the group's transaction: PostgreSQL commits the transactions that notified
-- one at a time, but only a holder of the feed lock notifies, so that adds
-- no queue the lock does not already make.
--
-- Blocking takers of the feed lock (rounds, clusters_feed, folds, prunes)
-- may wait for a group that holds it; a group never waits for them, so no
-- deadlock goes through the lock.

-- tether_position positions the committed feed rows that have none, and the
-- caller's own, and notifies when it positioned any; it returns how many.
-- The caller holds the feed lock. It is VOLATILE, so in READ COMMITTED its
-- statement reads a snapshot taken after the lock was granted, and it is
-- planned at every call (see tether_sequence in 0018).
CREATE FUNCTION tether_position() RETURNS BIGINT LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    positioned BIGINT;
BEGIN
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

-- tether_sequence: as in 0018 (it waits for the feed lock).
CREATE OR REPLACE FUNCTION tether_sequence() RETURNS BIGINT LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    -- 8387237872774833765 = 'tetherfe' (tether feed) as a big-endian int64.
    PERFORM pg_advisory_xact_lock(8387237872774833765);
    RETURN tether_position();
END
$$;

-- tether_sequence_try: tether_sequence if the feed lock is free now, else -1.
CREATE FUNCTION tether_sequence_try() RETURNS BIGINT LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(8387237872774833765) THEN
        RETURN -1;
    END IF;
    RETURN tether_position();
END
$$;
