package registry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

// clusterCountingStore counts the cluster reads submissions make.
type clusterCountingStore struct {
	registry.Store
	reads atomic.Int64
}

func (s *clusterCountingStore) ClusterGet(ctx context.Context, id string) (*registry.Cluster, error) {
	s.reads.Add(1)
	return s.Store.ClusterGet(ctx, id)
}

func (s *clusterCountingStore) ClusterGetByName(ctx context.Context, name string) (*registry.Cluster, error) {
	s.reads.Add(1)
	return s.Store.ClusterGetByName(ctx, name)
}

// Submissions that name their cluster by name read it from the store once,
// not once each; a rename, a disable and a delete made by another process
// (another registry on the same database) still reach them, through the
// change feed.
func TestSubmitByNameUsesTheRecordCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tether.db")
	open := func() (*registry.Registry, *clusterCountingStore) {
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cs := &clusterCountingStore{Store: st}
		reg := registry.New(cs, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "key"))})
		t.Cleanup(func() { reg.Close(); st.Close() })
		return reg, cs
	}
	reg, counted := open()
	other, _ := open()
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	c, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)
	submit := func(cluster string) error {
		_, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: cluster, Kind: registry.KindApply, Payload: payload})
		return err
	}
	if err := submit("prod"); err != nil { // starts the feed and fills the cache
		t.Fatal(err)
	}
	before := counted.reads.Load()
	for range 20 {
		if err := submit("prod"); err != nil {
			t.Fatal(err)
		}
	}
	if n := counted.reads.Load() - before; n > 2 {
		t.Fatalf("20 submissions by name read the cluster %d times from the store", n)
	}
	if err := submit("PROD"); err != nil {
		t.Fatalf("another spelling of the name: %v", err)
	}

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen within 20s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cur, err := other.GetCluster(admin, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	spec := cur.ClusterSpec
	spec.Name = "prod-eu"
	if _, err := other.UpdateCluster(admin, c.ID, cur.Version, spec); err != nil {
		t.Fatal(err)
	}
	eventually("the old name to be refused after a rename elsewhere", func() bool {
		return registry.ErrorCode(submit("prod")) == registry.CodeNotFound
	})
	if err := submit("prod-eu"); err != nil {
		t.Fatalf("the new name: %v", err)
	}
	if _, err := other.SetClusterEnabled(admin, "prod-eu", false, "test"); err != nil {
		t.Fatal(err)
	}
	eventually("a submission to a cluster disabled elsewhere to be refused", func() bool {
		return registry.ErrorCode(submit("prod-eu")) == registry.CodeForbidden
	})
	if _, err := other.DeleteCluster(admin, "prod-eu", "test"); err != nil {
		t.Fatal(err)
	}
	eventually("a submission to a cluster deleted elsewhere to be refused", func() bool {
		return registry.ErrorCode(submit("prod-eu")) == registry.CodeNotFound
	})
}
