package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// watchHeartbeat is how often an idle watch stream sends a comment, so that
// proxies and load balancers do not close it for silence.
const watchHeartbeat = 15 * time.Second

// watchKinds maps the kinds a client names to the feed's entity kinds.
var watchKinds = map[string]registry.EntityKind{
	"clusters": registry.EntityCluster, "jobs": registry.EntityJob, "events": registry.EntityEvent,
	"audit": registry.EntityAudit, "rollouts": registry.EntityRollout,
	"tokens": registry.EntityToken, "credentials": registry.EntityCredential,
}

// watchEventJSON is one server-sent event's data.
type watchEventJSON struct {
	Type      registry.WatchEventType `json:"type"`
	Seq       int64                   `json:"seq,omitempty"`
	Kind      registry.EntityKind     `json:"kind,omitempty"`
	ID        string                  `json:"id,omitempty"`
	ClusterID string                  `json:"clusterId,omitempty"`
	Object    any                     `json:"object,omitempty"`
}

// adminWatch streams changes as server-sent events with WatchList semantics:
// the current state as upserts, one end_of_snapshot, then upserts and deletes
// as they are committed, each change with "id: <sequence>". A client that
// reconnects with Last-Event-ID (or ?since=) resumes after that change
// without losing or repeating one; one that fell behind the feed's retention
// gets a reset event and a new snapshot.
func (s *Server) adminWatch(c *call) error {
	q := c.r.URL.Query()
	var p registry.WatchParams
	for _, k := range splitList(q["kinds"]) {
		kind, ok := watchKinds[k]
		if !ok {
			return errf(registry.CodeInvalid, "kind %q cannot be watched; use clusters, jobs, events, audit, rollouts, tokens or credentials", k)
		}
		p.Kinds = append(p.Kinds, kind)
	}
	since := c.r.Header.Get("Last-Event-ID")
	if since == "" {
		since = q.Get("since")
	}
	if since != "" {
		n, err := strconv.ParseInt(since, 10, 64)
		if err != nil || n < 1 {
			return errf(registry.CodeInvalid, "resume position %q is not an event id this server sent", since)
		}
		p.Since = n
	}
	// The stream ends as soon as its token stops working (revoked by anyone,
	// on any replica, or expired), even while nothing changes.
	held, release := s.reg.WhileAdminTokenWorks(c.ctx, bearerOf(c.r))
	defer release()
	events, err := s.reg.Watch(held, p)
	if err != nil {
		return err
	}
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not hold the stream back
	c.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(c.raw)
	if _, err := fmt.Fprint(c.w, "retry: 2000\n\n"); err != nil {
		return nil
	}
	_ = rc.Flush()
	beat := time.NewTicker(watchHeartbeat)
	defer beat.Stop()
	// The token is also checked again before every event and keepalive:
	// this stream may read a change made after the revocation before the
	// revocation has ended held. A client's reconnection is then refused
	// with 401.
	stillValid := func() bool { return s.tokenStillWorks(c) == nil }
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil // the client went away, its token stopped working, or the registry closed
			}
			if !stillValid() {
				return nil
			}
			if err := writeWatchEvent(c.w, ev); err != nil {
				return nil
			}
			// Flush once the channel is drained: a burst goes out together.
			if len(events) == 0 {
				if rc.Flush() != nil {
					return nil
				}
			}
		case <-beat.C:
			if !stillValid() {
				return nil
			}
			if _, err := fmt.Fprint(c.w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-s.draining:
			return nil // shutting down: the client reconnects to another replica with Last-Event-ID
		}
	}
}

func writeWatchEvent(w http.ResponseWriter, ev registry.WatchEvent) error {
	out := watchEventJSON{Type: ev.Type, Seq: ev.Seq, Kind: ev.Kind, ID: ev.ID, ClusterID: ev.ClusterID}
	switch {
	case ev.Cluster != nil:
		out.Object = ev.Cluster
	case ev.Job != nil:
		out.Object = ev.Job
	case ev.Event != nil:
		out.Object = ev.Event
	case ev.Audit != nil:
		out.Object = ev.Audit
	case ev.Rollout != nil:
		out.Object = ev.Rollout
	case ev.Token != nil:
		out.Object = ev.Token
	case ev.Credential != nil:
		out.Object = ev.Credential
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	data = registry.ValidUTF8(data) // as writeJSON
	var b strings.Builder
	// Snapshot upserts have no position of their own: a client resuming
	// mid-snapshot starts a new one. Every later event carries its own.
	if ev.Seq > 0 && ev.Type != registry.WatchReset {
		fmt.Fprintf(&b, "id: %d\n", ev.Seq)
	}
	// The event name is the data's type, so that a client listening for an
	// event name and one reading the type agree.
	fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev.Type, data)
	_, err = fmt.Fprint(w, b.String())
	return err
}
