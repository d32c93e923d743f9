-- A heartbeat updates cluster_status; its feed entry said 'upsert', as a
-- change to the cluster's record does, so every heartbeat evicted the cluster
-- and its credentials from the record cache and woke its held polls, though
-- neither reads the status. An update that leaves the capabilities as they
-- were (a heartbeat: its time and conditions) now feeds op 'status': the
-- watch still sends the cluster, as for any change but a delete; the record
-- cache and the held polls ignore it. A new status row, or new capabilities
-- (a registration), still feed 'upsert'.
CREATE OR REPLACE FUNCTION cluster_status_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.capabilities IS NOT DISTINCT FROM NEW.capabilities THEN
        PERFORM tether_feed('cluster', NEW.cluster_id, NEW.cluster_id, 'status', '', COALESCE(NEW.updated_at, 0));
    ELSE
        PERFORM tether_feed('cluster', NEW.cluster_id, NEW.cluster_id, 'upsert', '', COALESCE(NEW.updated_at, 0));
    END IF;
    RETURN NEW;
END
$$;
