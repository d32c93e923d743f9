-- The search index (0023) was filled by a trigger on every job insert. FTS5
-- writes the entries it holds as a new segment of the index at every later
-- statement of the transaction (each statement's savepoint flushes them), so
-- a batch of the writer holding K submissions among the agents' writes wrote
-- K one-job segments, and the index then merged them. The store now inserts
-- a batch's new jobs into the index in one statement just before the batch
-- commits (job_search.go): a job is still searchable from the commit that
-- inserts it. The update and delete triggers stay.
DROP TRIGGER job_search_insert;
