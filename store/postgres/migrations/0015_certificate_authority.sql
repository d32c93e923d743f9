-- tether as a small CA (issue 10, seed 003). The CA's private key is sealed
-- with the key file and kept here, so that every replica shares it. One
-- current CA; a replaced one stays trusted until the certificates it issued
-- have expired.
CREATE TABLE certificate_authorities (
    id            TEXT COLLATE "C" PRIMARY KEY,
    cert_der      BYTEA NOT NULL,
    sealed_key    BYTEA NOT NULL,
    created_at    BIGINT NOT NULL,
    not_after     BIGINT NOT NULL,
    retired_at    BIGINT,
    trusted_until BIGINT
);
CREATE UNIQUE INDEX certificate_authorities_current ON certificate_authorities ((1)) WHERE retired_at IS NULL;

-- The client certificates it issued, one per credential (the agent keeps the
-- certificate; tether keeps who it names and until when).
CREATE TABLE client_certificates (
    serial        TEXT COLLATE "C" PRIMARY KEY,
    cluster_id    TEXT COLLATE "C" NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    credential_id TEXT COLLATE "C" NOT NULL UNIQUE,
    ca_id         TEXT COLLATE "C" NOT NULL,
    not_before    BIGINT NOT NULL,
    not_after     BIGINT NOT NULL
);
CREATE INDEX client_certificates_cluster ON client_certificates (cluster_id, not_before);
