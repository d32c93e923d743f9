package server

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/tetherhq/tether/registry"
)

// The admin API's feeds: the events agents sent and the audit trail, both
// paged by id, newest first.

// idCursor pages lists ordered by a numeric id, newest first.
type idCursor struct {
	ID int64 `json:"i"`
}

// idRange reads ?beforeId= and ?afterId= (entries are numbered in the order
// they were recorded): what a client that keeps a live list needs to load
// the next older page or what came since. beforeId and a cursor are two
// ways to say the same thing: only one may be given.
func idRange(q url.Values, cursor string) (before, after int64, err error) {
	for name, dst := range map[string]*int64{"beforeId": &before, "afterId": &after} {
		if v := q.Get(name); v != "" {
			if *dst, err = strconv.ParseInt(v, 10, 64); err != nil || *dst < 1 {
				return 0, 0, errf(registry.CodeInvalid, "%s %q must be a positive whole number (an entry's id)", name, truncate(v, 100))
			}
		}
	}
	if before > 0 && cursor != "" {
		return 0, 0, errf(registry.CodeInvalid, "give beforeId or cursor, not both")
	}
	return before, after, nil
}

// idPage is the one reader of an id-paged feed (events, audit): the page
// bounds from ?beforeId=, ?afterId= or the cursor, ?cluster= resolved to its
// id, and the next cursor from the last entry shown. read lists with the
// bounds filled in; id names an entry's id.
type idPage struct {
	Limit     int
	BeforeID  int64
	AfterID   int64
	ClusterID string
}

func pageByID[T any](s *Server, c *call, read func(p idPage) ([]T, error), id func(T) int64) error {
	q := c.r.URL.Query()
	limit, cursor, err := pageParams(q)
	if err != nil {
		return err
	}
	p := idPage{Limit: limit + 1}
	if p.BeforeID, p.AfterID, err = idRange(q, cursor); err != nil {
		return err
	}
	if ref := q.Get("cluster"); ref != "" {
		cl, err := s.reg.GetCluster(c.ctx, ref)
		if err != nil {
			return err
		}
		p.ClusterID = cl.ID
	}
	if cursor != "" {
		var after idCursor
		if err := decodeCursor(cursor, &after); err != nil {
			return err
		}
		p.BeforeID = after.ID
	}
	items, err := read(p)
	if err != nil {
		return err
	}
	out := list[T]{Items: items}
	if len(items) > limit {
		out.Items, out.NextCursor = items[:limit], encodeCursor(idCursor{id(items[limit-1])})
	}
	return writeJSON(c.w, http.StatusOK, out)
}

func (s *Server) adminListEvents(c *call) error {
	q := c.r.URL.Query()
	falseOnly := false
	switch v := q.Get("falseOnly"); v {
	case "", "false", "0":
	case "true", "1":
		falseOnly = true
	default:
		return errf(registry.CodeInvalid, "falseOnly %q is not true or false", truncate(v, 100))
	}
	kinds := splitList(q["kind"])
	return pageByID(s, c, func(p idPage) ([]registry.Event, error) {
		return s.reg.ListEvents(c.ctx, registry.EventListParams{
			Kinds: kinds, FalseOnly: falseOnly, ClusterID: p.ClusterID,
			BeforeID: p.BeforeID, AfterID: p.AfterID, Limit: p.Limit,
		})
	}, func(e registry.Event) int64 { return e.ID })
}

func (s *Server) adminListAudit(c *call) error {
	action := c.r.URL.Query().Get("action")
	return pageByID(s, c, func(p idPage) ([]registry.AuditEntry, error) {
		return s.reg.ListAudit(c.ctx, registry.AuditListParams{
			Action: action, ClusterID: p.ClusterID,
			BeforeID: p.BeforeID, AfterID: p.AfterID, Limit: p.Limit,
		})
	}, func(e registry.AuditEntry) int64 { return e.ID })
}
