-- A cluster's policy may require signed job payloads (issue 10): every job
-- handed to its agent carries an Ed25519 signature over the payload's JCS form.
ALTER TABLE clusters ADD COLUMN require_signed_payloads INTEGER NOT NULL DEFAULT 0;
