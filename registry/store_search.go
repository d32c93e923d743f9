package registry

import "context"

// SearchIndexStore is the part of Store that keeps the job search index
// (the console's word filter, JobListParams.Search) compact in the
// background, off the path of the writes that fill it.
type SearchIndexStore interface {
	// SearchIndexMerge does one bounded step of merging the search index:
	// it writes about pages pages of merged index, as one write, and says
	// whether there was anything to merge. A store whose index keeps
	// itself compact (PostgreSQL's) has nothing to do.
	SearchIndexMerge(ctx context.Context, pages int) (bool, error)
}
