-- Retention of ended webhook deliveries; see the SQLite schema's 0019.
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE state <> 'pending';
