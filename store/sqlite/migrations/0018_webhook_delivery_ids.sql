-- A delivery's id is what receivers de-duplicate on (X-Tether-Delivery,
-- docs/webhooks.md), so it is never handed out twice. Without AUTOINCREMENT
-- SQLite takes the largest id plus one: deleting a subscription deleted its
-- deliveries, the newest among them, and the next deliveries (a subscription
-- created again to change its URL or secret, say) took ids the receiver had
-- already processed, and were ignored. PostgreSQL's BIGSERIAL never goes
-- back. The table is copied into one with AUTOINCREMENT (which remembers the
-- largest id ever, from the copied rows on); the triggers that fill it
-- (0004) name it and need no change.
CREATE TABLE webhook_deliveries_copy AS SELECT * FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event           TEXT NOT NULL,
    cluster_id      TEXT NOT NULL DEFAULT '',
    subject_id      TEXT NOT NULL,
    data            TEXT NOT NULL,              -- the JSON the receiver gets under "data"
    created_at      INTEGER NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending', -- pending, delivered, failed
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,           -- also the claim: a sender pushes it past its timeout
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    finished_at     INTEGER
);
INSERT INTO webhook_deliveries (id, webhook_id, event, cluster_id, subject_id, data, created_at, state, attempts,
        next_attempt_at, last_status, last_error, finished_at)
    SELECT id, webhook_id, event, cluster_id, subject_id, data, created_at, state, attempts,
        next_attempt_at, last_status, last_error, finished_at
    FROM webhook_deliveries_copy ORDER BY id;
DROP TABLE webhook_deliveries_copy;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook_id, id);
