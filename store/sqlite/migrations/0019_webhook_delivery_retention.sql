-- Retention deletes deliveries that ended (delivered, or failed for good)
-- once they are older than --retain-webhook-deliveries: until then the table
-- kept every delivery ever made. This index finds the oldest ended ones
-- without reading the pending ones or the whole table.
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE state <> 'pending';
