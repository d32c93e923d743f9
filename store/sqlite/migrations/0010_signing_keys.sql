-- Per-cluster payload-signing keys (issue 10): Ed25519, the private half
-- sealed with the key file. One current key per cluster; retired keys stay
-- until their overlap ends so agents can verify jobs signed before a rotation.
CREATE TABLE cluster_signing_keys (
    id             TEXT PRIMARY KEY,
    cluster_id     TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    public_key     BLOB NOT NULL,
    sealed_private BLOB NOT NULL,
    created_at     INTEGER NOT NULL,
    retired_at     INTEGER,
    expires_at     INTEGER
);
CREATE UNIQUE INDEX cluster_signing_keys_current ON cluster_signing_keys (cluster_id) WHERE retired_at IS NULL;
CREATE INDEX cluster_signing_keys_cluster ON cluster_signing_keys (cluster_id, created_at);
