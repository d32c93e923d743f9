package admin_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// TestFeedSinceReadsEveryPage: a feed's catch-up (what events and audit
// --follow read after their watch reconnects) answers every entry above
// the id it is given, oldest first and each once, with the feed's filters,
// however many pages that takes, over the registry and over the API alike.
func TestFeedSinceReadsEveryPage(t *testing.T) {
	w := newWorld(t)
	f := seed(t, w)
	ctx := context.Background()
	for range 7 {
		if _, err := w.reg.SetClusterPaused(w.ctx, f.staging.ID, true, "drill"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.reg.SetClusterPaused(w.ctx, f.staging.ID, false, "drill"); err != nil {
			t.Fatal(err)
		}
	}
	all, err := w.local.ListAudit(ctx, registry.AuditListParams{ClusterID: f.staging.ID, Limit: 1000})
	if err != nil || len(all) < 14 {
		t.Fatalf("staging's audit trail: %d entries (%v), want the 14 pauses and resumes at least", len(all), err)
	}
	slices.Reverse(all) // oldest first
	after := all[2].ID  // the entries after the third
	for _, s := range []struct {
		name string
		svc  admin.Service
	}{{"local", w.local}, {"remote", w.remote}} {
		for _, page := range []int{1, 3, 1000} {
			got, err := admin.Audit(s.svc, registry.AuditListParams{ClusterID: f.staging.ID}).Since(ctx, after, page)
			same(t, s.name+" catch-up", all[3:], got, nil, err)
		}
		got, err := admin.Audit(s.svc, registry.AuditListParams{ClusterID: f.staging.ID}).Page(ctx, all[5].ID, all[1].ID, 2)
		same(t, s.name+" a page between ids", []registry.AuditEntry{all[4], all[3]}, got, nil, err)
		events, err := admin.Events(s.svc, registry.EventListParams{ClusterID: f.staging.ID}).Since(ctx, 0, 2)
		if err != nil || len(events) != 0 {
			t.Errorf("%s: staging has no events, its feed answers %d (%v)", s.name, len(events), err)
		}
		events, err = admin.Events(s.svc, registry.EventListParams{ClusterID: f.eu.ID}).Since(ctx, 0, 1)
		if err != nil || len(events) == 0 || events[0].ClusterID != f.eu.ID {
			t.Errorf("%s: prod-eu's events: %+v (%v)", s.name, events, err)
		}
	}
}
