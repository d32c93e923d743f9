package admin

import (
	"context"
	"slices"

	"github.com/tetherhq/tether/registry"
)

// Feed is one of tether's id-paged feeds, the events agents report or the
// audit trail, with its filters: the one reader the CLI's events and audit
// commands (their --follow catch-up) and the console's live lists page it
// with.
type Feed[T any] struct {
	list func(ctx context.Context, before, after int64, limit int) ([]T, error)
	id   func(*T) int64
}

// Events is the events matching p (its ids and limit aside) as a Feed.
func Events(s Service, p registry.EventListParams) Feed[registry.Event] {
	return Feed[registry.Event]{
		list: func(ctx context.Context, before, after int64, limit int) ([]registry.Event, error) {
			p.BeforeID, p.AfterID, p.Limit = before, after, limit
			return s.ListEvents(ctx, p)
		},
		id: func(e *registry.Event) int64 { return e.ID },
	}
}

// Audit is the audit entries matching p (its ids and limit aside) as a
// Feed.
func Audit(s Service, p registry.AuditListParams) Feed[registry.AuditEntry] {
	return Feed[registry.AuditEntry]{
		list: func(ctx context.Context, before, after int64, limit int) ([]registry.AuditEntry, error) {
			p.BeforeID, p.AfterID, p.Limit = before, after, limit
			return s.ListAudit(ctx, p)
		},
		id: func(e *registry.AuditEntry) int64 { return e.ID },
	}
}

// Page is at most limit entries with ids below before and above after
// (0: no bound), newest first.
func (f Feed[T]) Page(ctx context.Context, before, after int64, limit int) ([]T, error) {
	return f.list(ctx, before, after, limit)
}

// Since is every entry with an id above after, oldest first, as a log
// reads: the pages are read from the newest back, page entries at a time.
func (f Feed[T]) Since(ctx context.Context, after int64, page int) ([]T, error) {
	var all []T
	var before int64
	for {
		got, err := f.list(ctx, before, after, page)
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
		if len(got) < page {
			break
		}
		before = f.id(&got[len(got)-1])
	}
	slices.Reverse(all)
	return all, nil
}
