package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestCrossClusterMatrix: a credential of cluster A gets 403 on every
// endpoint that names cluster B or a job of B, nothing of B leaks in any
// answer, and B's jobs are untouched.
func TestCrossClusterMatrix(t *testing.T) {
	e := newEnv(t)
	alpha := e.newAgent("alpha", "lease")
	_, bTok := e.cluster("bravo-private-name")
	bravo := e.register(bTok, "lease")
	queued := e.submit(bravo.clusterID)
	claimed := e.submit(bravo.clusterID)
	r := bravo.ack(claimed)
	r.wantNoContent(t)
	bravoClaim := r.header.Get("X-Claim-Id")
	e.submit(alpha.clusterID)

	type attempt struct {
		name string
		do   func() *response
	}
	attempts := []attempt{
		{"poll B", func() *response { return alpha.poll(0) }},
		{"poll B held", func() *response {
			return alpha.do(http.MethodGet, "/api/agent/jobs?cluster="+bravo.clusterID+"&wait=30")
		}},
		{"ack queued", func() *response { return alpha.ack(queued) }},
		{"ack claimed", func() *response { return alpha.ack(claimed) }},
		{"status queued", func() *response { return alpha.status(queued) }},
		{"status claimed", func() *response { return alpha.status(claimed) }},
		{"status claimed with B's claim", func() *response { return alpha.status(claimed, withHeader("X-Claim-Id", bravoClaim)) }},
		{"heartbeat claimed", func() *response { return alpha.heartbeat(claimed) }},
		{"result queued noop", func() *response { return alpha.result(queued, `{"outcome":"noop","error":"expired"}`) }},
		{"result claimed", func() *response { return alpha.result(claimed, `{"outcome":"succeeded"}`) }},
		{"events clusterId B", func() *response {
			return alpha.events(`{"clusterId":"` + bravo.clusterID + `","events":[{"kind":"Audit","message":"x"}]}`)
		}},
		{"heartbeat event for B", func() *response { return alpha.events(heartbeatBody(bravo.clusterID)) }},
	}
	// The first attempt polls B's cluster, not A's.
	attempts[0].do = func() *response {
		return alpha.do(http.MethodGet, "/api/agent/jobs?cluster="+bravo.clusterID+"&wait=0")
	}
	secrets := []string{"bravo-private-name", bravoClaim, "payload-of-" + bravo.clusterID, bTok, bravo.token}
	for _, a := range attempts {
		r := a.do()
		ans := r.wantError(t, http.StatusForbidden, "forbidden")
		for _, s := range secrets {
			if strings.Contains(string(r.body), s) || strings.Contains(fmt.Sprint(r.header), s) {
				t.Errorf("%s: the answer leaks %q: %s", a.name, s, r.body)
			}
		}
		// The cluster's id must not leak either, where the request did not
		// name it itself.
		if !strings.Contains(a.name, "B") && strings.Contains(ans.Message, bravo.clusterID) {
			t.Errorf("%s: message names cluster B: %q", a.name, ans.Message)
		}
	}
	// A's own poll never shows B's jobs.
	for _, id := range alpha.poll(0).jobIDs(t) {
		if id == queued || id == claimed {
			t.Errorf("A's poll shows B's job %s", id)
		}
	}
	// B's jobs are as B left them.
	q, _ := e.reg.GetJob(context.Background(), queued)
	c, _ := e.reg.GetJob(context.Background(), claimed)
	if q.State != registry.JobQueued || c.State != registry.JobInProgress || c.ClaimID != bravoClaim || c.Phase != "" {
		t.Errorf("B's jobs changed: queued=%s claimed=%s claim=%s phase=%q", q.State, c.State, c.ClaimID, c.Phase)
	}
	cl, _ := e.reg.GetCluster(context.Background(), bravo.clusterID)
	if !cl.Status.LastHeartbeatAt.IsZero() {
		t.Error("A's heartbeat for B was recorded on B")
	}
	// And B carries on.
	bravo.result(claimed, `{"outcome":"succeeded"}`, withHeader("X-Claim-Id", bravoClaim)).wantNoContent(t)
}
