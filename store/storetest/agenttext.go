package storetest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tetherhq/tether/registry"
)

// testAgentText: what agents send is stored faithfully or refused with a
// message naming the field, never a store failure, on every store: a NUL
// character (which PostgreSQL's text cannot hold) is refused, invalid UTF-8
// is replaced, and the job can still be finished afterwards.
func testAgentText(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod", registry.CapabilityLease)
	j := e.submit(a.Cluster.ID, nil)
	claim, err := e.reg.AckJob(e.ctx, a, j.ID)
	wantNoErr(t, err)

	err = e.reg.ReportStatus(e.ctx, a, j.ID, claim.ClaimID, registry.StatusReport{Phase: "Applying", Message: "half\x00way"})
	wantCode(t, err, registry.CodeInvalid)
	if !strings.Contains(err.Error(), "message") {
		t.Fatalf("%v does not name the field", err)
	}
	err = e.reg.ReportStatus(e.ctx, a, j.ID, claim.ClaimID, registry.StatusReport{Conditions: []registry.Condition{{Type: "Ready", Status: "False", Reason: "x\x00"}}})
	wantCode(t, err, registry.CodeInvalid)
	if !strings.Contains(err.Error(), "conditions[0].reason") {
		t.Fatalf("%v does not name the field", err)
	}
	_, err = e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "boom\x00"})
	wantCode(t, err, registry.CodeInvalid)
	_, err = e.reg.AckJob(e.ctx, a, "j-\x00")
	wantCode(t, err, registry.CodeJobNotFound)
	_, err = e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: "Audit", Message: "a\x00b"}})
	wantCode(t, err, registry.CodeInvalid)
	if !strings.Contains(err.Error(), "events[0].message") {
		t.Fatalf("%v does not name the field", err)
	}

	// Invalid UTF-8 is kept readable, and the job finishes as normal.
	wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "bad \xff byte"})))
	got := e.job(j.ID)
	if got.State != registry.JobFailed || !utf8.ValidString(got.Error) || !strings.Contains(got.Error, "bad \uFFFD byte") {
		t.Fatalf("job %s error %q", got.State, got.Error)
	}
	n, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: "Audit", Message: "caf\xe9"}})
	wantNoErr(t, err)
	events, _ := e.reg.ListEvents(e.ctx, registry.EventListParams{ClusterID: a.Cluster.ID})
	if n != 1 || len(events) != 1 || events[0].Message != "caf\uFFFD" {
		t.Fatalf("stored events %+v", events)
	}
}
