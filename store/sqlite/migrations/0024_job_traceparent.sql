-- The W3C trace context of a job's submission ('' when it was not traced):
-- handed to the agent with the job, so that the agent's work and the spans
-- of its ack, status and result join the submitter's trace on any replica.
ALTER TABLE jobs ADD COLUMN traceparent TEXT NOT NULL DEFAULT '';
