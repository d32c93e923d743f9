-- Signatures seen (issue 10); see the SQLite schema.
CREATE TABLE seen_signatures (
    key        BYTEA PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE INDEX seen_signatures_expiry ON seen_signatures (expires_at);
