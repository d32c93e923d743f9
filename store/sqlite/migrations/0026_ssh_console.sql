-- The console over SSH (issue 32). An admin identity may hold SSH public
-- keys, kept in authorized_keys form, one a line (registry.SSHKeyLines);
-- only public halves. The deployment's one SSH host key is generated on
-- the first start with --ssh-listen, its Ed25519 seed sealed by the key
-- file and bound to its id, so that every replica presents the same key.
ALTER TABLE admin_tokens ADD COLUMN ssh_keys TEXT NOT NULL DEFAULT '';
CREATE TABLE ssh_host_keys (
    id             TEXT PRIMARY KEY,
    one            INTEGER NOT NULL DEFAULT 1 UNIQUE CHECK (one = 1),
    public_key     BLOB NOT NULL,
    sealed_private BLOB NOT NULL,
    created_at     INTEGER NOT NULL
);
