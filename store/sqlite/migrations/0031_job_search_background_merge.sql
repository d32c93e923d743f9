-- Every writer batch that inserts jobs adds a segment to the search index
-- (0029), and FTS5 merged the segments as they came ('automerge', 4 a
-- level) inside the batch that wrote them: over a million jobs that merging
-- took about a sixth of the process's CPU in the agents' lifecycle, and grew
-- with the index. Automatic merging is now off; tether serve merges the
-- index in the background, in bounded steps ('merge', registry.SearchMerger).
-- FTS5 still merges a level in the writer once it holds 16 segments
-- ('crisismerge'), so an index no one merges stays within a few dozen.
INSERT INTO job_search (job_search, rank) VALUES ('automerge', 0);
