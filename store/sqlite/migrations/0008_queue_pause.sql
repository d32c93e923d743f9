-- A cluster's queue can be paused (issue 12): its agent's polls get no job,
-- submissions still queue, the agent stays registered and heartbeating.
ALTER TABLE clusters ADD COLUMN paused_at INTEGER;
ALTER TABLE clusters ADD COLUMN pause_reason TEXT NOT NULL DEFAULT '';
