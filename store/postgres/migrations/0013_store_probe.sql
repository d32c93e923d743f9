-- The readiness write probe (Store.CheckWritable): one row whose counter each
-- probe increments and commits. Only a committed write shows that the file,
-- its directory and the disk take writes; a read, or a transaction rolled
-- back, succeeds on a read-only or full database. It has no feed trigger: a
-- probe is no change anyone watches.
CREATE TABLE store_probe (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    probes BIGINT NOT NULL
);
INSERT INTO store_probe (id, probes) VALUES (1, 0);
