package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestAdminQueueHealth: /queues and /clusters/{c}/queue carry each
// cluster's queue health over real HTTP; a queue the live agent leaves
// alone is flagged.
func TestAdminQueueHealth(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("viewer", registry.RoleViewer, "")
	a := e.newAgent("prod", registry.CapabilityLease)
	idle := e.newAgent("idle")
	first := e.submit(a.clusterID)
	e.submit(a.clusterID)
	e.clock.Advance(4 * time.Second)
	r := a.ack(first)
	r.wantNoContent(t)
	a.result(first, `{"outcome":"failed","error":"boom"}`, withHeader("X-Claim-Id", r.header.Get("X-Claim-Id"))).wantNoContent(t)

	type queue struct {
		ClusterID           string   `json:"clusterId"`
		Queued              int64    `json:"queued"`
		WaitP50Seconds      *float64 `json:"waitP50Seconds"`
		FailureRate         *float64 `json:"failureRate"`
		OldestQueuedSeconds *float64 `json:"oldestQueuedSeconds"`
		NotDraining         bool     `json:"notDraining"`
		Reason              string   `json:"reason"`
	}
	fleet := decodeAs[page[queue]](t, e.api("GET", "/queues", tok, nil))
	if len(fleet.Items) != 2 || fleet.Items[0].ClusterID != idle.clusterID || fleet.Items[1].ClusterID != a.clusterID {
		t.Fatalf("queues %+v", fleet)
	}
	if iq := fleet.Items[0]; iq.Queued != 0 || iq.WaitP50Seconds != nil || iq.FailureRate != nil || iq.OldestQueuedSeconds != nil {
		t.Fatalf("idle queue %+v", iq)
	}
	q := fleet.Items[1]
	if q.Queued != 1 || q.WaitP50Seconds == nil || *q.WaitP50Seconds != 4 || q.FailureRate == nil || *q.FailureRate != 1 ||
		q.OldestQueuedSeconds == nil || *q.OldestQueuedSeconds != 4 || q.NotDraining {
		t.Fatalf("prod queue %+v", q)
	}

	e.clock.Advance(registry.NotDrainingAfter)
	a.events(fmt.Sprintf(`{"events":[{"kind":"ClusterHeartbeat","resourceRef":{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Cluster","name":%q}}]}`, a.clusterID)).
		wantNoContent(t)
	if q := decodeAs[queue](t, e.api("GET", "/clusters/prod/queue", tok, nil)); q.ClusterID != a.clusterID || !q.NotDraining || q.Reason == "" {
		t.Fatalf("queue of prod %+v", q)
	}
	wantAPIError(t, e.api("GET", "/clusters/nowhere/queue", tok, nil), 404, "not_found")
}

// TestMetricsQueueNotDraining: tether_queue_not_draining is 1 for a queue
// the live agent leaves alone, and the oldest job's age comes with it.
func TestMetricsQueueNotDraining(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("stalled")
	e.submit(a.clusterID)
	e.clock.Advance(registry.NotDrainingAfter)
	a.events(heartbeatBody(a.clusterID)).wantNoContent(t)
	fams := scrape(t, e)
	if got, ok := value(t, fams, "tether_queue_not_draining", map[string]string{"cluster": "stalled"}); !ok || got != 1 {
		t.Errorf("tether_queue_not_draining = %v (found %v), want 1", got, ok)
	}
	want := registry.NotDrainingAfter.Seconds()
	if got, _ := value(t, fams, "tether_queue_oldest_job_age_seconds", map[string]string{"cluster": "stalled"}); got != want {
		t.Errorf("oldest job age %v, want %v", got, want)
	}
}
