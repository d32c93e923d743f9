package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// A held poll is woken by a job queued for its cluster even while every
// read connection is taken by requests (at fleet scale, hundreds of agents'
// reads queue for them): the hub reads the change feed from a pool of its
// own, not behind them.
func TestHeldPollsWakeWhileTheReadersAreBusy(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "tether.db"), Options{Readers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, registry.Config{})
	defer reg.Close()
	admin := registry.WithActor(ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	c, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	woken, unsubscribe, err := reg.SubscribeJobs(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)
	submit := func() {
		t.Helper()
		if _, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(what string) {
		t.Helper()
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the held poll was not woken within 5s", what)
		}
	}
	submit() // the cluster is in the record cache from here on
	wait("a first job")

	// The one read connection (the other is the change notifier's) is
	// taken, as by a request's read.
	conn, err := st.readers.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	submit()
	wait("a job queued while every read connection is taken")
}
