-- The console's word filter (JobListParams.Search) asks, for each word,
-- which jobs hold it anywhere in their id, idempotency key, target
-- namespace or name, error or kind: a LIKE '%word%' that no B-tree serves,
-- so a rare word read every row (3.2 s over a million jobs). job_search is a
-- trigram index of those columns: a word of 3 or more characters finds its
-- candidate jobs by their rowid in milliseconds. It only narrows the search:
-- the store still checks each candidate with the LIKE (the trigram tokenizer
-- folds non-ASCII case too, where LIKE folds ASCII only), and words under 3
-- characters, which a trigram index cannot serve, fall back to the scan.
--
-- Contentless (the text lives in jobs): the index stores trigrams and
-- rowids only. contentless_delete lets the triggers remove a job's entry
-- by rowid. A jobs rowid is stable: VACUUM and VACUUM INTO (backups) keep
-- it, as they keep every rowid table's.
CREATE VIRTUAL TABLE job_search USING fts5(
    id, idempotency_key, target_namespace, target_name, error, kind,
    content = '', contentless_delete = 1, tokenize = 'trigram'
);

-- Kept in the transaction of every job write: a job is searchable from the
-- statement that inserts it, and its error from the one that sets it.
CREATE TRIGGER job_search_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_search (rowid, id, idempotency_key, target_namespace, target_name, error, kind)
    VALUES (new.rowid, new.id, new.idempotency_key, new.target_namespace, new.target_name, new.error, new.kind);
END;
CREATE TRIGGER job_search_delete AFTER DELETE ON jobs BEGIN
    DELETE FROM job_search WHERE rowid = old.rowid;
END;
CREATE TRIGGER job_search_update AFTER UPDATE OF id, idempotency_key, target_namespace, target_name, error, kind ON jobs
WHEN old.id IS NOT new.id OR old.idempotency_key IS NOT new.idempotency_key OR old.target_namespace IS NOT new.target_namespace
    OR old.target_name IS NOT new.target_name OR old.error IS NOT new.error OR old.kind IS NOT new.kind BEGIN
    DELETE FROM job_search WHERE rowid = old.rowid;
    INSERT INTO job_search (rowid, id, idempotency_key, target_namespace, target_name, error, kind)
    VALUES (new.rowid, new.id, new.idempotency_key, new.target_namespace, new.target_name, new.error, new.kind);
END;

-- The jobs already there: about 15 s and 140 MB per million jobs.
INSERT INTO job_search (rowid, id, idempotency_key, target_namespace, target_name, error, kind)
SELECT rowid, id, idempotency_key, target_namespace, target_name, error, kind FROM jobs;
