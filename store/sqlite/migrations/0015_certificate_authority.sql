-- tether as a small CA (issue 10, seed 003). The CA's private key is sealed
-- with the key file and kept here, so that every replica shares it. One
-- current CA; a replaced one stays trusted until the certificates it issued
-- have expired.
CREATE TABLE certificate_authorities (
    id            TEXT PRIMARY KEY,
    cert_der      BLOB NOT NULL,
    sealed_key    BLOB NOT NULL,
    created_at    INTEGER NOT NULL,
    not_after     INTEGER NOT NULL,
    retired_at    INTEGER,
    trusted_until INTEGER
);
CREATE UNIQUE INDEX certificate_authorities_current ON certificate_authorities ((1)) WHERE retired_at IS NULL;

-- The client certificates it issued, one per credential (the agent keeps the
-- certificate; tether keeps who it names and until when).
CREATE TABLE client_certificates (
    serial        TEXT PRIMARY KEY,
    cluster_id    TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    credential_id TEXT NOT NULL UNIQUE,
    ca_id         TEXT NOT NULL,
    not_before    INTEGER NOT NULL,
    not_after     INTEGER NOT NULL
);
CREATE INDEX client_certificates_cluster ON client_certificates (cluster_id, not_before);
