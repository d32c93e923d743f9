package registry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// flakyClusterStore fails to read clusters while down is set, as a store
// that is briefly unreachable does.
type flakyClusterStore struct {
	registry.Store
	down atomic.Bool
}

func (s *flakyClusterStore) ClusterGet(ctx context.Context, id string) (*registry.Cluster, error) {
	if s.down.Load() {
		return nil, registry.Errorf(registry.CodeUnavailable, "the store is unreachable (test)")
	}
	return s.Store.ClusterGet(ctx, id)
}

func (s *flakyClusterStore) ClusterGetByName(ctx context.Context, name string) (*registry.Cluster, error) {
	if s.down.Load() {
		return nil, registry.Errorf(registry.CodeUnavailable, "the store is unreachable (test)")
	}
	return s.Store.ClusterGetByName(ctx, name)
}

// A paused queue hands out nothing even when its cluster cannot be read: the
// poll used to fall back to reading it as an admin would, be refused, and
// hand out the jobs the pause held back.
func TestPausedQueueWhenItsClusterCannotBeRead(t *testing.T) {
	eachStore(t, func(t *testing.T, openStore func() registry.Store) {
		st := &flakyClusterStore{Store: openStore()}
		reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(t.TempDir(), "key"))})
		t.Cleanup(func() { reg.Close() })
		admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
		_, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"default"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		issued, err := reg.Register(context.Background(), registry.RegisterParams{Token: tok.Secret.Reveal()})
		if err != nil {
			t.Fatal(err)
		}
		payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)
		if _, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: "prod", Kind: registry.KindApply, Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.SetClusterPaused(admin, "prod", true, "maintenance"); err != nil {
			t.Fatal(err)
		}
		a, err := reg.Authenticate(context.Background(), issued.Token.Reveal(), registry.AuthAny)
		if err != nil {
			t.Fatal(err)
		}
		// Another replica, whose cache has not seen the cluster yet, takes
		// the poll while the store cannot read clusters.
		replica := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(t.TempDir(), "key"))})
		t.Cleanup(func() { replica.Close() })
		st.down.Store(true)
		jobs, err := replica.PollJobs(registry.WithActor(context.Background(), a.Actor()), a, a.Cluster.ID, 10)
		if len(jobs) != 0 {
			t.Fatalf("a poll of a paused queue whose cluster could not be read got %d jobs, want none", len(jobs))
		}
		if registry.ErrorCode(err) != registry.CodeUnavailable {
			t.Fatalf("the poll's error: %v, want the store's unavailable", err)
		}
	})
}
