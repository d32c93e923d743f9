package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/internal/humantime"
	"github.com/tetherhq/tether/registry"
)

// Remote's watch, and what it knows of its connection: a watch that
// breaks says so and reconnects with backoff from the last position it
// delivered.

// Backoff of the watch's reconnection: the first retry after half a
// second, each next one twice as late, at most every 15 s.
const (
	ReconnectFirst = 500 * time.Millisecond
	ReconnectMax   = 15 * time.Second
)

// ConnState is what a Remote knows of its connection to the server: the
// console's header shows it, and its live marks follow it.
type ConnState struct {
	LostAt  time.Time // when the watch broke (server's clock); zero: connected
	RetryAt time.Time // the next attempt
	Err     error     // why the last attempt failed
	// Back: how long the connection was lost, when it came back and no one
	// has said so yet (Reconnected takes it).
	Back time.Duration
}

// remoteConn is the Remote's connection state, shared by the watch's
// goroutine (which writes it) and its readers.
type remoteConn struct {
	mu    sync.Mutex
	state ConnState
	// after waits between attempts (SetReconnectWait).
	after func(time.Duration) <-chan time.Time
}

// Connection is the connection's state now.
func (r *Remote) Connection() ConnState {
	r.conn.mu.Lock()
	defer r.conn.mu.Unlock()
	return r.conn.state
}

// Reconnected reports, once, that the connection came back and how long it
// was lost.
func (r *Remote) Reconnected() (time.Duration, bool) {
	r.conn.mu.Lock()
	defer r.conn.mu.Unlock()
	d := r.conn.state.Back
	r.conn.state.Back = 0
	return d, d > 0
}

// SetReconnectWait replaces how the watch waits between attempts (tests
// retry at once). Call it before Watch.
func (r *Remote) SetReconnectWait(after func(time.Duration) <-chan time.Time) { r.conn.after = after }

func (r *Remote) setConn(f func(*ConnState)) {
	r.conn.mu.Lock()
	defer r.conn.mu.Unlock()
	f(&r.conn.state)
}

// unreachable reports the lost connection as the error of a call that
// failed meanwhile, so that no one presents what they hold as current.
func (r *Remote) unreachable(err error) error {
	if registry.ErrorCode(err) != registry.CodeUnavailable {
		return err
	}
	st := r.Connection()
	if st.LostAt.IsZero() {
		return err
	}
	return registry.Errorf(registry.CodeUnavailable, "the server is unreachable (connection lost %s ago); what is shown is from before",
		humantime.Duration(r.Now().Sub(st.LostAt).Round(time.Second)))
}

// watchKinds names the feed's entity kinds as GET /watch takes them.
var watchKinds = map[registry.EntityKind]string{
	registry.EntityCluster: "clusters", registry.EntityJob: "jobs", registry.EntityEvent: "events",
	registry.EntityAudit: "audit", registry.EntityRollout: "rollouts", registry.EntityToken: "tokens",
	registry.EntityCredential: "credentials",
}

// Watch streams the feed's changes, across lost connections: the channel
// closes only when ctx ends or the server refuses to go on (a revoked
// token).
func (r *Remote) Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error) {
	opts := adminclient.WatchOptions{Since: p.Since}
	for _, k := range p.Kinds {
		name, ok := watchKinds[k]
		if !ok {
			return nil, registry.Errorf(registry.CodeInvalid, "kind %q cannot be watched", k)
		}
		opts.Kinds = append(opts.Kinds, name)
	}
	// A lost connection is shown and resumed here (resume), rather than
	// retried silently by the client.
	var broke error
	opts.NoRetry = true
	opts.OnError = func(err error) { broke = err }
	in, err := r.c.Watch(ctx, opts)
	if err != nil {
		return nil, apiError(err)
	}
	r.setConn(func(s *ConnState) {
		if !s.LostAt.IsZero() {
			*s = ConnState{Back: max(r.Now().Sub(s.LostAt), time.Millisecond)}
		}
	})
	buf := p.Buffer
	if buf <= 0 {
		buf = 256
	}
	out := make(chan registry.WatchEvent, buf)
	go r.resume(ctx, opts, in, &broke, out)
	return out, nil
}

// watchEvent decodes a watch event's object into the registry's record.
func watchEvent(ev adminclient.WatchEvent) (registry.WatchEvent, error) {
	we := registry.WatchEvent{Type: registry.WatchEventType(ev.Type), Seq: ev.Seq, Kind: registry.EntityKind(ev.Kind),
		ID: ev.ID, ClusterID: ev.ClusterID}
	if len(ev.Object) == 0 || string(ev.Object) == "null" {
		return we, nil
	}
	var dst any
	switch we.Kind {
	case registry.EntityCluster:
		we.Cluster = &registry.Cluster{}
		dst = we.Cluster
	case registry.EntityJob:
		we.Job = &registry.Job{}
		dst = we.Job
	case registry.EntityEvent:
		we.Event = &registry.Event{}
		dst = we.Event
	case registry.EntityAudit:
		we.Audit = &registry.AuditEntry{}
		dst = we.Audit
	case registry.EntityRollout:
		we.Rollout = &registry.Rollout{}
		dst = we.Rollout
	case registry.EntityToken:
		we.Token = &registry.RegistrationToken{}
		dst = we.Token
	case registry.EntityCredential:
		we.Credential = &registry.Credential{}
		dst = we.Credential
	default:
		return we, fmt.Errorf("unknown kind %q", ev.Kind)
	}
	return we, json.Unmarshal(ev.Object, dst)
}

// resume keeps a watch going across lost connections: when the stream
// breaks it says so (ConnState), and reconnects with backoff from the last
// position it delivered, so that no change is lost or repeated. Only a
// refusal that asking again will not change (a 4xx: a revoked token) ends
// it, and then the channel closes.
func (r *Remote) resume(ctx context.Context, opts adminclient.WatchOptions, in <-chan adminclient.WatchEvent, broke *error, out chan<- registry.WatchEvent) {
	defer close(out)
	after := r.conn.after
	if after == nil {
		after = time.After
	}
	since := opts.Since
	for {
		for ev := range in {
			if ev.Seq > 0 && ev.Type != string(registry.WatchReset) {
				since = ev.Seq
			}
			we, err := watchEvent(ev)
			if err != nil {
				continue // an object this client does not know; the next snapshot has the rest
			}
			select {
			case out <- we:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		lostAt := r.Now()
		err := *broke
		delay := ReconnectFirst
		for {
			r.setConn(func(s *ConnState) {
				if s.LostAt.IsZero() {
					s.LostAt = lostAt
				}
				s.RetryAt, s.Err = r.Now().Add(delay), err
			})
			select {
			case <-ctx.Done():
				return
			case <-after(delay):
			}
			var next error
			opts.Since = since
			opts.OnError = func(err error) { next = err }
			broke = &next
			in, err = r.c.Watch(ctx, opts)
			if err == nil {
				break
			}
			if adminclient.IsRefused(err) {
				r.setConn(func(s *ConnState) { s.Err = err })
				return
			}
			delay = min(2*delay, ReconnectMax)
		}
		r.setConn(func(s *ConnState) {
			*s = ConnState{Back: max(r.Now().Sub(s.LostAt), time.Millisecond)}
		})
	}
}
