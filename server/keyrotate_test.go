package server_test

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// tether keys rotate while the server serves HMAC-signed agents: every
// request keeps succeeding during the rotation, the re-seal and the
// retirement of the old key, which another process (the CLI) does through
// its own key file handle over the same file and database. Afterwards no
// value is sealed with the old key. Both stores.
func TestKeyRotationWhileServing(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { keyRotationWhileServing(t, newEnv(t)) })
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn := os.Getenv("TETHER_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("TETHER_TEST_POSTGRES_DSN is not set: the PostgreSQL run is skipped")
		}
		keyRotationWhileServing(t, newEnvOn(t, func(string) (registry.Store, error) {
			st, _, err := postgresWithConn(t)
			return st, err
		}, registry.Config{}))
	})
}

func keyRotationWhileServing(t *testing.T, e *env) {
	var agents []*agent
	for i := range 4 {
		agents = append(agents, e.newAgent(fmt.Sprintf("c%d", i), "hmac"))
	}
	stop := make(chan struct{})
	var ok, failed atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	var n atomic.Int64
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Each body differs, so that no signature repeats.
				body := fmt.Sprintf(`{"events":[{"kind":"ClusterHeartbeat","eventKey":"hb-%d","resourceRef":{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Cluster","name":%q},"timestamp":"2026-05-28T10:01:30Z"}]}`, n.Add(1), a.clusterID)
				r := a.events(body)
				if r.status == 204 {
					ok.Add(1)
				} else {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", r.status, r.body))
				}
			}
		}()
	}
	waitFor := func(min int64) {
		deadline := time.Now().Add(patience)
		for ok.Load() < min && failed.Load() == 0 {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("requests stalled at %d successes", ok.Load())
			}
			time.Sleep(time.Millisecond) // waiting for requests to happen, not for time to pass
		}
	}
	waitFor(20)

	// The CLI: its own handle on the key file, its own registry.
	cliKeys := registry.ExistingKeyFile(registry.KeyFilePath(e.dbPath))
	cli := registry.New(e.store, registry.Config{Keyring: cliKeys})
	defer cli.Close()
	ctx := adminCtx()
	old, err := cliKeys.PrimaryKeyID()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.CheckKeyring(ctx); err != nil {
		t.Fatal(err)
	}
	k, err := cliKeys.Rotate(false)
	if err != nil {
		t.Fatal(err)
	}
	before := ok.Load()
	waitFor(before + 20)
	if _, err := cli.Reseal(ctx, 2); err != nil {
		t.Fatal(err)
	}
	before = ok.Load()
	waitFor(before + 20)
	usage, err := cli.SealedKeyUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if usage[old] != 0 || usage[k.ID] < len(agents) {
		t.Fatalf("after re-seal: %v, want every value under %s", usage, k.ID)
	}
	if _, err := cliKeys.Retire(usage); err != nil {
		t.Fatal(err)
	}
	before = ok.Load()
	waitFor(before + 40) // the server's cached credentials hold the old values: they are read again
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed during the rotation; first: %v", failed.Load(), failed.Load()+ok.Load(), firstFailure.Load())
	}
	usage, err = cli.SealedKeyUsage(ctx)
	if err != nil || len(usage) != 1 || usage[k.ID] == 0 {
		t.Fatalf("after retire: %v, %v; want only %s", usage, err, k.ID)
	}
	t.Logf("%d signed requests succeeded during rotation, re-seal and retirement", ok.Load())
}
