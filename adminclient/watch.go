package adminclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// WatchEvent is one event of GET /watch: an upsert or delete of one
// object, "end_of_snapshot" once the current state has been sent, or
// "reset" when the watch fell behind the feed's retention, or resumed from
// a position the feed never reached (a new snapshot follows). Object is the JSON of the cluster, job, event, audit entry,
// rollout, token or credential, as the API's other answers show it.
type WatchEvent struct {
	Type      string          `json:"type"`
	Seq       int64           `json:"seq,omitempty"`
	Kind      string          `json:"kind,omitempty"`
	ID        string          `json:"id,omitempty"`
	ClusterID string          `json:"clusterId,omitempty"`
	Object    json.RawMessage `json:"object,omitempty"`
}

// WatchOptions says what to watch and from where.
type WatchOptions struct {
	// Kinds: clusters, jobs, events, audit, rollouts, tokens, credentials;
	// empty watches all.
	Kinds []string
	// Since is the feed position to continue from (a WatchEvent's Seq, or
	// Stats' FeedSeq); zero starts with a snapshot.
	Since int64
	// Retry is the pause before reconnecting after the stream broke
	// (default 2 s).
	Retry time.Duration
	// OnError, when set, hears each failure that made the watch reconnect.
	OnError func(error)
	// NoRetry ends the watch at the first break instead of reconnecting:
	// OnError hears why, then the channel closes. For a caller that shows
	// the lost connection and reconnects itself (from the last Seq it saw).
	NoRetry bool
}

// Watch streams changes until ctx ends. When the stream breaks (a restart,
// a proxy's timeout, another replica taking over) it reconnects by itself
// with Last-Event-ID, so no change is lost or repeated; only an answer that
// will not change by asking again (a 4xx: a bad kind, a revoked token)
// ends it, and the first connection's refusal is returned at once. The
// channel closes when the watch ends.
func (c *Client) Watch(ctx context.Context, opts WatchOptions) (<-chan WatchEvent, error) {
	if opts.Retry <= 0 {
		opts.Retry = 2 * time.Second
	}
	resp, err := c.openWatch(ctx, opts.Kinds, opts.Since)
	if err != nil {
		return nil, err
	}
	out := make(chan WatchEvent, 64)
	go func() {
		defer close(out)
		since := opts.Since
		for {
			last, err := readWatch(ctx, resp, out)
			resp.Body.Close()
			if last > 0 {
				since = last
			}
			if ctx.Err() != nil {
				return
			}
			if opts.OnError != nil && err != nil {
				opts.OnError(err)
			}
			if opts.NoRetry {
				return
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(opts.Retry):
				}
				resp, err = c.openWatch(ctx, opts.Kinds, since)
				if IsRefused(err) {
					if opts.OnError != nil {
						opts.OnError(err)
					}
					return
				}
				if err == nil {
					break
				}
				if opts.OnError != nil {
					opts.OnError(err)
				}
			}
		}
	}()
	return out, nil
}

func (c *Client) openWatch(ctx context.Context, kinds []string, since int64) (*http.Response, error) {
	var resp *http.Response
	q := url.Values{}
	if len(kinds) > 0 {
		q.Set("kinds", strings.Join(kinds, ","))
	}
	h := http.Header{"Accept": {"text/event-stream"}}
	if since > 0 {
		h.Set("Last-Event-ID", strconv.FormatInt(since, 10))
	}
	err := c.doStream(ctx, request{method: http.MethodGet, path: "/watch", query: q, header: h}, &resp)
	return resp, err
}

// readWatch reads server-sent events until the stream ends, and returns the
// last change's position.
func readWatch(ctx context.Context, resp *http.Response, out chan<- WatchEvent) (last int64, err error) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // one line holds one object
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() == 0 {
				continue
			}
			var ev WatchEvent
			if err := json.Unmarshal([]byte(data.String()), &ev); err != nil {
				return last, fmt.Errorf("tether sent a watch event that is not JSON: %w", err)
			}
			data.Reset()
			select {
			case out <- ev:
			case <-ctx.Done():
				return last, ctx.Err()
			}
			if ev.Seq > 0 && ev.Type != "reset" {
				last = ev.Seq
			}
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		// id:, event:, retry: and comments carry nothing the data does not.
	}
	if err := sc.Err(); err != nil {
		return last, err
	}
	return last, errors.New("the watch stream ended")
}
