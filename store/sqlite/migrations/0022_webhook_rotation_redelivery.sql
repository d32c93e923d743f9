-- Webhooks gain what issue 31 asks of them:
--
-- * a version, so that an edit (webhook edit, PATCH /webhooks/{w} with
--   If-Match) is a compare-and-swap as a cluster's is;
-- * a previous secret, sealed like the current one and bound to the same
--   row id, that signs deliveries beside the new one until
--   previous_secret_until (webhook rotate-secret --overlap): a receiver
--   switches to the new secret at any moment of the overlap without
--   refusing a delivery;
-- * deliveries an admin asked to send again. A redelivery is a new row (its
--   own attempts and retry window) that carries the message of the delivery
--   first sent: redelivery_of is that delivery's id, which receivers see as
--   webhook-id (and X-Tether-Delivery, and the body's id) so that one that
--   did process it ignores it; first_created_at is that delivery's
--   created_at, the body's createdAt. Both are NULL on every other row.
ALTER TABLE webhooks ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE webhooks ADD COLUMN sealed_previous_secret BLOB;
ALTER TABLE webhooks ADD COLUMN previous_secret_until INTEGER;
ALTER TABLE webhook_deliveries ADD COLUMN redelivery_of INTEGER;
ALTER TABLE webhook_deliveries ADD COLUMN first_created_at INTEGER;
