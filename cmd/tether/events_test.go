package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// appendEvent reports one event as the agent.
func appendEvent(t testing.TB, reg *registry.Registry, agent *registry.Agent, e registry.Event) {
	t.Helper()
	if _, err := reg.AppendEvents(context.Background(), agent, "", []registry.Event{e}); err != nil {
		t.Fatalf("append event: %v", err)
	}
}

func transition(key, msg string) registry.Event {
	return registry.Event{
		Kind: registry.EventConditionTransition, EventKey: key, Message: msg,
		ResourceRef: registry.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web"},
		Conditions:  []registry.Condition{{Type: "Available", Status: "False", Reason: "MinimumReplicasUnavailable"}},
	}
}

func TestEventsList(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := createCluster(t, db, "ev-a")
	b := createCluster(t, db, "ev-b")
	reg := openRegistry(t, db)
	agentA, _ := registerAgent(t, reg, a.RegistrationToken)
	agentB, _ := registerAgent(t, reg, b.RegistrationToken)
	appendEvent(t, reg, agentA, registry.Event{Kind: registry.EventClusterHeartbeat, ResourceRef: registry.ResourceRef{Kind: "Cluster", Name: a.ClusterID}})
	appendEvent(t, reg, agentA, transition("k1", "web lost its replicas"))
	appendEvent(t, reg, agentB, transition("k2", "the other cluster"))

	all := okJSON[[]registry.Event](t, db, "events")
	if len(all) != 3 {
		t.Fatalf("got %d events, want 3", len(all))
	}
	// Oldest first, as a log reads.
	if all[0].Kind != registry.EventClusterHeartbeat || all[2].Message != "the other cluster" {
		t.Errorf("got %s first and %q last, want the heartbeat first and the newest last", all[0].Kind, all[2].Message)
	}
	for _, tc := range []struct {
		args []string
		want []string // messages
	}{
		{[]string{"--cluster", "ev-a", "--kind", registry.EventConditionTransition}, []string{"web lost its replicas"}},
		{[]string{"--cluster", b.ClusterID}, []string{"the other cluster"}},
		{[]string{"--limit", "2", "--kind", registry.EventConditionTransition}, []string{"web lost its replicas", "the other cluster"}},
		{[]string{"--limit", "1"}, []string{"the other cluster"}},
		{[]string{"--kind", "BufferOverflow"}, nil},
	} {
		var got []string
		for _, e := range okJSON[[]registry.Event](t, db, append([]string{"events"}, tc.args...)...) {
			got = append(got, e.Message)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("events %v: got %q, want %q", tc.args, got, tc.want)
		}
	}
	table := ok(t, db, "events").stdout
	for _, want := range []string{"RECEIVED", "KIND", "ev-a", "ev-b", "ClusterHeartbeat", "Deployment/apps/web", "Available=False(MinimumReplicasUnavailable)", "web lost its replicas"} {
		if !strings.Contains(table, want) {
			t.Errorf("got events without %q\n%s", want, table)
		}
	}
	wantError(t, cli(t, db, "events", "--cluster", "nope"), exitError, `no cluster has the id or name "nope"`)
}

func TestAuditList(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "au", "--namespaces", "apps")
	createCluster(t, db, "other")
	j := submit(t, db, "au", "apply", configMap("apps", "x"))
	ok(t, db, "job", "cancel", j.ID, "--reason", "not needed")

	entries := okJSON[[]registry.AuditEntry](t, db, "audit", "--cluster", "au")
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
		if !strings.HasPrefix(e.Actor, "admin:") {
			t.Errorf("got actor %q, want the admin running the CLI", e.Actor)
		}
	}
	if got, want := strings.Join(actions, ","), "cluster.create,token.issue,job.submit,job.cancel"; got != want {
		t.Errorf("got actions %s, want %s (oldest first)", got, want)
	}
	jobActions := okJSON[[]registry.AuditEntry](t, db, "audit", "--action", "job.")
	if len(jobActions) != 2 || jobActions[1].TargetID != j.ID || !strings.Contains(jobActions[1].Reason, "not needed") {
		t.Errorf("got %+v, want job.submit then job.cancel with its reason", jobActions)
	}
	if got := okJSON[[]registry.AuditEntry](t, db, "audit", "--limit", "1"); len(got) != 1 || got[0].Action != registry.AuditJobCancel {
		t.Errorf("got %+v, want only the newest entry", got)
	}
	table := ok(t, db, "audit").stdout
	for _, want := range []string{"ACTOR", "ACTION", "cluster.create", "other", "job.cancel", "not needed"} {
		if !strings.Contains(table, want) {
			t.Errorf("got audit without %q\n%s", want, table)
		}
	}
}

// interrupt stops a --follow process as Ctrl-C would, and checks it ends
// cleanly.
func interrupt(t testing.TB, p *proc) result {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("signal: %v", err)
	}
	res := p.wait(t)
	if res.code != exitOK {
		t.Errorf("got exit %d after an interrupt, want 0 (the normal end of --follow)\n%s", res.code, res)
	}
	return res
}

func TestEventsFollow(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "tail")
	other := createCluster(t, db, "tail-other")
	reg := openRegistry(t, db)
	agent, _ := registerAgent(t, reg, c.RegistrationToken)
	otherAgent, _ := registerAgent(t, reg, other.RegistrationToken)
	appendEvent(t, reg, agent, transition("before", "written before following"))

	t.Run("table", func(t *testing.T) {
		p := start(t, db, "events", "--follow")
		p.waitOutput(t, "written before following")
		appendEvent(t, reg, agent, transition("after-table", "written while following"))
		p.waitOutput(t, "written while following")
		res := interrupt(t, p)
		if n := strings.Count(res.stdout, "RECEIVED"); n != 1 {
			t.Errorf("got the header %d times, want once\n%s", n, res.stdout)
		}
	})

	t.Run("json with filters", func(t *testing.T) {
		p := start(t, db, "events", "--follow", "--cluster", "tail", "--kind", registry.EventConditionTransition, "-o", "json")
		p.waitOutput(t, "written while following") // the newest page comes first
		appendEvent(t, reg, otherAgent, transition("other", "another cluster's event"))
		appendEvent(t, reg, agent, registry.Event{Kind: registry.EventClusterHeartbeat})
		appendEvent(t, reg, agent, transition("after-json", "the one to wait for"))
		p.waitOutput(t, "the one to wait for")
		res := interrupt(t, p)
		var messages []string
		for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
			var e registry.Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("got line %q, want one JSON object per line: %v", line, err)
			}
			messages = append(messages, e.Message)
		}
		want := []string{"written before following", "written while following", "the one to wait for"}
		if strings.Join(messages, "|") != strings.Join(want, "|") {
			t.Errorf("got %q, want %q (each once, filtered)", messages, want)
		}
	})
}

func TestAuditFollow(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "watched")
	p := start(t, db, "audit", "--follow", "-o", "json")
	p.waitOutput(t, registry.AuditClusterCreate)
	// A change made by another process after the command started.
	ok(t, db, "cluster", "disable", "watched", "--reason", "seen by follow")
	p.waitOutput(t, "seen by follow")
	res := interrupt(t, p)
	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var e registry.AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("got line %q, want one JSON object per line: %v", line, err)
		}
		actions = append(actions, e.Action)
	}
	if got, want := strings.Join(actions, ","), "cluster.create,token.issue,cluster.disable"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}

	// In table form, with an action filter.
	p = start(t, db, "audit", "--follow", "--action", "cluster.")
	p.waitOutput(t, "cluster.disable")
	ok(t, db, "token", "issue", "watched")
	ok(t, db, "cluster", "enable", "watched")
	p.waitOutput(t, "cluster.enable")
	res = interrupt(t, p)
	if strings.Contains(res.stdout, "token.issue") {
		t.Errorf("got token.issue with --action cluster.\n%s", res.stdout)
	}
}
