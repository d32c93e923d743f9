package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// The remote rollout list follows the admin API's nextCursor, as the other
// remote lists do: over --server it shows every rollout, as over --db, not
// the first page of at most 1000.
func TestRemoteRolloutListPages(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rootToken := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "root", "--role", "admin").Token
	createCluster(t, db, "one", "--namespaces", "apps", "--label", "env=prod")
	reg := openRegistry(t, db)
	ctx := adminContext(context.Background())
	const n = 1001 // one more than a page can hold
	for i := 0; i < n; i++ {
		if _, err := reg.CreateRollout(ctx, registry.RolloutSpec{Selector: "env=prod", Kind: registry.JobKind("apply"), Payload: []byte(configMap("apps", "a"))}); err != nil {
			t.Fatal(err)
		}
	}
	_, addr, _ := startServe(t, db)
	home := t.TempDir()
	tokenFile := filepath.Join(home, "token")
	if err := os.WriteFile(tokenFile, []byte(rootToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := okJSON[[]registry.Rollout](t, db, "rollout", "list", "-o", "json"); len(got) != n {
		t.Fatalf("over --db: %d rollouts, want %d", len(got), n)
	}
	res := cliWithEnv(t, "", []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}, "rollout", "list", "-o", "json", "--server", "http://"+addr, "--token-file", tokenFile)
	if res.code != 0 {
		t.Fatalf("over --server: %s", res)
	}
	got := decode[[]registry.Rollout](t, res)
	seen := map[string]bool{}
	for _, ro := range got {
		seen[ro.ID] = true
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("over --server: %d rollouts (%d distinct), want all %d", len(got), len(seen), n)
	}
}
