package adminclient_test

import (
	"context"
	"testing"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// TestIntoDecodesTheWholeAnswer: a typed method with Into answers its own
// type and fills the caller's with every field of the same answer, those
// the client's types leave out too (a paused cluster's pausedAt), for one
// record and for a page.
func TestIntoDecodesTheWholeAnswer(t *testing.T) {
	reg, url := serve(t)
	ctx := context.Background()
	c, err := adminclient.New(url, token(t, reg, registry.RoleAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateCluster(ctx, adminclient.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"apps"}}, 0); err != nil {
		t.Fatal(err)
	}
	var rec registry.Cluster
	own, err := c.SetClusterPaused(ctx, "prod", true, "maintenance", adminclient.Into(&rec))
	if err != nil {
		t.Fatal(err)
	}
	if own.Name != "prod" || rec.Name != "prod" || rec.ID != own.ID || !rec.Paused() || rec.PauseReason != "maintenance" {
		t.Errorf("paused: the client's cluster %+v, the caller's %+v; want both, the caller's with its pause", own, rec)
	}
	var page adminclient.Page[registry.Cluster]
	list, err := c.ListClusters(ctx, adminclient.ClusterQuery{}, adminclient.Into(&page))
	if err != nil || len(list.Items) != 1 || len(page.Items) != 1 || !page.Items[0].Paused() {
		t.Errorf("a page: %+v and %+v (%v), want the paused cluster in both", list, page, err)
	}
	// A refusal is the client's error, and leaves the caller's value alone.
	var none registry.Cluster
	if _, err := c.GetCluster(ctx, "nowhere", adminclient.Into(&none)); !adminclient.IsCode(err, "not_found") || none.ID != "" {
		t.Errorf("a missing cluster: %v, %+v", err, none)
	}
}
