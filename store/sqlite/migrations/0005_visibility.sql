-- The visibility window (issue 11): a queued job handed to one poll is hidden
-- from the other polls of its cluster until visible_after, unless acked, so
-- that two pollers of one cluster (two operator replicas, a rolling update)
-- do not both receive it. NULL: visible.
ALTER TABLE jobs ADD COLUMN visible_after INTEGER;
