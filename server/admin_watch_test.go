package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	id    string
	event string
	data  struct {
		Type      string          `json:"type"`
		Seq       int64           `json:"seq"`
		Kind      string          `json:"kind"`
		ID        string          `json:"id"`
		ClusterID string          `json:"clusterId"`
		Object    json.RawMessage `json:"object"`
	}
}

// watchStream is an open watch: events arrive on ch until it is closed.
type watchStream struct {
	ch     chan sseEvent
	cancel context.CancelFunc
	header http.Header
}

func (e *env) watch(t *testing.T, token, query, lastEventID string) *watchStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/api/admin/v1/watch"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("watch: %v", err)
	}
	if resp.StatusCode != 200 {
		cancel()
		t.Fatalf("watch: status %d", resp.StatusCode)
	}
	w := &watchStream{ch: make(chan sseEvent, 1000), cancel: cancel, header: resp.Header}
	t.Cleanup(cancel)
	go func() {
		defer close(w.ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.event != "" {
					w.ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data)
			}
		}
	}()
	return w
}

// next returns the next event, failing after patience.
func (w *watchStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-w.ch:
		if !ok {
			t.Fatal("the watch stream ended")
		}
		return ev
	case <-time.After(patience):
		t.Fatal("no watch event within patience")
	}
	return sseEvent{}
}

// untilSnapshotEnd collects snapshot upserts up to end-of-snapshot.
func (w *watchStream) untilSnapshotEnd(t *testing.T) (ids []string, end sseEvent) {
	t.Helper()
	for {
		ev := w.next(t)
		if ev.event == "end_of_snapshot" {
			return ids, ev
		}
		ids = append(ids, ev.data.ID)
	}
}

func TestAdminWatchSnapshotResumeAndScope(t *testing.T) {
	e := newEnv(t)
	mine, _ := e.cluster("acme-prod", func(s *registry.ClusterSpec) { s.Organization = "acme" })
	theirs, _ := e.cluster("globex-prod", func(s *registry.ClusterSpec) { s.Organization = "globex" })
	open := e.submit(mine.ID)
	root := e.adminToken("root", registry.RoleViewer, "")
	acme := e.adminToken("acme", registry.RoleViewer, "acme")

	w := e.watch(t, root, "?kinds=jobs", "")
	if ct := w.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	ids, end := w.untilSnapshotEnd(t)
	if strings.Join(ids, ",") != open || end.id == "" {
		t.Fatalf("snapshot %v, end id %q: want the open job, then end-of-snapshot with a position", ids, end.id)
	}
	first := e.submit(mine.ID)
	ev := w.next(t)
	if ev.event != "upsert" || ev.data.ID != first || ev.id == "" || ev.data.Kind != "job" {
		t.Fatalf("change = %+v", ev)
	}
	lastSeen := ev.id
	w.cancel()

	// Changes while disconnected arrive on resume, once each, in order.
	var missed []string
	for range 5 {
		missed = append(missed, e.submit(mine.ID))
	}
	r := e.watch(t, root, "?kinds=jobs", lastSeen)
	if ev := r.next(t); ev.event != "end_of_snapshot" || ev.id != lastSeen {
		t.Fatalf("resume begins with %+v, want end-of-snapshot at %s (no snapshot)", ev, lastSeen)
	}
	var got []string
	for len(got) < len(missed) {
		ev := r.next(t)
		if ev.event == "upsert" {
			got = append(got, ev.data.ID)
		}
	}
	if strings.Join(got, ",") != strings.Join(missed, ",") {
		t.Fatalf("resumed with %v, want %v", got, missed)
	}

	// An organization-scoped watcher sees nothing of another organization.
	s := e.watch(t, acme, "?kinds=jobs,clusters", "")
	snap, _ := s.untilSnapshotEnd(t)
	for _, id := range snap {
		if id == theirs.ID {
			t.Fatal("acme's snapshot holds globex's cluster")
		}
	}
	e.submit(theirs.ID)
	marker := e.submit(mine.ID)
	for {
		ev := s.next(t)
		if ev.data.ClusterID == theirs.ID {
			t.Fatalf("acme saw %+v", ev)
		}
		if ev.data.ID == marker {
			break
		}
	}

	bad := e.api("GET", "/watch?kinds=secrets", root, nil)
	wantAPIError(t, bad, 400, "invalid", "secrets")
}

func TestAdminWatchManyWatchers(t *testing.T) {
	e := newEnv(t)
	c, _ := e.cluster("prod")
	tok := e.adminToken("root", registry.RoleViewer, "")
	const n = 100
	streams := make([]*watchStream, n)
	for i := range streams {
		streams[i] = e.watch(t, tok, "?kinds=jobs", "")
		streams[i].untilSnapshotEnd(t)
	}
	id := e.submit(c.ID)
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for _, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case ev := <-s.ch:
				if ev.data.ID != id {
					errs <- "a watcher got " + ev.data.ID
				}
			case <-time.After(patience):
				errs <- "a watcher got nothing"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A watch stream opened with an admin token stops once the token is revoked
// or expires: the next change is not sent to it, and the stream ends (a
// reconnection is then refused with 401).
func TestAdminWatchEndsWhenTokenStopsWorking(t *testing.T) {
	e := newEnv(t)
	e.cluster("first")

	// streamEnds waits for the stream to end, failing if it delivers the
	// cluster named name first.
	streamEnds := func(w *watchStream, name string) {
		t.Helper()
		for {
			select {
			case ev, ok := <-w.ch:
				if !ok {
					return
				}
				if ev.data.Kind == "cluster" && strings.Contains(string(ev.data.Object), `"name":"`+name+`"`) {
					t.Fatalf("the stream of a token that no longer works delivered cluster %s", name)
				}
			case <-time.After(patience):
				t.Fatal("the stream of a token that no longer works is still open")
			}
		}
	}

	revoked := e.adminToken("revoked", registry.RoleViewer, "")
	w := e.watch(t, revoked, "?kinds=clusters", "")
	w.untilSnapshotEnd(t)
	if _, err := e.reg.RevokeAdminToken(adminCtx(), "revoked", "leaked"); err != nil {
		t.Fatal(err)
	}
	e.cluster("after-revoke")
	streamEnds(w, "after-revoke")
	wantAPIError(t, e.api("GET", "/watch?kinds=clusters", revoked, nil), 401, "unauthorized")

	issued, err := e.reg.CreateAdminToken(adminCtx(), "expiring", registry.RoleViewer, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w = e.watch(t, issued.Secret.Reveal(), "?kinds=clusters", "")
	w.untilSnapshotEnd(t)
	e.clock.Advance(2 * time.Hour)
	e.cluster("after-expiry")
	streamEnds(w, "after-expiry")

	// A token that still works keeps its stream.
	live := e.adminToken("live", registry.RoleViewer, "")
	w = e.watch(t, live, "?kinds=clusters", "")
	w.untilSnapshotEnd(t)
	e.cluster("seen")
	if ev := w.next(t); !strings.Contains(string(ev.data.Object), `"name":"seen"`) {
		t.Fatalf("live token's stream: %+v", ev)
	}
}

// TestAdminWatchResumeAheadOfTheFeed: a Last-Event-ID the feed never
// reached (a database restored from an older backup, another tether's
// position) gets a reset and a fresh snapshot, then the changes that
// follow, rather than waiting silently for the feed to pass it. On both
// stores.
func TestAdminWatchResumeAheadOfTheFeed(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { watchResumeAheadOfTheFeed(t, newEnv(t)) })
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn := os.Getenv("TETHER_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("TETHER_TEST_POSTGRES_DSN is not set")
		}
		watchResumeAheadOfTheFeed(t, newEnvOn(t, func(string) (registry.Store, error) { return freshPostgres(t) }, registry.Config{}))
	})
}

func watchResumeAheadOfTheFeed(t *testing.T, e *env) {
	c, _ := e.cluster("prod")
	open := e.submit(c.ID)
	root := e.adminToken("root", registry.RoleViewer, "")
	seq, err := e.reg.LatestSeq(adminCtx())
	if err != nil {
		t.Fatal(err)
	}
	w := e.watch(t, root, "?kinds=jobs", strconv.FormatInt(seq+1000, 10))
	if ev := w.next(t); ev.event != "reset" {
		t.Fatalf("a resume past the feed's end began with %+v, want a reset", ev)
	}
	ids, end := w.untilSnapshotEnd(t)
	if strings.Join(ids, ",") != open || end.id != strconv.FormatInt(seq, 10) {
		t.Fatalf("after the reset: snapshot %v ending at %s; want [%s] ending at %d", ids, end.id, open, seq)
	}
	next := e.submit(c.ID)
	if ev := w.next(t); ev.event != "upsert" || ev.data.ID != next {
		t.Fatalf("the change after the snapshot = %+v, want the upsert of %s", ev, next)
	}
}
