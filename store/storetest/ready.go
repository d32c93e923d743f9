package storetest

import (
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// testReady: the write probe commits without touching the change feed, many
// at once are fine, and the registry's readiness reuses its outcome for
// ReadyCacheTTL, then sees a store that can no longer serve and says so
// without naming the database.
func testReady(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	e.cluster("prod", nil)
	before, _, err := e.store.ChangesLatest(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() { errs[i] = e.store.CheckWritable(e.ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("CheckWritable #%d on a healthy store: %v", i, err)
		}
	}
	after, _, err := e.store.ChangesLatest(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("the write probe moved the change feed from %d to %d: it is no change anyone watches", before, after)
	}

	if err := e.reg.Ready(e.ctx); err != nil {
		t.Fatalf("Ready on a healthy store: %v", err)
	}
	e.store.Close()
	if err := e.store.CheckWritable(e.ctx); registry.ErrorCode(err) != registry.CodeUnavailable {
		t.Fatalf("CheckWritable after Close: %v, want unavailable", err)
	}
	if err := e.reg.Ready(e.ctx); err != nil {
		t.Fatalf("Ready within %s of a good check: %v, want the cached outcome", registry.ReadyCacheTTL, err)
	}
	e.clock.Advance(registry.ReadyCacheTTL)
	err = e.reg.Ready(e.ctx)
	if registry.ErrorCode(err) != registry.CodeUnavailable {
		t.Fatalf("Ready after Close: %v, want unavailable", err)
	}
	msg := registry.ErrorMessage(err)
	if !strings.Contains(msg, "database") || strings.Contains(msg, "/") || strings.Contains(msg, "@") {
		t.Fatalf("Ready's message %q should say the database failed, without saying where", msg)
	}
}
