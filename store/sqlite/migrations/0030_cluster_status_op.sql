-- A heartbeat updates cluster_status; its feed entry said 'upsert', as a
-- change to the cluster's record does, so every heartbeat evicted the cluster
-- and its credentials from the record cache and woke its held polls, though
-- neither reads the status. An update that leaves the capabilities as they
-- were (a heartbeat: its time and conditions) now feeds op 'status': the
-- watch still sends the cluster, as for any change but a delete; the record
-- cache and the held polls ignore it. A new status row, or new capabilities
-- (a registration), still feed 'upsert'.
DROP TRIGGER cluster_status_upd;
CREATE TRIGGER cluster_status_upd AFTER UPDATE ON cluster_status BEGIN
    INSERT INTO changes (kind, entity_id, cluster_id, op, at) VALUES ('cluster', NEW.cluster_id, NEW.cluster_id,
        CASE WHEN OLD.capabilities IS NEW.capabilities THEN 'status' ELSE 'upsert' END, COALESCE(NEW.updated_at, 0));
END;
