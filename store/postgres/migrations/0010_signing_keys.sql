-- Per-cluster payload-signing keys (issue 10): Ed25519, the private half
-- sealed with the key file. One current key per cluster; retired keys stay
-- until their overlap ends so agents can verify jobs signed before a rotation.
CREATE TABLE cluster_signing_keys (
    id             TEXT COLLATE "C" PRIMARY KEY,
    cluster_id     TEXT COLLATE "C" NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    public_key     BYTEA NOT NULL,
    sealed_private BYTEA NOT NULL,
    created_at     BIGINT NOT NULL,
    retired_at     BIGINT,
    expires_at     BIGINT
);
CREATE UNIQUE INDEX cluster_signing_keys_current ON cluster_signing_keys (cluster_id) WHERE retired_at IS NULL;
CREATE INDEX cluster_signing_keys_cluster ON cluster_signing_keys (cluster_id, created_at);
