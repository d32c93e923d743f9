package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// Remote is the Service over a tether's admin API. Every call is one or
// more requests with adminclient's typed methods, the answers decoded into
// the registry's records (adminclient.Into: the API serves them as JSON).
// What the token's role may not do the server refuses, and what its
// organization may not see does not exist.
type Remote struct {
	c *adminclient.Client
	// Role, Org and Actor are the token's, as GET /whoami answers them.
	Role  registry.Role
	Org   string
	Actor string
	skew  time.Duration // the server's clock minus this machine's
	conn  remoteConn    // the watch's connection
}

var _ Service = (*Remote)(nil)

// remotePage is the most a list request asks for: the API's largest page.
const remotePage = 1000

// NewRemote connects to the admin API and learns who the token is and how
// far this machine's clock is from the server's. An unreachable server or
// a refused token is an error here, before anything else is asked.
func NewRemote(ctx context.Context, c *adminclient.Client) (*Remote, error) {
	who, err := c.Whoami(ctx)
	if err != nil {
		return nil, apiError(err)
	}
	r := &Remote{c: c, Role: registry.Role(who.Role), Org: who.Org, Actor: who.Actor}
	// Ages and countdowns are measured against the server's clock, as a
	// local registry's are: learn how far this machine's is from it.
	sent := time.Now()
	stats, err := c.Stats(ctx)
	if err != nil {
		return nil, apiError(err)
	}
	rtt := time.Since(sent)
	r.skew = stats.At.Sub(sent.Add(rtt / 2))
	return r, nil
}

// ReadOnly reports whether the token may change nothing (a viewer's).
func (r *Remote) ReadOnly() bool { return r.Role == registry.RoleViewer }

// apiError is the one reverse mapping of the admin API's answers: a
// refusal becomes the registry error with the server's code and message
// (which the CLI prints and maps to exit codes, and the console shows, as
// they do locally); a server that cannot be reached is unavailable, said
// plainly; a canceled call stays ctx's error.
func apiError(err error) error {
	if err == nil {
		return nil
	}
	var ae *adminclient.Error
	if errors.As(err, &ae) {
		return registry.Errorf(registry.Code(ae.Code), "%s", ae.Message)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// The request's method and URL (url.Error's own text) say nothing the
	// caller did not know; the network's words say what went wrong.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return registry.Errorf(registry.CodeUnavailable, "cannot reach tether's admin API (%v): check the server's address, and that tether serve is running there", err)
}

// fail is apiError, said as a lost connection when the watch has lost it.
func (r *Remote) fail(err error) error { return r.unreachable(apiError(err)) }

// one returns v, or the call's error as a registry error.
func one[T any](r *Remote, v *T, err error) (*T, error) {
	if err != nil {
		return nil, r.fail(err)
	}
	return v, nil
}

// allPages follows a list's cursor to its end; fetch asks for one page
// with the option that decodes it. None is an empty list, not nil, as the
// registry answers.
func allPages[T any](r *Remote, fetch func(cursor string, into adminclient.CallOption) error) ([]T, error) {
	out := []T{}
	cursor := ""
	for {
		var page adminclient.Page[T]
		if err := fetch(cursor, adminclient.Into(&page)); err != nil {
			return nil, r.fail(err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// Now is the server's clock, as this machine's corrected by the difference
// measured at connection.
func (r *Remote) Now() time.Time { return time.Now().Add(r.skew) }

func (r *Remote) LatestSeq(ctx context.Context) (int64, error) {
	stats, err := r.c.Stats(ctx)
	if err != nil {
		return 0, r.fail(err)
	}
	return stats.FeedSeq, nil
}

// convert gives a registry value adminclient's shape of the same JSON (a
// request's body).
func convert[T any](v any) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, err
	}
	return out, json.Unmarshal(b, &out)
}
