package adminclient_test

import (
	"context"
	"testing"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// TestClusterNamesThatNeedEscaping: a cluster whose name holds a space, a
// slash, a percent sign or a non-ASCII letter is reached by that name (the
// CLI's and the console's remote modes name clusters this way). The client
// and the server agree on how a name travels in a path; a change to either
// side alone breaks them.
func TestClusterNamesThatNeedEscaping(t *testing.T) {
	reg, url := serve(t)
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	c, err := adminclient.New(url, token(t, reg, registry.RoleViewer))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"prod eu", "team/a", "100%", "a%41", "zürich"} {
		if _, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: name, Policy: registry.DefaultPolicy()}, 0); err != nil {
			t.Fatal(err)
		}
		got, err := c.GetCluster(context.Background(), name)
		if err != nil || got.Name != name {
			t.Errorf("GetCluster(%q) = %+v, %v; want that cluster", name, got, err)
		}
	}
}
