package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The events and audit feeds and the rollout list: pages by id, newest
// first.

// FeedQuery pages the events or the audit trail by id: BeforeID for older
// entries, AfterID for newer ones (zero: from the newest).
type FeedQuery struct {
	Cluster  string // id or name
	BeforeID int64
	AfterID  int64
	Limit    int
	Cursor   string
}

func (q FeedQuery) values() url.Values {
	v := pageQuery(q.Limit, q.Cursor)
	setIf(v, "cluster", q.Cluster)
	if q.BeforeID > 0 {
		v.Set("beforeId", strconv.FormatInt(q.BeforeID, 10))
	}
	if q.AfterID > 0 {
		v.Set("afterId", strconv.FormatInt(q.AfterID, 10))
	}
	return v
}

// Event is a Kubernetes event an agent reported.
type Event struct {
	ID          int64  `json:"id"`
	ClusterID   string `json:"clusterId"`
	Kind        string `json:"kind"`
	ResourceRef struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"resourceRef"`
	Message    string          `json:"message"`
	Timestamp  time.Time       `json:"timestamp"`
	ReceivedAt time.Time       `json:"receivedAt"`
	Body       json.RawMessage `json:"body"`
}

// EventQuery filters ListEvents.
type EventQuery struct {
	FeedQuery
	Kinds []string // event kinds (Warning, Normal...)
	// FalseOnly keeps the events with a condition whose status is False.
	FalseOnly bool
}

// ListEvents returns a page of the events, newest first.
func (c *Client) ListEvents(ctx context.Context, q EventQuery, opts ...CallOption) (*Page[Event], error) {
	v := q.values()
	if len(q.Kinds) > 0 {
		v.Set("kind", strings.Join(q.Kinds, ","))
	}
	if q.FalseOnly {
		v.Set("falseOnly", "true")
	}
	var out Page[Event]
	return &out, c.call(ctx, request{method: http.MethodGet, path: "/events", query: v, out: &out}, opts)
}

// AuditQuery filters QueryAudit.
type AuditQuery struct {
	FeedQuery
	Action string // a prefix: "job.", "credential.revoke"
}

// QueryAudit returns a page of the audit trail, newest first.
func (c *Client) QueryAudit(ctx context.Context, q AuditQuery, opts ...CallOption) (*Page[AuditEntry], error) {
	v := q.values()
	setIf(v, "action", q.Action)
	var out Page[AuditEntry]
	return &out, c.call(ctx, request{method: http.MethodGet, path: "/audit", query: v, out: &out}, opts)
}

// ListAudit returns a page of the audit trail, newest first; action is a
// prefix ("job.", "credential.revoke").
func (c *Client) ListAudit(ctx context.Context, cluster, action string, limit int, cursor string, opts ...CallOption) (*Page[AuditEntry], error) {
	return c.QueryAudit(ctx, AuditQuery{FeedQuery: FeedQuery{Cluster: cluster, Limit: limit, Cursor: cursor}, Action: action}, opts...)
}

// RolloutQuery filters ListRollouts.
type RolloutQuery struct {
	States []string // running, paused, succeeded, failed, aborted...
	Limit  int
	Cursor string
}

// ListRollouts returns a page of the rollouts, newest first.
func (c *Client) ListRollouts(ctx context.Context, q RolloutQuery, opts ...CallOption) (*Page[Rollout], error) {
	v := pageQuery(q.Limit, q.Cursor)
	if len(q.States) > 0 {
		v.Set("state", strings.Join(q.States, ","))
	}
	var out Page[Rollout]
	return &out, c.call(ctx, request{method: http.MethodGet, path: "/rollouts", query: v, out: &out}, opts)
}
