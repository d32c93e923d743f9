package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestClusterQueueHealth: cluster get shows the queue's figures and says
// when a live agent leaves its queue alone; cluster list marks it.
func TestClusterQueueHealth(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	createCluster(t, db, "idle")
	ids := []string{
		submit(t, db, "prod", "apply", configMap("apps", "one")).ID,
		submit(t, db, "prod", "apply", configMap("apps", "two")).ID,
		submit(t, db, "prod", "apply", configMap("apps", "three")).ID,
	}
	reg := openRegistry(t, db)
	ctx := context.Background()
	agent, _ := registerAgent(t, reg, c.RegistrationToken)
	for i, outcome := range []registry.Outcome{registry.OutcomeFailed, registry.OutcomeSucceeded} {
		claim, err := reg.AckJob(ctx, agent, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.ReportResult(ctx, agent, ids[i], claim.ClaimID, registry.ResultReport{Outcome: outcome, Error: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	d := okJSON[clusterDetail](t, db, "cluster", "get", "prod")
	q := d.Queue
	if q == nil || q.Queued != 1 || q.OldestQueuedAt.IsZero() || q.WaitSamples != 2 || q.Finished != 2 || q.Failed != 1 || q.NotDraining {
		t.Fatalf("queue %+v", q)
	}
	out := ok(t, db, "cluster", "get", "prod").stdout
	for _, want := range []string{"Queue:", "Oldest queued:", "(1 queued, 0 in flight)", "over the last 2 claims", "50% (1 failed or expired of 2 finished", "Draining:", "yes"} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster get without %q\n%s", want, out)
		}
	}

	// Ten minutes earlier, nothing since: the job has waited while the agent
	// is alive (it registered just now, so it is not silent).
	raw := openRawSQLite(t, db)
	if _, err := raw.Exec("UPDATE jobs SET created_at = created_at - 600000, claimed_at = claimed_at - 600000"); err != nil {
		t.Fatal(err)
	}
	d = okJSON[clusterDetail](t, db, "cluster", "get", "prod")
	if !d.Queue.NotDraining || d.Queue.Reason == "" {
		t.Fatalf("not flagged: %+v", d.Queue)
	}
	out = ok(t, db, "cluster", "get", "prod").stdout
	for _, want := range []string{"Draining:", "NO: the agent heartbeats but takes no work", "Health:", "not draining", "submitted 10m ago"} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster get without %q\n%s", want, out)
		}
	}
	list := ok(t, db, "cluster", "list").stdout
	if strings.Count(list, "not draining") != 1 {
		t.Errorf("cluster list marks not one cluster as not draining:\n%s", list)
	}
	if idle := okJSON[clusterDetail](t, db, "cluster", "get", "idle"); idle.Queue == nil || idle.Queue.Queued != 0 || idle.Queue.NotDraining {
		t.Errorf("idle queue %+v", idle.Queue)
	}
}

// TestClusterHealthSilentBeforePaused: cluster list's HEALTH is the
// registry's verdict (Cluster.Health), which names a silent cluster silent
// even when its queue is paused, as the console does; a pending cluster
// shows "-" (its STATE says pending).
func TestClusterHealthSilentBeforePaused(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	createCluster(t, db, "waiting")
	reg := openRegistry(t, db)
	registerAgent(t, reg, c.RegistrationToken)
	ok(t, db, "cluster", "pause", "prod", "--reason", "change freeze")
	if list := ok(t, db, "cluster", "list").stdout; !strings.Contains(list, "queue paused") {
		t.Fatalf("a paused live cluster is not \"queue paused\":\n%s", list)
	}
	// The agent falls silent: its last word an hour ago.
	st := openRawSQLite(t, db)
	for _, q := range []string{
		"UPDATE clusters SET registered_at = registered_at - 3600000 WHERE id = '" + c.ClusterID + "'",
		"UPDATE cluster_status SET last_heartbeat_at = last_heartbeat_at - 3600000 WHERE cluster_id = '" + c.ClusterID + "'",
	} {
		if _, err := st.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	list := ok(t, db, "cluster", "list").stdout
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 4 && f[1] == "prod" && f[4] != "silent":
			t.Errorf("a paused silent cluster's HEALTH is %q, want silent:\n%s", f[4], list)
		case len(f) > 4 && f[1] == "waiting" && f[4] != "-":
			t.Errorf("a pending cluster's HEALTH is %q, want -:\n%s", f[4], list)
		}
	}
}
