package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The admin API's rollouts, events, audit trail, statistics and admin tokens.

// rolloutCursor is the last rollout a page held: rollouts are listed
// newest first.
type rolloutCursor struct {
	CreatedAt time.Time `json:"t"`
	ID        string    `json:"i"`
}

func (s *Server) adminListRollouts(c *call) error {
	q := c.r.URL.Query()
	limit, cursor, err := pageParams(q)
	if err != nil {
		return err
	}
	var p registry.RolloutListParams
	for _, st := range splitList(q["state"]) {
		state := registry.RolloutState(st)
		if !slices.Contains(registry.RolloutStates, state) {
			return errf(registry.CodeInvalid, "state %q is not a rollout state (running, paused, halted, completed, aborted)", truncate(st, 100))
		}
		p.States = append(p.States, state)
	}
	if cursor != "" {
		var after rolloutCursor
		if err := decodeCursor(cursor, &after); err != nil {
			return err
		}
		p.After = &registry.RolloutCursor{CreatedAt: after.CreatedAt, ID: after.ID}
	}
	p.Limit = limit + 1 // one more tells whether there is a next page
	rollouts, err := s.reg.ListRollouts(c.ctx, p)
	if err != nil {
		return err
	}
	out := list[registry.Rollout]{Items: rollouts}
	if len(rollouts) > limit {
		last := &rollouts[limit-1]
		out.Items, out.NextCursor = rollouts[:limit], encodeCursor(rolloutCursor{last.CreatedAt, last.ID})
	}
	return writeJSON(c.w, http.StatusOK, out)
}

// rolloutBody is a rollout's creation.
type rolloutBody struct {
	Name         string           `json:"name"`
	Selector     string           `json:"selector"`
	Kind         registry.JobKind `json:"kind"`
	Payload      json.RawMessage  `json:"payload"`
	MaxParallel  int              `json:"maxParallel"`
	MaxFailures  int              `json:"maxFailures"`
	PauseBetween string           `json:"pauseBetween"`
	Order        string           `json:"order"`
	DryRun       bool             `json:"dryRun"`
}

func (s *Server) adminCreateRollout(c *call) error {
	var b rolloutBody
	if err := decodeAdmin(c, &b, true); err != nil {
		return err
	}
	// No pause between waves is the default, so an explicit 0 says the same.
	var pause time.Duration
	if d, zeroErr := time.ParseDuration(strings.TrimSpace(b.PauseBetween)); zeroErr != nil || d != 0 {
		var err error
		if pause, err = parseDurationField("pauseBetween", b.PauseBetween); err != nil {
			return err
		}
	}
	if b.Kind == "" {
		return errf(registry.CodeInvalid, "field kind is required: apply, delete or intent")
	}
	ro, err := s.reg.CreateRollout(c.ctx, registry.RolloutSpec{
		Name: b.Name, Selector: b.Selector, Kind: b.Kind, Payload: b.Payload, MaxParallel: b.MaxParallel,
		MaxFailures: b.MaxFailures, PauseBetween: pause, Order: b.Order, DryRun: b.DryRun,
	})
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if b.DryRun {
		status = http.StatusOK
	}
	return writeJSON(c.w, status, ro)
}

func (s *Server) adminGetRollout(c *call) error {
	ro, err := s.reg.GetRollout(c.ctx, c.params["r"])
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, ro)
}

func (s *Server) adminRolloutAction(act func(*registry.Registry, context.Context, string, string) (*registry.Rollout, error)) func(*call) error {
	return func(c *call) error {
		reason, err := readReason(c)
		if err != nil {
			return err
		}
		ro, err := act(s.reg, c.ctx, c.params["r"], reason)
		if err != nil {
			return err
		}
		return writeJSON(c.w, http.StatusOK, ro)
	}
}

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

// statsJSON counts jobs per state, overall and per cluster.
type statsJSON struct {
	Jobs     map[registry.JobState]int64            `json:"jobs"`
	Clusters map[string]map[registry.JobState]int64 `json:"clusters"`
	At       time.Time                              `json:"at"`
	// FeedSeq is the change feed's position when the counts were read: a
	// watch from ?since=FeedSeq misses no change made after them.
	FeedSeq int64 `json:"feedSeq"`
}

func (s *Server) adminStats(c *call) error {
	seq, err := s.reg.LatestSeq(c.ctx)
	if err != nil {
		return err
	}
	counts, err := s.reg.JobCounts(c.ctx)
	if err != nil {
		return err
	}
	out := statsJSON{FeedSeq: seq, Jobs: map[registry.JobState]int64{}, Clusters: map[string]map[registry.JobState]int64{}, At: s.reg.Now()}
	for _, st := range registry.JobStates {
		out.Jobs[st] = 0
	}
	for _, n := range counts {
		out.Jobs[n.State] += n.Count
		if out.Clusters[n.ClusterID] == nil {
			out.Clusters[n.ClusterID] = map[registry.JobState]int64{}
		}
		out.Clusters[n.ClusterID][n.State] += n.Count
	}
	return writeJSON(c.w, http.StatusOK, out)
}

func (s *Server) adminListAdminTokens(c *call) error {
	tokens, err := s.reg.ListAdminTokens(c.ctx)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, list[registry.AdminToken]{Items: tokens})
}

func (s *Server) adminCreateAdminToken(c *call) error {
	var b struct {
		Name    string        `json:"name"`
		Role    registry.Role `json:"role"`
		Org     string        `json:"org"`
		Expires string        `json:"expires"`
		SSHKeys []string      `json:"sshKeys"`
	}
	if err := decodeAdmin(c, &b, true); err != nil {
		return err
	}
	ttl, err := parseDurationField("expires", b.Expires)
	if err != nil {
		return err
	}
	issued, err := s.reg.IssueAdminToken(c.ctx, registry.AdminTokenSpec{Name: b.Name, Role: b.Role, Org: b.Org, TTL: ttl, SSHKeys: b.SSHKeys})
	if err != nil {
		return err
	}
	t := issued.Token
	keys := t.SSHKeys
	if keys == nil {
		keys = []registry.SSHKey{}
	}
	out := map[string]any{"id": t.ID, "name": t.Name, "role": t.Role, "org": t.Org, "token": issued.Secret.Reveal(), "expiresAt": nil, "sshKeys": keys}
	if !t.ExpiresAt.IsZero() {
		out["expiresAt"] = t.ExpiresAt
	}
	return writeJSON(c.w, http.StatusCreated, out)
}

// adminEditAdminToken changes an admin identity: its SSH keys (replaced
// by the list given; an empty list takes them all away).
func (s *Server) adminEditAdminToken(c *call) error {
	var b struct {
		SSHKeys *[]string `json:"sshKeys"`
	}
	var err error
	if isMergePatch(c.r.Header.Get("Content-Type")) {
		err = decodeAdminBody(c.body, &b, true)
	} else {
		err = decodeAdmin(c, &b, true)
	}
	if err != nil {
		return err
	}
	if patchIsNull(c.body, "sshKeys") {
		b.SSHKeys = &[]string{} // a merge patch's null removes them
	}
	if b.SSHKeys == nil {
		return errf(registry.CodeInvalid, "nothing to change: give sshKeys, the admin identity's SSH public keys in authorized_keys form ([] takes them all away)")
	}
	t, err := s.reg.SetAdminTokenSSHKeys(c.ctx, c.params["name"], *b.SSHKeys)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, t)
}

func (s *Server) adminRevokeAdminToken(c *call) error {
	reason, err := queryOrBodyReason(c)
	if err != nil {
		return err
	}
	t, err := s.reg.RevokeAdminToken(c.ctx, c.params["name"], reason)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, t)
}

// adminListTokens lists registration tokens (never their secrets): one
// cluster's, or with no cluster in the path every visible cluster's.
func (s *Server) adminListTokens(c *call) error {
	tokens, err := s.reg.ListTokens(c.ctx, c.params["c"])
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, list[registry.RegistrationToken]{Items: tokens})
}

// whoamiJSON says who the caller's token is: what a client shows and what
// it hides (a viewer's console hides every action).
type whoamiJSON struct {
	Actor string        `json:"actor"`
	Name  string        `json:"name"`
	Role  registry.Role `json:"role"`
	Org   string        `json:"org,omitempty"`
}

func (s *Server) adminWhoami(c *call) error {
	a := registry.ActorFrom(c.ctx)
	role := a.Role
	if role == "" {
		role = registry.RoleAdmin
	}
	return writeJSON(c.w, http.StatusOK, whoamiJSON{Actor: a.String(), Name: a.Name, Role: role, Org: a.Org})
}
