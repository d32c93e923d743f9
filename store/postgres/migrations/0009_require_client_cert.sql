-- A cluster's policy may require mTLS (issue 10): its agent's requests
-- without a verified client certificate naming the cluster are refused.
ALTER TABLE clusters ADD COLUMN require_client_cert BOOLEAN NOT NULL DEFAULT false;
