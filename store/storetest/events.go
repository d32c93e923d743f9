package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func testEvents(t *testing.T, newStore NewStore) {
	t.Run("DedupeWithinReplayWindow", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		ev := func() []registry.Event {
			return []registry.Event{{Kind: registry.EventAudit, EventKey: "credential-rotated"}, {Kind: registry.EventAudit, EventKey: "credential-rotated"}}
		}
		n, err := e.reg.AppendEvents(e.ctx, a, "", ev())
		wantNoErr(t, err)
		if n != 1 {
			t.Fatalf("stored %d of a batch with a repeated key, want 1", n)
		}
		e.clock.Advance(9 * time.Minute)
		n, _ = e.reg.AppendEvents(e.ctx, a, a.Cluster.ID, ev())
		if n != 0 {
			t.Fatalf("stored %d inside the replay window, want 0", n)
		}
		// The public operator re-sends a key for a later, distinct event.
		e.clock.Advance(2 * time.Minute)
		n, _ = e.reg.AppendEvents(e.ctx, a, "", ev())
		if n != 1 {
			t.Fatalf("stored %d after the window, want 1", n)
		}
		// Keys are per cluster.
		b, _ := e.agent("other")
		n, _ = e.reg.AppendEvents(e.ctx, b, "", ev())
		if n != 1 {
			t.Fatalf("another cluster's event with the same key stored %d", n)
		}
	})

	// The feed pages by id, newest first, within a cluster and kinds: what
	// admin.Feed reads the events with (Page, and Since's pages from the
	// newest back).
	t.Run("IDPages", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		b, _ := e.agent("other")
		for i := range 5 {
			_, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: registry.EventAudit, EventKey: fmt.Sprint("k", i)}})
			wantNoErr(t, err)
			_, err = e.reg.AppendEvents(e.ctx, b, "", []registry.Event{{Kind: registry.EventAudit, EventKey: fmt.Sprint("k", i)}})
			wantNoErr(t, err)
		}
		_, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: registry.EventBufferOverflow, EventKey: "overflow"}})
		wantNoErr(t, err)
		p := registry.EventListParams{ClusterID: a.Cluster.ID, Kinds: []string{registry.EventAudit}}
		ids := func(p registry.EventListParams) []string {
			t.Helper()
			evs, err := e.reg.ListEvents(e.ctx, p)
			wantNoErr(t, err)
			var out []string
			for _, ev := range evs {
				if ev.ClusterID != a.Cluster.ID || ev.Kind != registry.EventAudit {
					t.Fatalf("the page holds %+v, outside its cluster or kinds", ev)
				}
				out = append(out, ev.EventKey)
			}
			return out
		}
		all, _ := e.reg.ListEvents(e.ctx, p)
		if got := ids(p); !slices.Equal(got, []string{"k4", "k3", "k2", "k1", "k0"}) {
			t.Fatalf("the cluster's audit events = %v, want k4..k0, newest first", got)
		}
		p.Limit = 2
		if got := ids(p); !slices.Equal(got, []string{"k4", "k3"}) {
			t.Fatalf("the first page of 2 = %v", got)
		}
		p.BeforeID = all[1].ID
		if got := ids(p); !slices.Equal(got, []string{"k2", "k1"}) {
			t.Fatalf("the page before k3 = %v", got)
		}
		p.AfterID = all[4].ID
		if got := ids(p); !slices.Equal(got, []string{"k2", "k1"}) {
			t.Fatalf("the page between k0 and k3 = %v", got)
		}
		p.AfterID, p.BeforeID, p.Limit = all[2].ID, 0, 0
		if got := ids(p); !slices.Equal(got, []string{"k4", "k3"}) {
			t.Fatalf("the events after k2 = %v", got)
		}
	})

	t.Run("HeartbeatUpdatesStatus", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		conds := []registry.Condition{{Type: "ControllersHealthy", Status: "False", Reason: "FluxDown"}}
		ref := registry.ResourceRef{APIVersion: "ops.vworkspace.io/v1alpha1", Kind: "Cluster", Name: a.Cluster.ID}
		_, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: registry.EventClusterHeartbeat, ResourceRef: ref, Conditions: conds}})
		wantNoErr(t, err)
		c, _ := e.reg.GetCluster(e.ctx, a.Cluster.ID)
		if !c.Status.LastHeartbeatAt.Equal(e.clock.Now()) || len(c.FalseConditions()) != 1 {
			t.Fatalf("status after heartbeat = %+v", c.Status)
		}
		// The public operator's heartbeat carries no conditions: keep the last ones.
		e.clock.Advance(time.Minute)
		_, err = e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: registry.EventClusterHeartbeat, ResourceRef: ref}})
		wantNoErr(t, err)
		c, _ = e.reg.GetCluster(e.ctx, a.Cluster.ID)
		if !c.Status.LastHeartbeatAt.Equal(e.clock.Now()) || len(c.Status.Conditions) != 1 {
			t.Fatalf("status after a bare heartbeat = %+v", c.Status)
		}
		if c.Silent(e.clock.Now()) {
			t.Fatal("cluster silent right after a heartbeat")
		}
		e.clock.Advance(registry.SilentAfterHeartbeats*registry.HeartbeatInterval + time.Second)
		if !c.Silent(e.clock.Now()) {
			t.Fatal("cluster not silent after three missed heartbeats")
		}
		evs, _ := e.reg.ListEvents(e.ctx, registry.EventListParams{ClusterID: a.Cluster.ID, FalseOnly: true})
		if len(evs) != 1 || evs[0].Conditions[0].Reason != "FluxDown" {
			t.Fatalf("false-condition events = %+v", evs)
		}
	})

	t.Run("HeartbeatFeedsAStatusChange", func(t *testing.T) {
		// A heartbeat changes the cluster's status, not its record: its feed
		// entry says so (the record cache and held polls skip it; watchers
		// get the cluster as for any upsert). A change of the record still
		// feeds an upsert.
		e := newEnv(t, newStore)
		from, _, err := e.store.ChangesLatest(e.ctx)
		wantNoErr(t, err)
		a, _ := e.agent("prod")
		ops := func() []registry.ChangeOp {
			t.Helper()
			_, _, err := e.store.ChangesLatest(e.ctx) // every committed change positioned
			wantNoErr(t, err)
			changes, err := e.store.ChangesSince(e.ctx, from, 100)
			wantNoErr(t, err)
			var out []registry.ChangeOp
			for _, c := range changes {
				if c.Kind == registry.EntityCluster && c.ID == a.Cluster.ID {
					out = append(out, c.Op)
				}
				from = c.Seq
			}
			return out
		}
		// Registering sets the cluster's capabilities: a change of the
		// record, whoever wrote it.
		if got := ops(); len(got) == 0 || slices.Contains(got, registry.OpStatus) {
			t.Fatalf("creating and registering a cluster fed its changes %v, want upserts only", got)
		}
		stored, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: "Progress", Message: "one"},
			{Kind: registry.EventClusterHeartbeat, Conditions: []registry.Condition{{Type: "Ready", Status: "True"}}}, {Kind: "Progress", Message: "two"}})
		wantNoErr(t, err)
		if got := ops(); stored != 3 || !slices.Equal(got, []registry.ChangeOp{registry.OpStatus}) {
			t.Fatalf("a heartbeat batch stored %d events and fed the cluster's changes %v, want 3 and [status]", stored, got)
		}
		evs, err := e.reg.ListEvents(e.ctx, registry.EventListParams{ClusterID: a.Cluster.ID})
		wantNoErr(t, err)
		if len(evs) != 3 || evs[0].Message != "two" || evs[2].Message != "one" {
			t.Fatalf("events, newest first = %+v", evs)
		}
		_, err = e.reg.SetClusterPaused(e.ctx, a.Cluster.ID, true, "test")
		wantNoErr(t, err)
		if got := ops(); !slices.Equal(got, []registry.ChangeOp{registry.OpUpsert}) {
			t.Fatalf("a pause fed the cluster's changes %v, want [upsert]", got)
		}
	})

	t.Run("HeartbeatOfADeletedCluster", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("doomed")
		_, err := e.reg.DeleteCluster(e.ctx, a.Cluster.ID, "test")
		wantNoErr(t, err)
		_, err = e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: registry.EventClusterHeartbeat}, {Kind: "Progress"}})
		wantCode(t, err, registry.CodeNotFound)
		evs, err := e.reg.ListEvents(e.ctx, registry.EventListParams{ClusterID: a.Cluster.ID})
		wantNoErr(t, err)
		if len(evs) != 0 {
			t.Fatalf("a deleted cluster's heartbeat stored events %+v", evs)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		b, _ := e.agent("other")
		_, err := e.reg.AppendEvents(e.ctx, a, b.Cluster.ID, []registry.Event{{Kind: "Audit"}})
		wantCode(t, err, registry.CodeForbidden)
		_, err = e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: registry.EventClusterHeartbeat, ResourceRef: registry.ResourceRef{Name: b.Cluster.ID}}})
		wantCode(t, err, registry.CodeForbidden)
		_, err = e.reg.AppendEvents(e.ctx, a, "", nil)
		wantCode(t, err, registry.CodeInvalid)
		_, err = e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: ""}})
		wantCode(t, err, registry.CodeInvalid)
		_, err = e.reg.AppendEvents(e.ctx, a, "", make([]registry.Event, registry.MaxEventsPerBatch+1))
		wantCode(t, err, registry.CodeTooLarge)
		if c, _ := e.reg.GetCluster(e.ctx, b.Cluster.ID); !c.Status.LastHeartbeatAt.IsZero() {
			t.Fatal("a foreign heartbeat updated another cluster")
		}
	})

	t.Run("Prune", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		for i := range 30 {
			_, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: "ConditionTransition", EventKey: fmt.Sprint(i), Body: json.RawMessage(`{"n":1}`)}})
			wantNoErr(t, err)
			if i == 9 {
				e.clock.Advance(8 * 24 * time.Hour) // the first ten are past retention
			}
		}
		p := registry.NewPruner(e.reg, registry.PrunerConfig{EventsPerCluster: 15})
		rep, err := p.RunOnce(e.ctx)
		wantNoErr(t, err)
		evs, _ := e.reg.ListEvents(e.ctx, registry.EventListParams{ClusterID: a.Cluster.ID, Limit: 100})
		if rep.Events != 15 || len(evs) != 15 || evs[0].EventKey != "29" || evs[14].EventKey != "15" {
			t.Fatalf("pruned %d, kept %d (newest %s)", rep.Events, len(evs), evs[0].EventKey)
		}
		// Keys outside the window were forgotten: a key seen long ago is new again.
		n, _ := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: "ConditionTransition", EventKey: "0"}})
		if n != 1 {
			t.Fatal("an old key was still considered a duplicate")
		}
	})
}
