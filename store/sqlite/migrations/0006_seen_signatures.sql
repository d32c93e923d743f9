-- Signatures seen (issue 10): a signed agent request accepted once is refused
-- as a replay on every replica and after a restart. Rows live as long as the
-- signature's timestamp window; the pruner forgets the rest.
CREATE TABLE seen_signatures (
    key        BLOB PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX seen_signatures_expiry ON seen_signatures (expires_at);
