package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

// TestBatcherOverflow: while tether is down the batcher keeps only the newest
// events; once it is back it sends them in batches, then a BufferOverflow
// event counting what it dropped.
func TestBatcherOverflow(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	var batches [][]apiclient.Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var body struct{ Events []apiclient.Event }
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		batches = append(batches, body.Events)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, Credential: apiclient.Credential{ClusterID: "cl-1", Token: "t"},
		Retry: apiclient.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxAttempts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBatcher(client, 4, time.Hour, 10, slog.New(slog.DiscardHandler), "cl-1")
	for i := range 25 {
		b.add(apiclient.Event{Kind: "Audit", EventKey: string(rune('a' + i))})
	}
	b.drain(context.Background()) // tether is down: nothing is lost yet but the overflow
	if len(b.buf) != 10 || b.dropped != 15 {
		t.Fatalf("buffer %d, dropped %d; want the newest 10 kept and 15 dropped", len(b.buf), b.dropped)
	}
	down.Store(false)
	b.drain(context.Background())
	var got []string
	overflow := ""
	for _, batch := range batches {
		if len(batch) > 4 {
			t.Fatalf("a batch of %d events, over the size of 4", len(batch))
		}
		for _, e := range batch {
			if e.Kind == apiclient.EventBufferOverflow {
				overflow = e.Message
				continue
			}
			got = append(got, e.EventKey)
		}
	}
	if strings.Join(got, "") != "pqrstuvwxy" {
		t.Fatalf("sent %q, want the newest ten in order", strings.Join(got, ""))
	}
	if !strings.Contains(overflow, "dropped 15 events") {
		t.Fatalf("overflow event %q does not count the 15 dropped", overflow)
	}
	if len(b.buf) != 0 || b.dropped != 0 {
		t.Fatalf("after sending: buffer %d, dropped %d", len(b.buf), b.dropped)
	}
}

// TestBatcherDropsOnlyTheMalformedEvent: tether refuses a batch holding a
// malformed event (a NUL in its message) with a 400 naming it; the batcher
// then sends the batch's events one by one, so that the others are recorded
// and only that one is dropped, instead of sending the same batch, refused
// forever, ahead of every later event. Against a real server on loopback.
func TestBatcherDropsOnlyTheMalformedEvent(t *testing.T) {
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "tether.db.key"))})
	t.Cleanup(func() { reg.Close(); st.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- server.New(reg, server.Config{Logger: slog.New(slog.DiscardHandler)}).Serve(srvCtx, ln)
	}()
	t.Cleanup(func() { stop(); <-served })
	url := "http://" + ln.Addr().String()

	c, tok, err := reg.CreateCluster(ctx, registry.ClusterSpec{Name: "prod"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := apiclient.Register(context.Background(), url, tok.Secret.Reveal(), apiclient.RegisterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: url, Credential: cred})
	if err != nil {
		t.Fatal(err)
	}
	b := newBatcher(client, 10, time.Hour, 100, slog.New(slog.DiscardHandler), c.ID)
	for _, m := range []string{"first", "bad\x00one", "second"} {
		b.add(apiclient.Event{Kind: "Audit", Message: m})
	}
	b.drain(context.Background())
	if len(b.buf) != 0 {
		t.Fatalf("%d events still buffered after a drain, want none", len(b.buf))
	}
	b.add(apiclient.Event{Kind: "Audit", Message: "later"})
	b.drain(context.Background())
	events, err := reg.ListEvents(ctx, registry.EventListParams{ClusterID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Message)
	}
	if strings.Join(got, ",") != "later,second,first" {
		t.Fatalf("events recorded: %q, want every one but the malformed one", got)
	}
}
