-- Admin tokens (issue 9): who may use the admin API, with which role and
-- organization scope. Only a SHA-256 hash of each secret is kept. A name is
-- unique among tokens not revoked, so a revoked token's name can be reused.
CREATE TABLE admin_tokens (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    role          TEXT NOT NULL,
    organization  TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    created_by    TEXT NOT NULL,
    expires_at    INTEGER,
    revoked_at    INTEGER,
    revoke_reason TEXT NOT NULL DEFAULT '',
    hash          BLOB NOT NULL
);
CREATE UNIQUE INDEX admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at IS NULL;
