package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// publicOperator is one instance of the public operator as its source
// behaves (PROTOCOL.md, "Compatibility first"): it polls without limit,
// works through what a poll returned one job at a time, acks each job only
// when it reaches it, right before applying it, counts a 409 on ack (and
// on result) as success, and polls again once its batch is done. Several
// instances of it share one credential.
type publicOperator struct {
	name     string
	token    string
	batch    []string  // jobs received and not reached yet
	applying string    // the job being applied; its result is posted at busyTo
	busyTo   time.Time // when its next step is due, on the test's clock
}

// operatorRun drives instances of the public operator against a real server
// on the env's fake clock: each step runs on the instance whose next step is
// due first, at that time (ties: the first instance), so the interleaving is
// the same on every run and no test sleeps.
type operatorRun struct {
	t         *testing.T
	e         *env
	clusterID string
	apply     time.Duration // how long applying one job takes
	idle      time.Duration // how long an instance waits after an empty poll
	applied   map[string]int
}

// step runs op's next step at the current time.
func (r *operatorRun) step(op *publicOperator) {
	r.t.Helper()
	send := func(method, path, body string) *response {
		r.t.Helper()
		opts := []reqOption{withBearer(op.token)}
		if body != "" {
			opts = append(opts, withBody(body))
		}
		return r.e.do(method, path, opts...)
	}
	now := r.e.clock.Now()
	switch {
	case op.applying != "":
		// Applied: post the result. A 409 (another instance's result came
		// first) is success to it.
		res := send(http.MethodPost, "/api/agent/jobs/"+op.applying+"/result", `{"outcome":"succeeded","timestamp":"`+now.Format(time.RFC3339)+`"}`)
		if res.status != http.StatusNoContent && res.status != http.StatusConflict {
			r.t.Fatalf("%s: result of %s = %d %s", op.name, op.applying, res.status, res.body)
		}
		op.applying = ""
	case len(op.batch) == 0:
		// The operator's own polls carry wait=30, which a server holds for
		// 30 s of real time when nothing is visible; what a poll hands out
		// does not depend on wait, so this one does not wait, and polls
		// again after idle on the test's clock.
		ids := send(http.MethodGet, fmt.Sprintf("/api/agent/jobs?cluster=%s&wait=0", r.clusterID), "").jobIDs(r.t)
		if len(ids) == 0 {
			op.busyTo = now.Add(r.idle)
		}
		op.batch = ids
	default:
		id := op.batch[0]
		op.batch = op.batch[1:]
		switch res := send(http.MethodPost, "/api/agent/jobs/"+id+"/ack", ""); res.status {
		case http.StatusNoContent, http.StatusConflict: // 409 is success to it: it applies the job
			r.applied[id]++
			op.applying, op.busyTo = id, now.Add(r.apply)
		case http.StatusNotFound: // a no-op to it
		default:
			r.t.Fatalf("%s: ack of %s = %d %s", op.name, id, res.status, res.body)
		}
	}
}

// TestPublicOperatorReplicasApplyEachJobOnce: two instances of the public
// operator share a credential and a queue of ten jobs that take 4 s each
// to apply, against tether's default configuration. Handed all ten by one
// poll, the first instance would still hold the last ones unacked when the
// visibility window (30 s) ran out; the second instance would receive and
// ack them, and the first would then take its 409 for success and apply
// them again (issue 28: 2 of 10 applied twice). Each job must be applied
// exactly once.
func TestPublicOperatorReplicasApplyEachJobOnce(t *testing.T) {
	e := newEnv(t)
	_, regToken := e.cluster("cluster-prod-1")
	// Registered as the operator registers: the token in the header and the
	// body, no capabilities.
	r := e.do(http.MethodPost, "/api/agent/register", withBearer(regToken), withBody(`{"clusterId":"cluster-prod-1","registrationToken":"`+regToken+`"}`))
	r.want(t, http.StatusOK)
	var cred credentialAnswer
	r.decode(t, &cred)

	const jobs = 10
	var want []string
	for range jobs {
		want = append(want, e.submit(cred.ClusterID))
	}
	run := &operatorRun{t: t, e: e, clusterID: cred.ClusterID, apply: 4 * time.Second, idle: time.Second, applied: map[string]int{}}
	start := e.clock.Now()
	ops := []*publicOperator{{name: "instance-a", token: cred.Token, busyTo: start}, {name: "instance-b", token: cred.Token, busyTo: start}}
	busy := func() bool {
		for _, op := range ops {
			if op.applying != "" || len(op.batch) > 0 {
				return true
			}
		}
		return false
	}
	for len(run.applied) < jobs || busy() {
		next := ops[0]
		for _, op := range ops[1:] {
			if op.busyTo.Before(next.busyTo) {
				next = op
			}
		}
		if next.busyTo.Sub(start) > 10*time.Minute {
			t.Fatalf("after 10 minutes %d of %d jobs were applied", len(run.applied), jobs)
		}
		e.clock.Set(next.busyTo)
		run.step(next)
	}
	var twice []string
	for _, id := range want {
		if n := run.applied[id]; n != 1 {
			twice = append(twice, fmt.Sprintf("%s %d times", id, n))
		}
	}
	if len(twice) > 0 {
		t.Fatalf("%d of %d jobs were not applied exactly once: %s", len(twice), jobs, strings.Join(twice, ", "))
	}
	// Both instances did work: the queue is shared, not handed to one.
	if took := e.clock.Now().Sub(start); took > jobs*run.apply {
		t.Errorf("ten 4 s jobs took %s with two instances, longer than one instance alone would", took)
	}
}
