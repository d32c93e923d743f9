package registry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
)

// recordCountingStore counts the reads of one cluster and its credentials
// (an agent's authentication reads both).
type recordCountingStore struct {
	registry.Store
	cluster atomic.Value // string
	reads   atomic.Int64
}

func (s *recordCountingStore) ClusterGet(ctx context.Context, id string) (*registry.Cluster, error) {
	if id == s.cluster.Load() {
		s.reads.Add(1)
	}
	return s.Store.ClusterGet(ctx, id)
}

func (s *recordCountingStore) CredentialGet(ctx context.Context, id string) (*registry.Credential, error) {
	cred, err := s.Store.CredentialGet(ctx, id)
	if err == nil && cred.ClusterID == s.cluster.Load() {
		s.reads.Add(1)
	}
	return cred, err
}

// A fleet's agents heartbeat every 30 s, and each heartbeat changes its
// cluster's status: that change must reach watchers (the console shows the
// heartbeat and its conditions), but it changes nothing an agent's request
// reads, so it neither evicts the cluster and its credentials from the
// record cache (the agent's next request would read both again) nor wakes
// the cluster's held polls (each would look for jobs again, a write). Nor
// does the cache let its entries go between an agent's requests 30 s apart.
func TestHeartbeatsKeepTheRecordCacheAndHeldPolls(t *testing.T) {
	eachStore(t, heartbeatsKeepTheRecordCacheAndHeldPolls)
}

func heartbeatsKeepTheRecordCacheAndHeldPolls(t *testing.T, openStore func() registry.Store) {
	ctx := context.Background()
	st := &recordCountingStore{Store: openStore()}
	clock := clocktest.New()
	reg := registry.New(st, registry.Config{Clock: clock, Keyring: registry.NewKeyFile(filepath.Join(t.TempDir(), "key"))})
	t.Cleanup(reg.Close)
	admin := registry.WithActor(ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	agent := func(name string) (*registry.Agent, string) {
		t.Helper()
		_, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: name, AllowedNamespaces: []string{"default"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		cred, err := reg.Register(ctx, registry.RegisterParams{Token: tok.Secret.Reveal()})
		if err != nil {
			t.Fatal(err)
		}
		a, err := reg.Authenticate(ctx, cred.Token.Reveal(), registry.AuthAny)
		if err != nil {
			t.Fatal(err)
		}
		return a, cred.Token.Reveal()
	}
	beating, bearer := agent("beating")
	marker, _ := agent("marker")
	st.cluster.Store(beating.Cluster.ID)
	held, unsubscribe, err := reg.SubscribeJobs(beating.Cluster.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	markerWoken, unsubscribeMarker, err := reg.SubscribeJobs(marker.Cluster.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribeMarker()
	// The console, in a process of its own, watches the clusters.
	other := registry.New(openStore(), registry.Config{Keyring: registry.NewKeyFile(filepath.Join(t.TempDir(), "key"))})
	t.Cleanup(other.Close)
	since, err := other.LatestSeq(admin)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := other.Watch(admin, registry.WatchParams{Since: since, Kinds: []registry.EntityKind{registry.EntityCluster}})
	if err != nil {
		t.Fatal(err)
	}
	// What the feed brought so far (the registrations) is dispatched once
	// a job queued after it wakes the marker's poll.
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)
	dispatched := func() {
		t.Helper()
		if _, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: marker.Cluster.ID, Kind: registry.KindApply, Payload: payload}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-markerWoken:
		case <-time.After(20 * time.Second):
			t.Fatal("a job queued on the marker cluster did not wake its poll within 20s")
		}
	}
	dispatched()
	if _, err := reg.Authenticate(ctx, bearer, registry.AuthAny); err != nil { // cached from here on
		t.Fatal(err)
	}
	select {
	case <-held:
	default:
	}

	before := st.reads.Load()
	for i := range 3 {
		clock.Advance(30 * time.Second) // an agent's period
		status := []string{"True", "False", "True"}[i]
		if _, err := reg.AppendEvents(ctx, beating, "", []registry.Event{{Kind: registry.EventClusterHeartbeat,
			Conditions: []registry.Condition{{Type: "Ready", Status: status, Reason: "AgentRunning"}}}}); err != nil {
			t.Fatal(err)
		}
		dispatched() // the heartbeat's change came before the job's
		if _, err := reg.Authenticate(ctx, bearer, registry.AuthAny); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.reads.Load() - before; n != 0 {
		t.Errorf("an agent authenticating after each of 3 heartbeats, 30s apart, read its credential and cluster %d times from the store, want 0 (cached)", n)
	}
	select {
	case <-held:
		t.Error("a heartbeat woke its cluster's held poll")
	default:
	}

	// The watch still brings each heartbeat's status.
	deadline := time.After(20 * time.Second)
	for seen := 0; seen < 3; {
		select {
		case ev := <-watch:
			if ev.Kind == registry.EntityCluster && ev.ID == beating.Cluster.ID && ev.Cluster != nil && len(ev.Cluster.Status.Conditions) == 1 {
				seen++
			}
		case <-deadline:
			t.Fatal("the watch did not bring the 3 heartbeats' status within 20s")
		}
	}
	c, err := other.GetCluster(admin, beating.Cluster.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Status.Conditions; len(got) != 1 || got[0].Status != "True" || c.Status.LastHeartbeatAt.IsZero() {
		t.Errorf("GetCluster after the heartbeats: status %+v", c.Status)
	}

	// A change to the record itself, by another process, still evicts it
	// (well within the cache's own lifetime, 2 minutes).
	if _, err := other.SetClusterEnabled(admin, beating.Cluster.ID, false, "test"); err != nil {
		t.Fatal(err)
	}
	for stop := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := reg.Authenticate(ctx, bearer, registry.AuthAny)
		if registry.ErrorCode(err) == registry.CodeClusterDisabled {
			break
		}
		if time.Now().After(stop) {
			t.Fatalf("an agent of a cluster another process disabled still authenticated 5s later: %v", err)
		}
	}
}
