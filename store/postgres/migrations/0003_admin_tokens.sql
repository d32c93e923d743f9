-- Admin tokens (issue 9); see the SQLite schema for the comments.
CREATE TABLE admin_tokens (
    id            TEXT COLLATE "C" PRIMARY KEY,
    name          TEXT COLLATE "C" NOT NULL,
    role          TEXT COLLATE "C" NOT NULL,
    organization  TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    created_by    TEXT COLLATE "C" NOT NULL,
    expires_at    BIGINT,
    revoked_at    BIGINT,
    revoke_reason TEXT COLLATE "C" NOT NULL DEFAULT '',
    hash          BYTEA NOT NULL
);
CREATE UNIQUE INDEX admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at IS NULL;
