-- Retries (issue 12): a job retried from a failed, conflicting, expired or
-- canceled one names it.
ALTER TABLE jobs ADD COLUMN retry_of TEXT NOT NULL DEFAULT '';
