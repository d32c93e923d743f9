-- Webhook edits, secret rotation and redelivery (issue 31); see the SQLite
-- schema's 0024 for the comments.
ALTER TABLE webhooks ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE webhooks ADD COLUMN sealed_previous_secret BYTEA;
ALTER TABLE webhooks ADD COLUMN previous_secret_until BIGINT;
ALTER TABLE webhook_deliveries ADD COLUMN redelivery_of BIGINT;
ALTER TABLE webhook_deliveries ADD COLUMN first_created_at BIGINT;
