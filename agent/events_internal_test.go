package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
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
