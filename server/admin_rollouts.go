package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The admin API's rollouts: list, create, get, and the actions that move one.

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
