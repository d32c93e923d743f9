package registry

import "context"

// SearchIndexStore is the part of Store that keeps the job search index
// (the console's word filter, JobListParams.Search) compact in the
// background, off the path of the writes that fill it.
type SearchIndexStore interface {
	// SearchIndexMerge does one bounded step of merging the search index:
	// it writes up to about pages pages of merged index, in a transaction
	// of its own, and says whether there was anything to merge. A store
	// whose index keeps itself compact (PostgreSQL's) has nothing to do.
	SearchIndexMerge(ctx context.Context, pages int) (bool, error)
}
