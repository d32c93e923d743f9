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

func (s *Server) adminListEvents(c *call) error {
	q := c.r.URL.Query()
	limit, cursor, err := pageParams(q)
	if err != nil {
		return err
	}
	p := registry.EventListParams{Kinds: splitList(q["kind"]), Limit: limit + 1}
	switch v := q.Get("falseOnly"); v {
	case "", "false", "0":
	case "true", "1":
		p.FalseOnly = true
	default:
		return errf(registry.CodeInvalid, "falseOnly %q is not true or false", truncate(v, 100))
	}
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
	events, err := s.reg.ListEvents(c.ctx, p)
	if err != nil {
		return err
	}
	out := list[registry.Event]{Items: events}
	if len(events) > limit {
		out.Items, out.NextCursor = events[:limit], encodeCursor(idCursor{events[limit-1].ID})
	}
	return writeJSON(c.w, http.StatusOK, out)
}

func (s *Server) adminListAudit(c *call) error {
	q := c.r.URL.Query()
	limit, cursor, err := pageParams(q)
	if err != nil {
		return err
	}
	p := registry.AuditListParams{Action: q.Get("action"), Limit: limit + 1}
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
	entries, err := s.reg.ListAudit(c.ctx, p)
	if err != nil {
		return err
	}
	out := list[registry.AuditEntry]{Items: entries}
	if len(entries) > limit {
		out.Items, out.NextCursor = entries[:limit], encodeCursor(idCursor{entries[limit-1].ID})
	}
	return writeJSON(c.w, http.StatusOK, out)
}
