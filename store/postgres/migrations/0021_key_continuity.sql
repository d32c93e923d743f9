-- Key continuity and bound job signatures (issue 28).
--
-- A rotated-in signing key is endorsed by the key it replaces: the previous
-- key signs a statement naming the new key (internal/jobsig), so that an
-- agent trusts a new key only when a key it already trusts introduced it.
-- Keys made before this migration (and a cluster's first key) have none.
ALTER TABLE cluster_signing_keys ADD COLUMN endorsed_by TEXT;
ALTER TABLE cluster_signing_keys ADD COLUMN endorsement TEXT;

-- Jobs now carry a signature bound to the job (jobSignature, format v2). The
-- payload-only signature older agents verify (signature) is sent only where
-- the policy allows it. Clusters that already sign keep sending it, so that
-- upgrading tether breaks none of their agents; an admin turns it off once
-- every agent verifies the bound form.
ALTER TABLE clusters ADD COLUMN allow_legacy_payload_signatures BOOLEAN NOT NULL DEFAULT false;
UPDATE clusters SET allow_legacy_payload_signatures = true WHERE require_signed_payloads;
